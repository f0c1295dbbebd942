"""What the store's modules share: a statement, and the tables' times.

A :data:`Statement` is one SQL text and its parameters, as a table's owner builds it and
the :class:`~relay.core.store.writer.EventWriter` commits it. Times are Unix milliseconds
in the tables and aware UTC datetimes in the rows. A stored JSON column that does not parse
is :func:`damaged_row`: an :class:`sqlite3.DatabaseError`, like any other damage to relay.db.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.core.events import AgentEvent

Statement = tuple[str, Sequence[Any]]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def damaged_row(table: str, exc: ValueError) -> sqlite3.DatabaseError:
    """A row of ``table`` whose stored JSON does not parse (flipped bytes, a cut write)."""
    errors = getattr(exc, "errors", None)  # pydantic's ValidationError: its first problem
    first = str(errors()[0].get("msg", "")) if callable(errors) and errors() else ""
    first = first or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return sqlite3.DatabaseError(f"a row of its {table} table does not parse ({first[:120]})")


def stored_event(payload: str | bytes) -> AgentEvent:
    """An event from its stored JSON; a payload that does not parse is :func:`damaged_row`
    (for the readers outside the store's own modules: history, wallet)."""
    from relay.core.events import parse_event  # not at import: the quick reads skip pydantic

    try:
        return parse_event(payload)
    except ValueError as exc:
        raise damaged_row("events", exc) from exc
