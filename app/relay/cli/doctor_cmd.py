"""relay-cli doctor: what is installed, what is missing and how to fix it.

It looks without changing anything and without the engine: every runtime's facts probed
(:func:`relay.runtimes.registry.runtime_info`: no adapter is imported; the CLIs' ``--version``
probes run side by side, in threads), the data folder's database read
with sqlite3 (its schema, and which API-key accounts there are — never a key), and the
vault's backend, probed in a thread started before anything else is loaded, because
keyring's backend search (entry points, ``ctypes`` library lookups) is the slowest part.
Relay's modules are imported on the main thread only (two threads importing parts of one
import cycle can see a half-initialised module), and only once that probe runs.
"""

from __future__ import annotations

import importlib.util
import platform
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from relay.core.errors import RelayError

if TYPE_CHECKING:
    from rich.console import Console

    from relay.cli.tables import FitTable
    from relay.core.config import Config
    from relay.core.vault import Vault

#: threads for the vault's probe and the runtimes' --version probes
WORKERS = 16


def capability_table(runtimes: list[str]) -> FitTable:
    """What each runtime can do (the static table; adapters narrow it at handshake)."""
    from relay.cli.tables import Column, FitTable
    from relay.core.capabilities import Cap, Capabilities, Level

    table = FitTable(Column("capability", figure=True),
                     *(Column(name, figure=True) for name in runtimes),
                     title="Capabilities (yes / partial / no / unknown)")
    caps = {name: Capabilities.for_runtime(name) for name in runtimes}
    colour = {Level.YES: "green", Level.PARTIAL: "yellow", Level.NO: "red", Level.UNKNOWN: "dim"}
    for cap in Cap:
        levels = [caps[name].level(cap) for name in runtimes]
        table.add_row(cap.value, *(f"[{colour[lv]}]{lv.value}[/]" for lv in levels))
    return table


def _vault_line(vault: type[Vault], config: Config) -> str:
    from rich.markup import escape

    try:
        return escape(vault.open(config).description)
    except RelayError as exc:
        return f"[red]unavailable[/] — {escape(exc.message)} {escape(exc.hint or '')}"


def _key_provider(runtime: str) -> str:
    """Whose accounts hold a runtime's key (openai-chat uses openai's)."""
    return "openai" if runtime == "openai-chat" else runtime


def _database(path: Path) -> tuple[str, list[str]]:
    """The database line and the api_key accounts (``provider:label``) that are not paused."""
    from relay.core.store.migrations import LATEST
    from relay.core.store.peek import database_facts

    if not path.is_file():
        return f"{path} · not created yet (the first session creates it)", []
    try:
        schema, keyed = database_facts(path)
    except sqlite3.Error as exc:
        from rich.markup import escape

        return f"{path} · [red]not readable[/]: {escape(str(exc))}", []
    if schema is None or schema < LATEST:
        note = f" (this Relay upgrades it to {LATEST} when it next opens it)"
    elif schema > LATEST:
        note = f" ([red]written by a newer Relay[/]: this one knows up to {LATEST})"
    else:
        note = ""
    return f"{path} · schema {schema or 0}{note}", keyed


def doctor(config: Config, console: Console) -> int:
    """Print what is installed, what is missing and how to fix it; 0 (it only reports)."""
    from relay.core.vault import Vault  # keyring + cryptography: only this command

    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="doctor") as pool:
        vault: Future[str] = pool.submit(_vault_line, Vault, config)  # first: the slowest
        from rich.markup import escape

        from relay.cli.tables import Column, FitTable
        from relay.core.capabilities import RUNTIME_NAMES
        from relay.runtimes.registry import available_runtimes, runtime_info

        probes = [pool.submit(runtime_info, name) for name in available_runtimes()]
        database, keyed = _database(config.db_path)
        infos = [probe.result() for probe in probes]
        table = FitTable(Column("runtime", figure=True), Column("status", figure=True),
                         Column("version", figure=True), "executable / how to fix",
                         title="Agent runtimes")
        for info in infos:
            ok = info.problem is None
            accounts = [e for e in keyed if e.partition(":")[0] == _key_provider(info.runtime)]
            if not ok and accounts and info.version == "HTTP API":  # the key is an account's
                table.add_row(info.runtime, "[green]ok[/]", escape(info.version or "—"),
                              escape(f"API key in the account(s) {', '.join(accounts)}"))
                continue
            how = info.executable if ok else f"{info.problem} {info.hint or ''}"
            table.add_row(info.runtime, "[green]ok[/]" if ok else "[red]missing[/]",
                          escape(info.version or "—"), escape(how or ""))
        console.print(table)
        planned = [name for name in RUNTIME_NAMES if name not in {i.runtime for i in infos}]
        if planned:
            console.print(f"planned runtimes (not drivable yet): {', '.join(planned)}")
        console.print(capability_table(list(RUNTIME_NAMES)))
        console.print(f"data folder: {escape(str(config.home))}  (set RELAY_HOME to move it)")
        console.print(f"database: {database}")
        console.print(f"secrets: {vault.result()}")
        from relay.cli.setup_cmd import doctor_line

        console.print(f"Claude Code hooks: {doctor_line(config)}", highlight=False)
    console.print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}")
    gui = importlib.util.find_spec("PySide6") is not None
    console.print("desktop window: " + ("available (`relay`)" if gui else
                                        "[yellow]PySide6 not installed — pip install 'relay[gui]'[/]"))
    if all(i.problem for i in infos if i.runtime != "demo"):
        console.print("[yellow]No agent CLI found: Relay will use the scripted demo runtime.[/]")
    return 0
