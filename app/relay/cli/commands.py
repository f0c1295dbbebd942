"""The async bodies of relay-cli's commands."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console

from relay.cli.prompt import Passphrase
from relay.cli.questions import Questions
from relay.cli.render import StreamPrinter, session_footer
from relay.cli.sessions_cmd import print_sessions
from relay.core.bus import Subscription
from relay.core.config import Config
from relay.core.demo_repo import make_demo_repo
from relay.core.events import NeedsInput
from relay.core.models import SessionRow, SessionSpec, chain_of, entry_runtime
from relay.core.states import FINAL_STATES
from relay.core.termsafe import json_text
from relay.engine.engine import Engine
from relay.sessions.vault_need import recover_needs, vault_need

Starter = Callable[[Engine], Awaitable[str]]
#: why the session about to start will need the vault (None: it will not)
Needs = Callable[[Engine], Awaitable[str | None]]


async def run_session(config: Config, start: Starter, console: Console, as_json: bool,
                      needs: Needs | None = None) -> SessionRow:
    """Start (or continue) a session and render its live stream until it ends.

    A vault passphrase the session will need (``needs``) is asked for before it starts,
    never in the middle of the stream (:mod:`relay.cli.prompt`). Ctrl-C stops the agent
    and records the session as cancelled before exiting; Ctrl-D at the agent's question
    stops it too, and the command ends with :class:`~relay.cli.NoAnswerError`.
    """
    passphrase = Passphrase()
    engine = await Engine.open(config, passphrase_provider=passphrase)
    try:
        if needs is not None and await asyncio.to_thread(passphrase.needed, config):
            why = await needs(engine)
            if why:
                passphrase.unlock(config, why)  # before anything runs; Ctrl-C / Ctrl-D are clean
        printer = StreamPrinter(console, as_json)
        sub = engine.bus.subscribe()
        session_id = await start(engine)
        if not as_json:
            row = await engine.get_session(session_id)
            console.print(f"[bold]Relay[/] session {session_id} · {row.runtime}"
                          f" · permissions {row.permission.value}")
            await _print_instructions(console, row)
        questions = Questions(engine, console, as_json)
        try:
            await _follow_until_done(engine, sub, session_id, printer, questions.asked)
        except asyncio.CancelledError:
            await asyncio.shield(_cancel(engine, session_id))
            raise
        finally:
            sub.close()
            await questions.aclose()
        row = await engine.wait_session(session_id)
        if not as_json:
            session_footer(console, row)
        if questions.no_answer is not None:
            raise questions.no_answer
        return row
    finally:
        await engine.close()


def spec_needs(spec: SessionSpec) -> Needs:
    """What a new session over ``spec`` needs of the vault."""
    chain = chain_of(spec)

    async def needs(engine: Engine) -> str | None:
        return await vault_need(chain, engine.accounts, can_hand_off=len(chain) > 1)
    return needs


def stored_needs(session_id: str, *, resumed: bool) -> Needs:
    """What continuing a stored session needs of the vault: ``resumed`` (``run --resume``)
    runs its last runtime alone; otherwise (a rewind's new session) its whole chain."""
    async def needs(engine: Engine) -> str | None:
        row = await engine.get_session(session_id)
        chain = chain_of(await engine.session_spec(row.id))
        if resumed:
            runs = await engine.runs(row.id)
            return await vault_need([runs[-1].runtime] if runs else chain[:1],
                                    engine.accounts, can_hand_off=False)
        return await vault_need(chain, engine.accounts, can_hand_off=len(chain) > 1)
    return needs


async def _print_instructions(console: Console, row: SessionRow) -> None:
    """The one line naming the repository's instruction files and how the first runtime
    gets them (nothing when there are none)."""
    from relay.sessions.instructions_delivery import cli_line

    line = await asyncio.to_thread(cli_line, Path(row.repo), entry_runtime(row.runtime))
    if line:
        console.print(line, markup=False, highlight=False)


async def recover(config: Config, console: Console, as_json: bool) -> int:
    """Carry on the handoffs a stopped Relay left between two steps; follow them to the end.

    A vault passphrase they need is asked for before any of them is taken up."""
    passphrase = Passphrase()
    if await asyncio.to_thread(passphrase.needed, config):
        why = await recover_needs(config.db_path)
        if why:
            passphrase.unlock(config, why)
    engine = await Engine.open(config, passphrase_provider=passphrase, recover=True)
    try:
        sub = engine.bus.subscribe()  # may miss the first records: `show` replays them
        if engine.recovered_runs:
            sub.close()
            return await _recover_runs(engine, console, as_json)
        if not engine.recovered:
            sub.close()
            if not as_json:
                console.print("Nothing to recover: no handoff or pipeline run was left "
                              "unfinished.")
            return 0
        printer = StreamPrinter(console, as_json)
        pending = set(engine.recovered)
        if not as_json:
            console.print(f"[bold]Relay[/] carrying on {len(pending)} handoff(s): "
                          f"{', '.join(sorted(pending))}")
        try:
            async for record in sub:
                if record.session_id in pending:
                    printer.print(record)
                    ev = record.event
                    if ev.kind == "state_changed" and ev.state in FINAL_STATES:
                        pending.discard(record.session_id)
                        if not pending:
                            break
        finally:
            sub.close()
        rows = [await engine.wait_session(sid) for sid in engine.recovered]
        if not as_json:
            for row in rows:
                session_footer(console, row)
        return 0 if all(r.state == "completed" for r in rows) else 1
    finally:
        await engine.close()


async def _recover_runs(engine: Engine, console: Console, as_json: bool) -> int:
    """Follow the pipeline runs (and any handoffs) a recovering engine took up."""
    if not as_json:
        console.print(f"[bold]Relay[/] taking up {len(engine.recovered_runs)} pipeline run(s): "
                      f"{', '.join(engine.recovered_runs)}")
    runs = [await engine.pipelines.wait(run_id) for run_id in engine.recovered_runs]
    rows = [await engine.wait_session(sid) for sid in engine.recovered]
    if not as_json:
        for run in runs:
            console.print(f"Run {run.id} {run.state}" + (f": {run.reason}" if run.reason else ""))
    ok = all(r.state == "succeeded" for r in runs) and all(r.state == "completed" for r in rows)
    return 0 if ok else 1


async def _cancel(engine: Engine, session_id: str) -> None:
    await engine.cancel_session(session_id)
    await engine.wait_session(session_id)


def new_session(spec: SessionSpec) -> Starter:
    async def start(engine: Engine) -> str:
        return await engine.start_session(spec)
    return start


def continued_session(session_id: str, prompt: str) -> Starter:
    async def start(engine: Engine) -> str:
        return await engine.continue_session(session_id, prompt)
    return start


async def _follow_until_done(engine: Engine, sub: Subscription, session_id: str,
                             printer: StreamPrinter,
                             asked: Callable[[str, NeedsInput], None] | None) -> None:
    """:func:`follow` until the session ends — or until its runner stops without an end
    being stored (a full disk failed the writer): the stream never ends then, and waiting on
    it would never exit. What the runner published before it stopped is printed first."""
    following = asyncio.ensure_future(follow(sub, session_id, printer, asked))
    stopped = asyncio.ensure_future(engine.runner_stopped(session_id))
    try:
        await asyncio.wait({following, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not following.done():  # its last records are queued already: let it print them
            await asyncio.wait({following}, timeout=1.0)
    finally:
        for task in (following, stopped):
            task.cancel()
        await asyncio.gather(following, stopped, return_exceptions=True)
    if following.done() and not following.cancelled() and following.exception() is not None:
        raise following.exception()  # type: ignore[misc]


async def follow(sub: Subscription, session_id: str, printer: StreamPrinter,
                 asked: Callable[[str, NeedsInput], None] | None = None) -> None:
    async for record in sub:
        if record.session_id != session_id:
            continue
        printer.print(record)
        ev = record.event
        if asked is not None and isinstance(ev, NeedsInput):
            asked(session_id, ev)
        if ev.kind == "state_changed" and ev.state in FINAL_STATES:
            return


async def show_session(config: Config, session_id: str, console: Console, as_json: bool,
                       follow: bool) -> SessionRow:
    """Replay a session from the store; with ``follow`` keep tailing until it ends."""
    engine = await Engine.open(config)
    try:
        row = await engine.get_session(session_id)
        printer = StreamPrinter(console, as_json)
        if follow:
            async for record in engine.follow(row.id):
                printer.print(record)
        else:
            for record in await engine.session_events(row.id):
                printer.print(record)
        row = await engine.get_session(row.id)
        if not as_json:
            session_footer(console, row)
        return row
    finally:
        await engine.close()


async def list_sessions(config: Config, console: Console, limit: int,
                        as_json: bool = False) -> None:
    """The sessions through the engine (``relay-cli sessions`` reads relay.db itself when it
    can: :mod:`relay.cli.sessions_cmd`)."""
    engine = await Engine.open(config)
    try:
        rows = await engine.list_sessions(limit)
    finally:
        await engine.close()
    if as_json:  # one line per session, newest first; nothing at all when there are none
        for row in rows:
            print(json_text(row.model_dump(mode="json"), separators=(",", ":")), flush=True)
        return
    print_sessions(console, rows)


async def demo(config: Config, console: Console, as_json: bool, limit_after: int | None,
               quota: list[float] | None = None, ask: bool = False) -> SessionRow:
    """A complete demo session in a temporary repository.

    A simulation: its handoffs are signed with a throwaway demo key (the vault is never
    asked), and its simulated accounts, limits and breakers belong to this run alone, so it
    works however often it is run in one data folder."""
    base = Path(tempfile.mkdtemp(prefix="relay-demo-"))
    repo = make_demo_repo(base / "demo-project")
    # With a simulated limit (or a window filling up) the demo hands the task to a second
    # (simulated) account, so a newcomer sees the whole loop: limit → snapshot → signed
    # contract → resume — or the wallet's pre-emptive handoff before the limit.
    chain = ["demo:primary", "demo:backup"] if limit_after is not None or quota else []
    spec = SessionSpec(repo=repo, task="Add a short notes file describing the project",
                       runtime="demo", chain=chain, demo_limit_after=limit_after,
                       demo_quota=quota or [], demo_ask=ask,
                       approvals="ask" if ask else "deny")
    return await run_session(config, new_session(spec), console, as_json)


