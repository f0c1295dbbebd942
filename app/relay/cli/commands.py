"""The async bodies of relay-cli's commands."""

from __future__ import annotations

import asyncio
import importlib.util
import platform
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from relay.cli.questions import Questions
from relay.cli.render import StreamPrinter, session_footer, sessions_table
from relay.core.bus import Subscription
from relay.core.config import Config
from relay.core.demo_repo import make_demo_repo
from relay.core.engine import Engine
from relay.core.errors import RelayError
from relay.core.events import NeedsInput
from relay.core.models import SessionRow, SessionSpec, entry_runtime
from relay.runtimes.capabilities import RUNTIME_NAMES, Cap, Capabilities, Level

FINAL_STATES = ("completed", "failed", "cancelled", "interrupted")


Starter = Callable[[Engine], Awaitable[str]]


async def run_session(config: Config, start: Starter, console: Console, as_json: bool) -> SessionRow:
    """Start (or continue) a session and render its live stream until it ends.

    Ctrl-C stops the agent and records the session as cancelled before exiting.
    """
    from relay.cli.contract_cmd import tty_passphrase

    engine = await Engine.open(config, passphrase_provider=tty_passphrase)
    try:
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
            await follow(sub, session_id, printer, questions.asked)
        except asyncio.CancelledError:
            await asyncio.shield(_cancel(engine, session_id))
            raise
        finally:
            sub.close()
            await questions.aclose()
        row = await engine.wait_session(session_id)
        if not as_json:
            session_footer(console, row)
        return row
    finally:
        await engine.close()


async def _print_instructions(console: Console, row: SessionRow) -> None:
    """The one line naming the repository's instruction files and how the first runtime
    gets them (nothing when there are none)."""
    from relay.sessions.instructions_delivery import cli_line

    line = await asyncio.to_thread(cli_line, Path(row.repo), entry_runtime(row.runtime))
    if line:
        console.print(line, markup=False, highlight=False)


async def recover(config: Config, console: Console, as_json: bool) -> int:
    """Carry on the handoffs a stopped Relay left between two steps; follow them to the end."""
    from relay.cli.contract_cmd import tty_passphrase

    engine = await Engine.open(config, passphrase_provider=tty_passphrase, recover=True)
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
        last = 0
        while True:
            for record in await engine.store.events_after(last, session_id=row.id, replay=True):
                printer.print(record)
                last = record.id
            row = await engine.get_session(row.id)
            if not follow or row.finished:
                break
            await asyncio.sleep(0.25)  # tailing another process's writes
        if not as_json:
            session_footer(console, row)
        return row
    finally:
        await engine.close()


async def list_sessions(config: Config, console: Console, limit: int,
                        as_json: bool = False) -> None:
    engine = await Engine.open(config)
    try:
        rows = await engine.list_sessions(limit)
    finally:
        await engine.close()
    if as_json:  # one line per session, newest first; nothing at all when there are none
        for row in rows:
            print(row.model_dump_json(), flush=True)
        return
    if not rows:
        console.print("No sessions yet. Try `relay-cli demo`.")
        return
    console.print(sessions_table(rows))


async def demo(config: Config, console: Console, as_json: bool, limit_after: int | None,
               quota: list[float] | None = None, ask: bool = False) -> SessionRow:
    """A complete demo session in a temporary repository."""
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


def capability_table(runtimes: list[str]) -> Table:
    """What each runtime can do (the static table; adapters narrow it at handshake)."""
    table = Table(title="Capabilities (yes / partial / no / unknown)")
    table.add_column("capability", no_wrap=True)
    for name in runtimes:
        table.add_column(name, no_wrap=True)
    caps = {name: Capabilities.for_runtime(name) for name in runtimes}
    colour = {Level.YES: "green", Level.PARTIAL: "yellow", Level.NO: "red", Level.UNKNOWN: "dim"}
    for cap in Cap:
        levels = [caps[name].level(cap) for name in runtimes]
        table.add_row(cap.value, *(f"[{colour[lv]}]{lv.value}[/]" for lv in levels))
    return table


def _vault_line(config: Config) -> str:
    from relay.core.vault import Vault  # only here: probing the keyring costs time

    try:
        return Vault.open(config).description
    except RelayError as exc:
        return f"[red]unavailable[/] — {exc.message} {exc.hint or ''}"


def _key_provider(runtime: str) -> str:
    """Whose accounts hold a runtime's key (openai-chat uses openai's)."""
    return "openai" if runtime == "openai-chat" else runtime


async def doctor(config: Config, console: Console) -> int:
    """What is installed, what is missing and how to fix it."""
    engine = await Engine.open(config)
    try:
        infos = engine.runtime_infos()
        schema = await engine.store.schema_version()
        async with engine.store.conn.execute(  # no vault call: a key's presence is enough here
                "SELECT provider, label FROM accounts WHERE auth_kind='api_key' AND paused=0"
                " ORDER BY provider, label") as cur:
            keyed = [f"{r[0]}:{r[1]}" for r in await cur.fetchall()]
    finally:
        await engine.close()
    table = Table(title="Agent runtimes")
    for col in ("runtime", "status", "version", "executable / how to fix"):
        table.add_column(col)
    for info in infos:
        ok = info.problem is None
        accounts = [e for e in keyed if e.partition(":")[0] == _key_provider(info.runtime)]
        if not ok and accounts and info.version == "HTTP API":  # the key is an account's
            table.add_row(info.runtime, "[green]ok[/]", info.version or "—",
                          f"API key in the account(s) {', '.join(accounts)}")
            continue
        table.add_row(info.runtime, "[green]ok[/]" if ok else "[red]missing[/]",
                      info.version or "—", info.executable if ok else f"{info.problem} {info.hint or ''}")
    console.print(table)
    planned = [name for name in RUNTIME_NAMES if name not in {i.runtime for i in infos}]
    if planned:
        console.print(f"planned runtimes (not drivable yet): {', '.join(planned)}")
    console.print(capability_table(list(RUNTIME_NAMES)))
    console.print(f"data folder: {config.home}  (set RELAY_HOME to move it)")
    console.print(f"database: {config.db_path} · schema {schema}")
    console.print(f"secrets: {await asyncio.to_thread(_vault_line, config)}")
    console.print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}")
    gui = importlib.util.find_spec("PySide6") is not None
    console.print("desktop window: " + ("available (`relay`)" if gui else
                                        "[yellow]PySide6 not installed — pip install 'relay[gui]'[/]"))
    if all(i.problem for i in infos if i.runtime != "demo"):
        console.print("[yellow]No agent CLI found: Relay will use the scripted demo runtime.[/]")
    return 0
