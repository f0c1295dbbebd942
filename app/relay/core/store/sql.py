"""What the store's modules share: a statement, the tables' times, and an id prefix match.

A :data:`Statement` is one SQL text and its parameters, as a table's owner builds it and
the :class:`~relay.core.store.writer.EventWriter` commits it. Times are Unix milliseconds
in the tables and aware UTC datetimes in the rows. A stored JSON column that does not parse
is :func:`damaged_row`: an :class:`sqlite3.DatabaseError`, like any other damage to relay.db.
:func:`prefix_match` is the one way a lookup matches what the user typed against the start
of an id: exactly (no ``LIKE``, whose ``%`` and ``_`` are wildcards), and only for text an
id could be (:data:`MAX_ID_LENGTH`).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.core.events import AgentEvent

Statement = tuple[str, Sequence[Any]]

#: the longest id (or prefix of one) a lookup takes: Relay's ids are 12 characters
#: (``c-``/``h-`` ones 14), a commit's 40 (SHA-1) or 64 (SHA-256)
MAX_ID_LENGTH = 64
#: what an id is made of (Relay's are hex, with a letter and a dash in front for some)
_ID_TEXT = re.compile(r"[A-Za-z0-9_-]+")


def id_text_problem(text: str, what: str = "An id") -> str | None:
    """Why ``text`` cannot be (the start of) an id, as a sentence; None when it can."""
    if not text:
        return f"{what} is empty."
    if len(text) > MAX_ID_LENGTH:
        return f"{what} is at most {MAX_ID_LENGTH} characters (this one has {len(text):,})."
    if not _ID_TEXT.fullmatch(text):
        return f"{what} is letters, digits, '-' and '_' only."
    return None


def prefix_match(column: str, prefix: str) -> Statement:
    """SQL (and its parameters) for "``column`` starts with ``prefix``", character for
    character: ``%`` and ``_`` are themselves, and the length of the text does not matter
    to SQLite (a ``LIKE`` pattern of 100,000 characters is "too complex")."""
    return f"substr({column}, 1, ?) = ?", (len(prefix), prefix)


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
