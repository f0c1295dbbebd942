"""The async bodies of relay-cli's commands.

The session commands are clients of the data folder's host (issue 19): ``run`` and ``demo``
go through :func:`relay.api.attach.attach` — a client of the live host (or ``--connect``),
else this process hosts for its own lifetime — and submit the session, then follow its
stream from a cursor. ``show``, ``stop``, ``sessions --json``, ``handoff`` and ``answer``
(:func:`session_api`) use the host's client when a host runs; with none they open an
engine of their own as before (it reads the store; stop, hand-off-now and answers reach
whichever process runs the session through the store).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from relay.cli.hints import cli
from relay.cli.render import StreamPrinter, session_footer
from relay.core.termsafe import json_text

if TYPE_CHECKING:
    from rich.console import Console

    from relay.api.client import RelayClient
    from relay.core.config import Config
    from relay.core.errors import VaultLockedError
    from relay.core.models import SessionRow, SessionSpec
    from relay.engine.engine import Engine

# What only some commands need is imported where they need it (the vault's pieces, pygit2,
# the question prompt): `sessions --json` through a host loads none of it
# (benchmarks/cli_client, tests/cli/test_cli_startup.py).

#: why the session about to start will need the vault (None: it will not)
Needs = Callable[["Engine"], Awaitable[str | None]]


def stored_needs(session_id: str, *, resumed: bool) -> Needs:
    """What continuing a stored session needs of the vault (:func:`relay.api.vault.
    stored_need`: the rule the host applies too)."""
    async def needs(engine: Engine) -> str | None:
        from relay.api.vault import stored_need

        return await stored_need(engine, session_id, resumed=resumed)
    return needs


async def _print_instructions(console: Console, row: SessionRow) -> None:
    """The one line naming the repository's instruction files and how the first runtime
    gets them (nothing when there are none)."""
    from relay.core.models import entry_runtime
    from relay.sessions.instructions_delivery import cli_line

    line = await asyncio.to_thread(cli_line, Path(row.repo), entry_runtime(row.runtime))
    if line:
        console.print(line, markup=False, highlight=False)


async def recover(config: Config, console: Console, as_json: bool) -> int:
    """Carry on the handoffs a stopped Relay left between two steps; follow them to the end.

    A vault passphrase they need is asked for before any of them is taken up."""
    from relay.cli.prompt import Passphrase
    from relay.core.states import FINAL_STATES
    from relay.sessions.vault_need import recover_needs

    passphrase = Passphrase()
    if await asyncio.to_thread(passphrase.needed, config):
        why = await recover_needs(config.db_path)
        if why:
            passphrase.unlock(config, why)
    from relay.engine.engine import Engine  # imported when one is opened
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


@contextlib.asynccontextmanager
async def session_api(config: Config, connect: str | None = None, token: str | None = None
                      ) -> AsyncIterator[RelayClient | Engine]:
    """The host's client when a host runs for the data folder (or ``--connect`` /
    ``RELAY_CONNECT``); else an engine of this process's own, which hosts nothing."""
    from relay.api.attach import client_of_live_host

    client = await client_of_live_host(config, connect, token)
    if client is not None:
        async with client:
            yield client
        return
    from relay.engine.engine import Engine  # imported when one is opened
    engine = await Engine.open(config)
    try:
        yield engine
    finally:
        await engine.close()


async def show_session(config: Config, session_id: str, console: Console, as_json: bool,
                       follow: bool, connect: str | None = None,
                       token: str | None = None) -> SessionRow:
    """Replay a session from the store; with ``follow`` keep tailing until it ends.

    A host that stops while it is followed (a ``relay-cli run`` that hosted for its own
    lifetime and ended) leaves the rest in the store: the follow goes on from there."""
    from relay.core.errors import HostGoneError

    printed = 0
    printer = StreamPrinter(console, as_json)
    try:
        async with session_api(config, connect, token) as api:
            row = await api.get_session(session_id)
            session_id = row.id
            if follow:
                async for record in api.follow(row.id, 0):
                    printer.print(record)
                    printed = record.id
            else:
                after = 0
                while batch := await api.events_after(after, row.id, PAGE):
                    for record in batch:
                        printer.print(record)
                    after = printed = batch[-1].id
            row = await final_row(config, api, row.id)
    except HostGoneError:
        from relay.engine.engine import Engine  # imported when one is opened
        engine = await Engine.open(config)
        try:
            row = await engine.get_session(session_id)
            async for record in engine.follow(row.id, printed):  # nothing runs it now
                printer.print(record)
            row = await engine.get_session(row.id)
        finally:
            await engine.close()
    if not as_json:
        session_footer(console, row)
    return row


async def final_row(config: Config, api: RelayClient | Engine, session_id: str) -> SessionRow:
    """The row of a session that has just ended. A host that ran it for its own lifetime (a
    ``relay-cli run`` with no host) may be gone by now: then the row is read from the store,
    which it wrote before it went."""
    from relay.core.errors import HostError

    try:
        return await api.get_session(session_id)
    except HostError:
        from relay.engine.engine import Engine  # imported when one is opened
        engine = await Engine.open(config)
        try:
            return await engine.get_session(session_id)
        finally:
            await engine.close()


#: events one page of ``show`` reads
PAGE = 1000


async def stop_session(config: Config, session_id: str, console: Console,
                       connect: str | None = None, token: str | None = None) -> int:
    """Stop a running session (it ends cancelled); 0 once it is stopped, 1 when it was not
    running."""
    async with session_api(config, connect, token) as api:
        row = await api.get_session(session_id)
        if row.finished:
            console.print(f"Session {row.id} is not running ({row.state}).", highlight=False)
            return 1
        after = await session_cursor(api, row.id)
        await api.cancel_session(row.id)
        async for _ in api.follow(row.id, after):
            pass  # until it has ended
        row = await final_row(config, api, row.id)
    console.print(f"Session {row.id} stopped ({row.state}).", highlight=False)
    return 0


async def archive_session(config: Config, session_id: str, console: Console, archive: bool,
                          connect: str | None = None, token: str | None = None) -> int:
    """``relay-cli archive ID`` / ``unarchive ID``: out of the lists, or back into them."""
    async with session_api(config, connect, token) as api:
        row = await (api.sessions.archive if archive else api.sessions.unarchive)(session_id)
    if archive:
        console.print(f"Session {row.id} archived: `{cli('sessions --archived')}` lists it, "
                      f"`{cli(f'unarchive {row.id}')}` brings it back.", highlight=False,
                      markup=False)
    else:
        console.print(f"Session {row.id} is back in the list.", highlight=False)
    return 0


async def session_cursor(api: RelayClient | Engine, session_id: str) -> int:
    """The id to follow ``session_id`` from to see only what comes next."""
    from relay.api.client import RelayClient

    if isinstance(api, RelayClient):
        return await api.last_event_id(session_id)  # that session's events only
    return await api.last_event_id()


async def list_sessions(config: Config, console: Console, limit: int,
                        as_json: bool = False, connect: str | None = None,
                        token: str | None = None, archived: bool = False) -> None:
    """The sessions (``archived`` ones too) through the host (or an engine here).
    ``relay-cli sessions`` reads relay.db itself when it can: :mod:`relay.cli.sessions_cmd`."""
    async with session_api(config, connect, token) as api:
        rows = await api.sessions.recent(limit, archived)
    if as_json:  # one line per session, newest first; nothing at all when there are none
        for row in rows:
            print(json_text(row.model_dump(mode="json"), separators=(",", ":")), flush=True)
        return
    from relay.cli.sessions_cmd import print_sessions

    print_sessions(console, rows)


#: submits a session to the host: its id, and the event id its new events follow
Submit = Callable[["RelayClient"], Awaitable[tuple[str, int]]]


def submit_new(spec: SessionSpec) -> Submit:
    async def submit(client: RelayClient) -> tuple[str, int]:
        return await client.start_session(spec), 0
    return submit


def submit_continue(session_id: str, prompt: str) -> Submit:
    async def submit(client: RelayClient) -> tuple[str, int]:
        row = await client.get_session(session_id)
        if not row.finished:  # a running session is talked to, not resumed
            from relay.core.errors import RelayError

            raise RelayError(f"Session {row.id} is still {row.state}: --resume continues a "
                             "finished one.",
                             f"Send it a message instead: {cli(f'say {row.id} TEXT')}")
        after = await client.last_event_id(row.id)
        return await client.continue_session(row.id, prompt), after
    return submit


#: the exit code of a ``run`` that Ctrl-C detached from (or, hosting, interrupted)
DETACHED_EXIT = 130


async def run_on_host(config: Config, submit: Submit, console: Console, as_json: bool, *,
                      connect: str | None = None, token: str | None = None,
                      detach: bool = False) -> int:
    """``relay-cli run``: submit a session to the host and render its stream until it ends.

    With no host this process hosts for its lifetime (and says once how to keep sessions
    running after it exits). Ctrl-C detaches: the session goes on in the host and the
    command says how to follow or stop it (exit :data:`DETACHED_EXIT`) — unless this
    process is the host, whose sessions then end interrupted (resumable) as it exits, which
    it says. ``detach`` returns once the host has the session (it needs a running host).
    The exit code: 0 completed, 1 failed / cancelled / interrupted.
    """
    from relay.api.attach import attach
    from relay.cli.questions import Questions
    from relay.core.events import NeedsInput

    async with attach(config, connect=connect, token=token, host_if_none=not detach,
                      kind="run") as attached:
        client = attached.client
        if attached.hosting and not as_json:
            console.print(f"hosting here until exit · keep sessions running: `{cli('serve')}` "
                          "or the window",
                          markup=False, highlight=False, style="dim")
        session_id, after = await _submit(client, submit)
        if detach:
            if as_json:
                print(json_text({"id": session_id}), flush=True)
            else:
                console.print(f"{session_id}", markup=False, highlight=False)
            return 0
        printer = StreamPrinter(console, as_json)
        questions = Questions(client, console, as_json)
        try:
            if not as_json:
                row = await client.get_session(session_id)
                console.print(f"[bold]Relay[/] session {session_id} · {row.runtime}"
                              f" · permissions {row.permission.value}")
                await _print_instructions(console, row)
            async for record in client.follow(session_id, after):
                printer.print(record)
                if isinstance(record.event, NeedsInput):
                    questions.ask(session_id, record.event)
        except asyncio.CancelledError:  # Ctrl-C
            _left(session_id, hosting=attached.hosting)
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # handled: the host (here or there) closes in order
            return DETACHED_EXIT
        finally:
            await questions.aclose()
        row = await client.get_session(session_id)
    if not as_json:
        session_footer(console, row)
    if questions.no_answer is not None:
        raise questions.no_answer
    return 0 if row.state == "completed" else 1


def _left(session_id: str, *, hosting: bool) -> None:
    """What Ctrl-C did to the session, on stderr: one line, then a hint a line each (every
    line fits 80 columns, so a terminal never breaks a command in two)."""
    if hosting:
        lines = [f"interrupted: session {session_id} ends with this process, which hosted it",
                 f"  → resume: {cli(f'run --resume {session_id} TASK')}",
                 f"  → to keep sessions running, start `{cli('serve')}` (or the window) first"]
    else:
        lines = [f"detached: session {session_id} goes on in the host",
                 f"  → follow: {cli(f'show {session_id} --follow')}",
                 f"  → stop:   {cli(f'stop {session_id}')}"]
    print("\n" + "\n".join(lines), file=sys.stderr, flush=True)


async def _submit(client: RelayClient, submit: Submit) -> tuple[str, int]:
    """Submit; when the host refuses for a locked vault the session needs, give it the
    passphrase (``RELAY_VAULT_PASSPHRASE``, else typed here) and submit again."""
    from relay.core.errors import VaultLockedError

    try:
        return await submit(client)
    except VaultLockedError as exc:
        await _unlock(client, exc)
    return await submit(client)


async def _unlock(client: RelayClient, locked: VaultLockedError) -> None:
    """Give the host the vault passphrase: from ``RELAY_VAULT_PASSPHRASE``, else asked on
    the terminal (a new vault: twice) and checked by the host, :data:`prompt.TRIES` times."""
    from relay.cli import prompt
    from relay.core.errors import VaultError
    from relay.core.vault import PASSPHRASE_ENV

    given = os.environ.get(PASSPHRASE_ENV)
    if given:
        await client.unlock_vault(given)
        return
    if not sys.stdin.isatty():
        raise VaultError(locked.message, f"Set {PASSPHRASE_ENV} (relay-cli gives it to the "
                                         "host), or run this on a terminal to type it.")
    creating = not (await client.vault_state()).exists
    print(f"{locked.message} Its passphrase, please"
          f"{' (a new vault: choose one)' if creating else ''}.", file=sys.stderr, flush=True)
    for _ in range(prompt.TRIES):
        passphrase = prompt.ask("Relay vault passphrase: ", secret=True)
        if creating and prompt.ask("Repeat it: ", secret=True) != passphrase:
            print("The two passphrases differ.", file=sys.stderr, flush=True)
            continue
        try:
            await client.unlock_vault(passphrase)
        except VaultError as exc:  # wrong, or empty: say so and ask again
            print(exc.message, file=sys.stderr, flush=True)
        else:
            return
    raise VaultError("The vault passphrase was not given.",
                     f"Run the command again, or set {PASSPHRASE_ENV}.")


async def recover_on_host(config: Config, console: Console) -> bool:
    """``recover`` when a host runs: it carried on what was left when it started (True)."""
    from relay.api.client import RelayClient

    client = RelayClient.for_home(config.home)
    if client is None:
        return False
    async with client:
        info = await client.status()
    console.print(f"The Relay host at {info.url} (pid {info.pid}) runs this data folder: it "
                  f"carried on what was left unfinished when it started. Running: "
                  f"{', '.join(info.running) or 'nothing'}.", markup=False, highlight=False)
    return True


async def demo(config: Config, console: Console, as_json: bool, limit_after: int | None,
               quota: list[float] | None = None, ask: bool = False, *,
               connect: str | None = None, token: str | None = None) -> int:
    """A complete demo session in a temporary repository.

    A simulation: its handoffs are signed with a throwaway demo key (the vault is never
    asked), and its simulated accounts, limits and breakers belong to this run alone, so it
    works however often it is run in one data folder."""
    from relay.core.demo_repo import make_demo_repo
    from relay.core.models import SessionSpec

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
    return await run_on_host(config, submit_new(spec), console, as_json, connect=connect,
                             token=token)


