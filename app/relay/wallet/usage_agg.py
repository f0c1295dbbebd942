"""The usage index's aggregate: what every usage report reads instead of every counted call.

``usage_agg`` holds, per account entry × quarter-hour *slot* × model × agent session ×
project, the sums of the counted calls (``entries``): calls, tokens, the costs the CLIs wrote
and the tokens of the calls that wrote none (priced from the table at report time), and the
first and last call's time. A day, a session or a five-hour block is a sum of whole rows:

* days: every time zone's offset is a multiple of 15 minutes, so a local day is whole
  quarter hours;
* sessions: the session is part of the key (``--since`` is a local midnight, whole slots);
* blocks (:mod:`relay.wallet.blocks`): a block starts on the hour and ends five hours
  later, and a call exactly at its end still belongs to it. So a quarter hour has two
  slots: ``2q`` holds the calls exactly at its start, ``2q + 1`` those inside it — a block
  boundary never falls inside a slot, and the gap rule compares one slot's last call with
  the next one's first.

It is kept in the refresh's own transaction (:class:`relay.wallet.usage_store.UsageStore`):
every change to ``entries`` marks the (entry, quarter) it touches, and the commit sums
those quarters again from ``entries`` — a few rows after an append. A refresh into an empty
index (the cold scan) marks nothing and sums everything once at the end.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

#: a quarter hour in milliseconds
QUARTER_MS = 15 * 60_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS usage_agg (
    entry TEXT NOT NULL, slot INTEGER NOT NULL, model TEXT, session_id TEXT, project TEXT,
    calls INTEGER NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL,
    cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL, reasoning INTEGER NOT NULL,
    costed INTEGER NOT NULL, cost_usd REAL NOT NULL, nc_input INTEGER NOT NULL,
    nc_output INTEGER NOT NULL, nc_cache_read INTEGER NOT NULL, nc_cache_write INTEGER NOT NULL,
    first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS usage_agg_slot ON usage_agg (entry, slot);
"""
TEMP = "CREATE TEMP TABLE touched (entry TEXT NOT NULL, q INTEGER NOT NULL, PRIMARY KEY (entry, q))"

_SLOT = f"(e.ts_ms / {QUARTER_MS}) * 2 + (e.ts_ms % {QUARTER_MS} != 0)"
_NC = "sum(CASE WHEN e.cost_usd IS NULL THEN e.{c} ELSE 0 END)"
_SUMS = (f"f.entry, {_SLOT} AS slot, e.model, e.session_id, e.project, count(*), sum(e.input),"
         " sum(e.output), sum(e.cache_read), sum(e.cache_write), sum(e.reasoning),"
         " count(e.cost_usd), total(e.cost_usd), "
         + ", ".join(_NC.format(c=c) for c in ("input", "output", "cache_read", "cache_write"))
         + ", min(e.ts_ms), max(e.ts_ms)")
_GROUP = " GROUP BY f.entry, slot, e.model, e.session_id, e.project"
#: every row summed again from ``entries`` (the cold scan; the tests' reference)
FULL = f"SELECT {_SUMS} FROM entries e JOIN files f ON f.id = e.file_id{_GROUP}"
_QUARTER = f"e.ts_ms / {QUARTER_MS}"
#: mark the quarters of ``entries`` rows: append a FROM/WHERE naming ``e`` and ``f``
MARK = f"INSERT OR IGNORE INTO touched SELECT f.entry, {_QUARTER} "


class AggRow(NamedTuple):
    """A ``usage_agg`` row (tokens of the calls without a written cost are ``nc_*``)."""

    entry: str
    slot: int
    model: str | None
    session_id: str | None
    project: str | None
    calls: int
    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int
    costed: int
    cost_usd: float
    nc_input: int
    nc_output: int
    nc_cache_read: int
    nc_cache_write: int
    first_ms: int
    last_ms: int


def slot_of(ts_ms: int) -> int:
    """The slot of a time (see the module docstring)."""
    quarter, rest = divmod(ts_ms, QUARTER_MS)
    return quarter * 2 + (rest != 0)


def slot_start_ms(slot: int) -> int:
    """The start of the quarter hour a slot is in."""
    return (slot // 2) * QUARTER_MS


def mark_file(conn: sqlite3.Connection, file_id: int) -> None:
    """Mark the quarters of one file's counted calls (before they change)."""
    conn.execute(MARK + "FROM entries e JOIN files f ON f.id = e.file_id WHERE e.file_id = ?",
                 (file_id,))


def mark_staged(conn: sqlite3.Connection) -> None:
    """Mark the quarters the staged rows touch: theirs, and those of the counted copies
    of their keys (a copy in the same file is merged into the row already counted)."""
    conn.execute(MARK.replace("e.ts_ms", "s.ts_ms")
                 + "FROM stage s JOIN files f ON f.id = s.file_id")
    conn.execute(MARK + "FROM stage s JOIN entries e ON e.dedupe_key = s.dedupe_key"
                 " JOIN files f ON f.id = e.file_id")


def mark_keys(conn: sqlite3.Connection) -> None:
    """Mark the quarters of the counted calls whose keys are in ``gone`` (promoted copies)."""
    conn.execute(MARK + "FROM entries e JOIN files f ON f.id = e.file_id"
                 " WHERE e.dedupe_key IN (SELECT k FROM gone)")


def rebuild(conn: sqlite3.Connection) -> None:
    """Sum every row again (a refresh that started from an empty index)."""
    conn.execute("DELETE FROM usage_agg")
    conn.execute(f"INSERT INTO usage_agg {FULL}")
    conn.execute("DELETE FROM touched")


def update(conn: sqlite3.Connection) -> None:
    """Sum the marked quarters again."""
    conn.execute("DELETE FROM usage_agg WHERE rowid IN (SELECT a.rowid FROM touched t"
                 " JOIN usage_agg a ON a.entry = t.entry AND a.slot BETWEEN t.q * 2 AND t.q * 2 + 1)")
    # the range lets SQLite use the time index; the equality is the exact quarter
    conn.execute(f"INSERT INTO usage_agg SELECT {_SUMS} FROM touched t JOIN entries e"
                 f" ON e.ts_ms > (t.q - 1) * {QUARTER_MS} AND e.ts_ms < (t.q + 1) * {QUARTER_MS}"
                 f" AND {_QUARTER} = t.q JOIN files f ON f.id = e.file_id AND f.entry = t.entry"
                 + _GROUP)
    conn.execute("DELETE FROM touched")


#: how each report groups the rows (the rest of a row's text columns is any of the group's)
_GROUPS = {
    # a local day (SQLite's localtime is the C library's, as Python's astimezone())
    "day": f"date((slot / 2) * {QUARTER_MS // 1000}, 'unixepoch', 'localtime'), model",
    "session": "entry, session_id, project, model",
    "block": "entry, slot, model",
}
_SUMMED = ("entry, min(slot), model, session_id, project, sum(calls), sum(input), sum(output),"
           " sum(cache_read), sum(cache_write), sum(reasoning), sum(costed), total(cost_usd),"
           " sum(nc_input), sum(nc_output), sum(nc_cache_read), sum(nc_cache_write),"
           " min(first_ms), max(last_ms)")


def read(conn: sqlite3.Connection, entry: str | None, since_ms: int | None,
         by: str | None = None) -> list[AggRow]:
    """The rows of one account (or all) from the slot of ``since_ms`` on, by slot — summed
    per local day and model (``by="day"``), per session, project and model (``"session"``)
    or per account, slot and model (``"block"``), so a report prices a few rows."""
    select, group = ("*", "") if by is None else (_SUMMED, f" GROUP BY {_GROUPS[by]}")
    rows = conn.execute(
        f"SELECT {select} FROM usage_agg WHERE (?1 IS NULL OR entry = ?1)"
        f" AND (?2 IS NULL OR slot >= ?2){group} ORDER BY 2",
        (entry, None if since_ms is None else slot_of(since_ms))).fetchall()
    return [AggRow(*r) for r in rows]
