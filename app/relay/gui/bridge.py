"""The one place core events become Qt signals, and the tracked-task helper.

:class:`EngineBridge` listens to the engine's bus (callbacks run on the qasync
loop, i.e. the GUI thread) and re-emits committed records as Qt signals — the window hosts
its data folder, so every session runs in it — or, in a window that is a client of a host
elsewhere, listens to that host's live stream
(:class:`~relay.gui.sessions_source.ClientSource`). The panels read through
:attr:`EngineBridge.source`, the engine or the client alike.
:class:`TaskRunner` starts the coroutines that user intents need, keeps a
reference to every task until it ends and routes failures to one signal — no
bare ``create_task`` anywhere in the GUI. A failure that is not a RelayError is a crash:
it also goes to the window's :class:`~relay.core.crash.CrashHandler` (logged, shown once).
Work that may need the vault (a session, a "hand off now") passes
:attr:`EngineBridge.vault_gate` first, so a passphrase it needs is asked for before the
work starts (the shell sets it to the window's prompter).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal

from relay.core.config import Config
from relay.core.crash import CrashHandler, describe
from relay.core.errors import HostGoneError, RelayError
from relay.core.events import EventRecord
from relay.core.models import SessionSpec, chain_of
from relay.engine.engine import Engine
from relay.gui.sessions_source import ClientSource, SessionsSource

log = logging.getLogger(__name__)

T = TypeVar("T")

#: record kinds after which the sessions list (state, usage) is stale.
_SESSION_KINDS = frozenset({"state_changed", "turn_completed", "session_started"})

#: how long a client window waits before following its host again after losing it
REFOLLOW_S = 1.0

#: (the chain entries the work may use, whether it can hand off) → returns once the vault's
#: passphrase is known or not needed; raises a RelayError when the work must not start
VaultGate = Callable[[list[str], bool], Awaitable[None]]


class TaskRunner(QObject):
    """Runs coroutines for slots; keeps their tasks alive; reports their errors.

    ``failed(context, message, hint)`` is emitted for every task that raised:
    ``context`` names the panel concerned (``"stream"``, ``"sessions"`` …) so
    it can show the error in place, and the status bar shows them all. Any other
    exception is also handed to :attr:`crashes` (when set), which logs it and shows it once.
    """

    failed = Signal(str, str, str)
    #: the host of the data folder stopped and no process hosts it now (a task of a client
    #: window found out): the window's cue to host it, not an error to show
    hostGone = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._services: set[asyncio.Task[Any]] = set()
        #: where crashes (errors that are not RelayErrors) go; the shell sets it
        self.crashes: CrashHandler | None = None

    def start(self, coro: Coroutine[Any, Any, T], *, context: str,
              on_done: Callable[[T], None] | None = None,
              service: bool = False) -> asyncio.Task[T]:
        """Run ``coro`` on the running loop; call ``on_done(result)`` when it succeeds.

        A ``service`` runs for the window's lifetime (e.g. following the host's
        stream); it is tracked and cancelled like the rest but not counted
        in :attr:`pending`.
        """
        task = asyncio.get_running_loop().create_task(coro, name=f"relay-gui-{context}")
        self._tasks.add(task)
        if service:
            self._services.add(task)
        task.add_done_callback(lambda t: self._finished(t, context, on_done))
        return task

    def _finished(self, task: asyncio.Task[T], context: str,
                  on_done: Callable[[T], None] | None) -> None:
        self._tasks.discard(task)
        self._services.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            if on_done is not None:
                try:
                    on_done(task.result())
                except Exception as cb_exc:  # noqa: BLE001 — a broken view is shown, not silent
                    self.report(context, cb_exc)
            return
        self.report(context, exc)

    def report(self, context: str, exc: BaseException) -> None:
        """Route an exception to :attr:`failed` (RelayErrors with their hint; the host's
        stop to :attr:`hostGone`)."""
        if isinstance(exc, HostGoneError):
            log.info("%s: %s", context, exc.message)
            self.hostGone.emit()
            return
        if isinstance(exc, RelayError):
            self.failed.emit(context, exc.message, exc.hint or "")
            return
        if self.crashes is None:
            log.error("internal error in %s", context, exc_info=exc)
            self.failed.emit(context, f"Internal error: {describe(exc)}",
                             "This is a bug in Relay; the details are in the log.")
            return
        crash = self.crashes.handle(exc, f"a window task ({context})")
        self.failed.emit(context, f"Internal error: {crash.what}",
                         f"This is a bug in Relay; the details are in {self.crashes.log_file}.")

    @property
    def pending(self) -> int:
        """How many tasks (services aside) are still running."""
        return len(self._tasks - self._services)

    async def aclose(self) -> None:
        """Cancel every task still running and wait for them."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()


class EngineBridge(QObject):
    """Engine bus → Qt signals; user intents → tracked engine calls.

    Signals:
        records(list[EventRecord]): live records, in commit order, one batch per commit.
        sessionsChanged(): a session was created or its state or usage changed.
        sessionStarted(str): a session started from this window (its id).
        linkChanged(bool): a client window's stream of its host was (re)connected (True)
            or broke (False; it is being retried).
    """

    records = Signal(list)
    sessionsChanged = Signal()
    sessionStarted = Signal(str)
    linkChanged = Signal(bool)

    def __init__(self, source: Engine | ClientSource, parent: QObject | None = None,
                 config: Config | None = None) -> None:
        super().__init__(parent)
        self.tasks = TaskRunner(self)
        self.config: Config | None = config
        self._unsubscribe: Callable[[], None] | None = None
        self._follower: asyncio.Task[None] | None = None
        self._batch: list[EventRecord] = []
        self._bind(source)
        #: asked before a session or a handoff starts (None: nothing to ask)
        self.vault_gate: VaultGate | None = None

    def _bind(self, source: Engine | ClientSource) -> None:
        #: what the session panels read and act on: the engine here, or the host's API
        self.source: SessionsSource = source
        #: the engine this window hosts (``None``: a client of a host elsewhere)
        self.engine: Engine | None = source if isinstance(source, Engine) else None
        #: the host's API when this window is its client
        self.client: ClientSource | None = source if isinstance(source, ClientSource) else None
        #: the data folder's configuration (the engine's, or this client's own)
        self.config = self.engine.config if self.engine else self.config
        if self.engine is not None:
            self._unsubscribe = self.engine.bus.add_listener(self._on_records)

    def rebind(self, source: Engine | ClientSource) -> None:
        """Go on over ``source``: the host this client window followed stopped, and the
        window hosts now (or follows the host another process started first)."""
        self._stop_listening()
        self._bind(source)
        self.follow_host()

    def _stop_listening(self) -> None:
        if self._follower is not None:
            self._follower.cancel()
            self._follower = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def follow_host(self) -> None:
        """In a client window, start showing every session: the host's live stream. (A
        window that hosts needs nothing more: every session of its data folder runs in it,
        so its records come through the bus.)"""
        if self._follower is None and self.client is not None:
            self._follower = self.tasks.start(self._follow_host(self.client),
                                              context="sessions", service=True)

    async def _follow_host(self, client: ClientSource) -> None:
        """The host's events, one batch per burst (what one read of the stream brought).
        A host that does not answer is retried from the last event seen (``--connect``: it
        may come back); one that stopped, with nobody hosting its data folder, is
        :attr:`TaskRunner.hostGone`."""
        loop = asyncio.get_running_loop()
        after: int | None = None
        while True:
            try:
                if after is None:
                    after = await client.client.last_event_id()
                async with contextlib.aclosing(client.live(after, self.linkChanged.emit)
                                               ) as records:
                    async for record in records:
                        after = record.id
                        if not self._batch:
                            loop.call_soon(self._flush_batch)
                        self._batch.append(record)
            except HostGoneError as exc:
                self.tasks.report("sessions", exc)
                return
            except RelayError as exc:  # the host does not answer: say so, try again
                log.info("the host's stream: %s", exc.message)
                self.linkChanged.emit(False)
                await asyncio.sleep(REFOLLOW_S)

    def _flush_batch(self) -> None:
        batch, self._batch = self._batch, []
        if batch:
            self._on_records(batch)

    def _on_records(self, batch: Sequence[EventRecord]) -> None:
        self.records.emit(list(batch))
        if any(r.event.kind in _SESSION_KINDS for r in batch):
            self.sessionsChanged.emit()

    # -- intents ----------------------------------------------------------------------

    def start_session(self, spec: SessionSpec, context: str = "sessions") -> asyncio.Task[str]:
        """Start a session (once :attr:`vault_gate` lets it); ``sessionStarted(id)`` follows
        once it is stored."""
        return self.tasks.start(self._start(spec), context=context,
                                on_done=self.sessionStarted.emit)

    async def _start(self, spec: SessionSpec) -> str:
        if self.vault_gate is not None:
            chain = chain_of(spec)
            await self.vault_gate(chain, len(chain) > 1)
        return await self.source.start_session(spec)

    def cancel_session(self, session_id: str, context: str = "stream") -> asyncio.Task[None]:
        return self.tasks.start(self.source.cancel_session(session_id), context=context)

    def request_handoff(self, session_id: str, to_entry: str | None = None,
                        context: str = "handoff",
                        on_done: Callable[[str], None] | None = None) -> asyncio.Task[str]:
        """Hand a running or waiting session off now; ``on_done(answer)`` says what follows.

        A refusal (:class:`~relay.core.errors.HandoffRefusedError`) reaches
        ``tasks.failed`` with ``context`` like every other error.
        """
        return self.tasks.start(self._hand_off(session_id, to_entry),
                                context=context, on_done=on_done)

    async def _hand_off(self, session_id: str, to_entry: str | None) -> str:
        if self.vault_gate is not None and self.source.is_running_here(session_id):
            spec = await self.source.session_spec(session_id)  # this process signs
            await self.vault_gate([*chain_of(spec), *([to_entry] if to_entry else [])], True)
        return await self.source.request_handoff(session_id, to_entry)

    def is_running_here(self, session_id: str) -> bool:
        return self.source.is_running_here(session_id)

    async def aclose(self) -> None:
        """Stop listening and cancel the tasks this bridge started."""
        self._stop_listening()
        await self.tasks.aclose()
