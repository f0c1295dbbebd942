"""What the wallet's guard says to a session, and when it is asked.

Before a run, :func:`choose_entry` walks the chain: a spent budget stops new work, a paused
account is skipped, an account the forecast says is about to run out is *avoided* (skipped
while another entry can take the work; used, with a notice, when none can), an open circuit
breaker is skipped (a real account's notice says how to clear it by hand: ``relay-cli
accounts resume``; a simulated entry's breaker binds only the session that opened it).

During a run, :class:`GuardWatch` asks after every turn, at every official limit reading
(``quota_update``) and every ``interval`` seconds while the agent works — one-turn CLI runs
(``claude -p``, ``codex exec``) have their only turn boundary at the very end, so the watch
must not wait for it. A "handoff" verdict becomes a pause at the next safe point (the end of
a tool call or a turn), before the account hits its wall.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import ClassVar

from relay.core.errors import RelayError
from relay.core.events import AgentEvent, Notice
from relay.core.models import simulated_entry
from relay.sessions.breaker import CircuitBreakers, resume_command
from relay.sessions.run_types import TurnGuard
from relay.wallet.model import GuardVerdict

log = logging.getLogger(__name__)

#: how often a running agent's account is looked at between events
WATCH_INTERVAL_S = 60.0
#: why no entry may run when none is open (a spent budget says its own why)
NONE_OPEN = "every account in the chain is out until its reset or paused"

Emit = Callable[[AgentEvent], Awaitable[None]]


async def choose_entry(chain: list[str], start: int, session_id: str, guard: TurnGuard,
                       breakers: CircuitBreakers, now: datetime,
                       emit: Emit) -> tuple[int | None, str | None]:
    """The chain entry to run from ``start``; (None, why) when none may run."""
    avoided: int | None = None
    out: list[str] = []  # real entries skipped for an open breaker, and how to clear it
    for index in range(start, len(chain)):
        verdict = await guard.before_run(session_id, chain[index])
        if verdict is not None and verdict.action == "stop":
            return None, verdict.reason
        if verdict is not None and verdict.action == "handoff":
            await emit(Notice(category="fallback", message=(
                f"Skipping {chain[index]}: {verdict.reason}.")))
            continue
        breaker = await breakers.get(chain[index], now=now, session_id=session_id)
        if breaker is not None and breaker.state != "half_open":
            until = f" until {breaker.until:%Y-%m-%d %H:%M %Z}" if breaker.until else ""
            clear = ""
            if not simulated_entry(chain[index]):
                clear = f" Once it is back, `{resume_command(chain[index])}` clears it."
                out.append(f"{chain[index]}{until}: `{resume_command(chain[index])}` clears it")
            await emit(Notice(category="fallback", message=(
                f"Skipping {chain[index]}: it is out{until} "
                f"({breaker.reason or breaker.kind}).{clear}")))
            continue
        if verdict is None or verdict.action != "avoid":
            return index, None
        avoided = index if avoided is None else avoided
        await emit(Notice(category="fallback", message=(
            f"Skipping {chain[index]}: {verdict.reason}.")))
    if avoided is not None:
        await emit(Notice(category="warning", message=(
            f"No other entry can take the work, so it runs on {chain[avoided]} anyway.")))
        return avoided, None
    return None, NONE_OPEN + (f" ({'; '.join(out)} once it is back)" if out else "")


class GuardWatch:
    """Asks the guard about one agent run while it goes on (see the module docstring)."""

    #: the only kinds of event :meth:`seen` acts on
    KINDS: ClassVar[frozenset[str]] = frozenset({"turn_completed", "quota_update"})

    def __init__(self, guard: TurnGuard, session_id: str, run_id: str, entry: str,
                 act: Callable[[GuardVerdict], Awaitable[None]],
                 interval: float = WATCH_INTERVAL_S) -> None:
        self.guard = guard
        self.session_id, self.run_id, self.entry = session_id, run_id, entry
        self.act = act
        self.interval = interval
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.interval > 0:
            self._task = asyncio.create_task(self._poll(), name=f"relay-guard-{self.run_id}")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def seen(self, event: AgentEvent) -> None:
        """A stored event of the run: a turn end or an official reading is a moment to ask."""
        # a rejection is the limit itself: the runner's limit path (wait or hand off, the
        # circuit breaker) answers it, not an early handoff
        if event.kind == "turn_completed" or (
                event.kind == "quota_update" and event.status != "rejected"):
            await self.ask()

    async def ask(self) -> None:
        async with self._lock:  # one question at a time; a verdict is acted on once
            try:
                verdict = await self.guard.after_turn(self.session_id, self.run_id, self.entry)
            except RelayError as exc:  # the wallet failing must not fail the agent's work
                log.warning("the wallet could not judge %s: %s", self.entry, exc)
                return
            if verdict is not None:
                await self.act(verdict)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.interval)  # a clock, not synchronisation
            await self.ask()
