"""relay-cli sessions: the table of sessions, read straight from relay.db when that is safe.

Opening the engine costs most of a second (the store's models, the runtimes, the wallet…)
for what is one query. :func:`quick_rows` reads the table's columns with the standard
library's sqlite3, read-only, and answers only when the answer is the engine's: the database
is at this build's schema, and no active session lost its Relay process (an engine marks
those interrupted, and stops their agents, when it opens). Otherwise — or for ``--json``,
which prints the store's whole rows — relay-cli takes the engine's way
(:func:`relay.cli.commands.list_sessions`); both print :func:`sessions_table`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.markup import escape

from relay.cli.hints import cli
from relay.cli.tables import Column, FitTable
from relay.core.present import clip, end_state
from relay.core.states import ACTIVE_STATES

#: states of a session some Relay process is running (as the engine counts them)


class UsageLike(Protocol):
    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def is_unknown(self) -> bool: ...


class SessionLike(Protocol):
    """What the table shows of a session (a :class:`~relay.core.models.SessionRow` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def runtime(self) -> str: ...
    @property
    def simulated(self) -> bool: ...
    @property
    def task(self) -> str: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def refused_calls(self) -> int: ...
    @property
    def usage(self) -> UsageLike: ...


@dataclass(frozen=True)
class QuickUsage:
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    reasoning_tokens: int | None
    cost_usd: float | None

    @property
    def is_unknown(self) -> bool:
        return all(v is None for v in (self.input_tokens, self.output_tokens,
                                       self.cache_read_tokens, self.cache_write_tokens,
                                       self.reasoning_tokens, self.cost_usd))


@dataclass(frozen=True)
class QuickRow:
    """A session as :func:`quick_rows` reads it: the table's columns only."""

    id: str
    state: str
    runtime: str
    simulated: bool
    task: str
    updated_at: datetime
    refused_calls: int
    usage: QuickUsage


def sessions_table(rows: Sequence[SessionLike]) -> FitTable:
    table = FitTable(Column("id", figure=True), Column("state", figure=True), "runtime",
                     Column("task", wrap=False, max_width=40),
                     Column("tokens in/out", figure=True), Column("cost", figure=True),
                     Column("updated", figure=True), title="Relay sessions")
    for r in rows:
        runtime = f"{r.runtime} (simulation)" if r.simulated else r.runtime
        tokens = f"{r.usage.input_tokens or '—'}/{r.usage.output_tokens or '—'}" \
            if not r.usage.is_unknown else "—"
        cost = "—" if r.usage.cost_usd is None else f"${r.usage.cost_usd:.4f}"
        table.add_row(r.id, escape(end_state(r.state, r.refused_calls, short=True)), escape(runtime),
                      escape(clip(r.task, 50)), tokens, cost,
                      f"{r.updated_at:%Y-%m-%d %H:%M}")
    return table


def print_sessions(console: Console, rows: Sequence[SessionLike]) -> None:
    if not rows:
        console.print(f"No sessions yet. Try `{cli('demo')}`.", markup=False)
        return
    console.print(sessions_table(rows))


_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
          "reasoning_tokens", "cost_usd")
_QUERY = ("SELECT s.id, s.state, s.runtime, s.simulated, s.task, s.updated_ms, "
          + ", ".join(f"(SELECT sum(r.{c}) FROM runs r WHERE r.session_id = s.id)" for c in _USAGE)
          + ", (SELECT coalesce(sum(r.refused_calls), 0) FROM runs r WHERE r.session_id = s.id)"
          " FROM sessions s ORDER BY s.updated_ms DESC LIMIT ?")


def quick_rows(db: Path, limit: int) -> list[QuickRow] | None:
    """The newest ``limit`` sessions, or None when only the engine can answer (no database
    yet, another schema, an active session whose Relay process is gone, anything unusual)."""
    from relay.core.store.migrations import LATEST

    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return None
    try:
        (version,) = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        if version != LATEST:
            return None
        owners = conn.execute(f"SELECT owner_pid FROM sessions WHERE state IN "
                              f"({','.join('?' * len(ACTIVE_STATES))})", ACTIVE_STATES).fetchall()
        if owners and not all(_alive(pid) for (pid,) in owners):
            return None
        rows = conn.execute(_QUERY, (limit,)).fetchall()
    except (sqlite3.Error, TypeError, ValueError):
        return None
    finally:
        conn.close()
    return [QuickRow(id=r[0], state=r[1], runtime=r[2], simulated=bool(r[3]), task=r[4],
                     updated_at=datetime.fromtimestamp(r[5] / 1000, UTC),
                     usage=QuickUsage(*r[6:12]), refused_calls=int(r[12])) for r in rows]


def _alive(pid: int | None) -> bool:
    """Whether the Relay process ``pid`` still runs (as the engine decides it)."""
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    import psutil

    return bool(psutil.pid_exists(pid))


def quick(home: Path, limit: int, console: Console) -> bool:
    """Print the table from relay.db directly; False when the engine must do it."""
    from relay.core.home import DB_FILE

    rows = quick_rows(home / DB_FILE, limit)
    if rows is None:
        return False
    print_sessions(console, rows)
    return True
