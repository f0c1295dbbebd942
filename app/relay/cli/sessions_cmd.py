"""relay-cli sessions: the table of sessions, read straight from relay.db when that is safe.

Opening the engine costs most of a second (the store's models, the runtimes, the wallet…)
for what is one query. :func:`~relay.core.store.sessions_quick.quick_sessions` runs the
store's own statement with the standard library's sqlite3, read-only, and answers only when
the answer is the engine's. Otherwise — or for ``--json``, which prints the store's whole
rows — relay-cli takes the engine's way (:func:`relay.cli.commands.list_sessions`); both
print :func:`sessions_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.markup import escape

from relay.cli.hints import cli
from relay.cli.tables import Column, FitTable
from relay.core.present import clip, end_state
from relay.core.store.sessions_quick import quick_sessions


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
    @property
    def archived_at(self) -> datetime | None: ...


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
        state = end_state(r.state, r.refused_calls, short=True)
        if r.archived_at is not None:
            state += " · archived"
        table.add_row(r.id, escape(state), escape(runtime),
                      escape(clip(r.task, 50)), tokens, cost,
                      f"{r.updated_at:%Y-%m-%d %H:%M}")
    return table


def print_sessions(console: Console, rows: Sequence[SessionLike]) -> None:
    if not rows:
        console.print(f"No sessions yet. Try `{cli('demo')}`.", markup=False)
        return
    console.print(sessions_table(rows))


def quick(home: Path, limit: int, console: Console, archived: bool = False) -> bool:
    """Print the table from relay.db directly (``archived`` sessions too); False when the
    engine must do it."""
    from relay.core.home import DB_FILE

    rows = quick_sessions(home / DB_FILE, limit, archived)
    if rows is None:
        return False
    print_sessions(console, rows)
    return True
