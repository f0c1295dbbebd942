"""Official limit signals: where they come from, and the table that keeps them.

Readings reach the wallet four ways, each stored as a :class:`LimitSnapshot` row in
``limit_snapshots`` (migration 4) with its origin:

- a running Claude Code session's ``rate_limit_event`` → a ``QuotaUpdate`` event whose row
  the writer stores in the same transaction (``relay.core.store.writer.derived_updates``);
- Claude Code's status line (``relay-cli statusline``): the JSON it pipes to the command
  carries ``rate_limits.{five_hour,seven_day}.{used_percentage,resets_at}`` for subscribers;
- Codex rollouts: ``event_msg`` ``token_count`` ``rate_limits`` (read by the usage index);
- an API's rate-limit headers (:func:`from_headers`, for the HTTP adapters).

A reading whose window has reset since (``resets_at`` in the past) says nothing about the
window now: :func:`current` drops it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from relay.core.events import QuotaUpdate
from relay.core.jsonvalue import as_number
from relay.core.store.db import Store, now_ms
from relay.core.store.sql import stored_event
from relay.core.store.writer import EventWriter, WriteOp
from relay.wallet.model import FIVE_HOURS_MS, SEVEN_DAYS_MS, LimitSnapshot, WindowKind

#: window names Relay keeps as they are; anything else is "other"
KNOWN_WINDOWS: frozenset[str] = frozenset(
    {"five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet"})
#: readings older than this are pruned (a seven-day window and a day of slack)
KEEP_MS = SEVEN_DAYS_MS + 24 * 3600 * 1000


def window_of(name: str | None, minutes: int | None = None) -> WindowKind:
    """A provider's window name or length → Relay's window kind."""
    if name in KNOWN_WINDOWS:
        return name  # type: ignore[return-value]
    if minutes == 300:
        return "five_hour"
    if minutes == 7 * 24 * 60:
        return "seven_day"
    return "other"


def window_length_ms(kind: str, minutes: int | None = None) -> int | None:
    if minutes:
        return minutes * 60_000
    if kind == "five_hour":
        return FIVE_HOURS_MS
    if kind.startswith("seven_day"):
        return SEVEN_DAYS_MS
    return None


def _epoch_ms(value: Any) -> int | None:
    """Epoch seconds (number or numeric string) → ms; None when absent or not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value * 1000) if value > 0 else None
    if isinstance(value, str):
        try:
            return _epoch_ms(float(value))
        except ValueError:
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                return None
    return None



def from_statusline(entry: str, payload: Mapping[str, Any], now: int) -> list[LimitSnapshot]:
    """Claude Code's status-line input → readings (none when it carries no ``rate_limits``)."""
    limits = payload.get("rate_limits")
    if not isinstance(limits, Mapping):
        return []
    out = []
    for name, window in limits.items():
        if not isinstance(window, Mapping):
            continue
        used = as_number(window.get("used_percentage"))
        if used is None:
            continue
        kind = window_of(name)
        out.append(LimitSnapshot(entry, kind, now, used_percent=used,
                                 resets_at_ms=_epoch_ms(window.get("resets_at")),
                                 window_minutes=None, origin="claude statusline"))
    return out


def from_headers(entry: str, headers: Mapping[str, str], now: int) -> list[LimitSnapshot]:
    """Rate-limit response headers → readings.

    Anthropic's subscription headers (``anthropic-ratelimit-unified-5h-utilization`` 0–1,
    ``-5h-reset`` epoch s, ``-5h-status``; ``7d`` likewise) and Codex's
    (``x-codex-primary-used-percent``, ``-window-minutes``, ``-reset-at``; ``secondary``).
    """
    h = {k.lower(): v for k, v in headers.items()}
    out = []
    for short, kind in (("5h", "five_hour"), ("7d", "seven_day")):
        prefix = f"anthropic-ratelimit-unified-{short}-"
        used, status = as_number(h.get(prefix + "utilization")), h.get(prefix + "status")
        if used is None and status is None:
            continue
        out.append(LimitSnapshot(entry, window_of(kind), now,
                                 used_percent=used * 100 if used is not None else None,
                                 resets_at_ms=_epoch_ms(h.get(prefix + "reset")),
                                 status=status, origin="anthropic headers"))
    for slot in ("primary", "secondary"):
        prefix = f"x-codex-{slot}-"
        used = as_number(h.get(prefix + "used-percent"))
        if used is None:
            continue
        minutes = as_number(h.get(prefix + "window-minutes"))
        mins = int(minutes) if minutes else None
        out.append(LimitSnapshot(entry, window_of(None, mins), now, used_percent=used,
                                 resets_at_ms=_epoch_ms(h.get(prefix + "reset-at")),
                                 window_minutes=mins, origin="codex headers"))
    return out


def current(readings: Iterable[LimitSnapshot], now: int) -> dict[WindowKind, LimitSnapshot]:
    """The newest reading per window whose window has not reset since it was taken."""
    best: dict[WindowKind, LimitSnapshot] = {}
    for r in readings:
        if r.resets_at_ms is not None and r.resets_at_ms <= now:
            continue  # the window has reset since: the reading no longer holds
        length = window_length_ms(r.window, r.window_minutes)
        if r.resets_at_ms is None and length is not None and now - r.observed_ms > length:
            continue
        old = best.get(r.window)
        if old is None or r.observed_ms >= old.observed_ms:
            best[r.window] = r
    return best


class LimitBook:
    """The ``limit_snapshots`` table: written through the writer, read through the store."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.store = store
        self.writer = writer

    async def record(self, readings: Iterable[LimitSnapshot]) -> int:
        """Store new readings (a repeat of the latest identical one is skipped); returns how many."""
        fresh = [r for r in readings if not await self._repeats(r)]
        if fresh:
            await self.writer.write(WriteOp("", statements=[
                ("INSERT INTO limit_snapshots (entry, window, observed_ms, used_percent,"
                 " resets_at_ms, window_minutes, status, origin) VALUES (?,?,?,?,?,?,?,?)",
                 (r.entry, r.window, r.observed_ms, r.used_percent, r.resets_at_ms,
                  r.window_minutes, r.status, r.origin)) for r in fresh]))
        return len(fresh)

    async def _repeats(self, r: LimitSnapshot) -> bool:
        """Same figures as the entry's latest reading of that window from the same origin."""
        async with self.store.conn.execute(
                "SELECT used_percent, resets_at_ms, status, observed_ms FROM limit_snapshots"
                " WHERE entry=? AND window=? AND origin=? ORDER BY observed_ms DESC LIMIT 1",
                (r.entry, r.window, r.origin)) as cur:
            last = await cur.fetchone()
        # a repeat within a minute adds nothing; after that it shows the reading is still fresh
        return last is not None and tuple(last[:3]) == (
            r.used_percent, r.resets_at_ms, r.status) and r.observed_ms - last[3] < 60_000

    async def history(self, entry: str, since_ms: int = 0) -> list[LimitSnapshot]:
        """Every reading of ``entry`` since ``since_ms``, oldest first."""
        await self.writer.flush()
        async with self.store.conn.execute(
                "SELECT entry, window, observed_ms, used_percent, resets_at_ms, window_minutes,"
                " status, origin FROM limit_snapshots WHERE entry=? AND observed_ms>=?"
                " ORDER BY observed_ms", (entry, since_ms)) as cur:
            rows = await cur.fetchall()
        return [LimitSnapshot(e, window_of(w), o, used_percent=u, resets_at_ms=r,
                              window_minutes=m, status=s, origin=g)
                for e, w, o, u, r, m, s, g in rows]

    async def session_history(self, entry: str, session_id: str) -> list[LimitSnapshot]:
        """The readings one session's runs on ``entry`` reported, oldest first — read from
        its own events, so another session's readings of the same entry never count (a
        simulated account's readings belong to the demo run that made them up)."""
        await self.writer.flush()
        out = []
        for payload in await self.store.sessions.event_payloads(session_id, entry, "quota_update"):
            ev = stored_event(payload)
            if not isinstance(ev, QuotaUpdate):
                continue
            out.append(LimitSnapshot(
                entry, window_of(ev.window), int(ev.ts.timestamp() * 1000),
                used_percent=ev.used_percent,
                resets_at_ms=int(ev.resets_at.timestamp() * 1000) if ev.resets_at else None,
                window_minutes=ev.window_minutes, status=ev.status, origin=ev.origin))
        return out

    async def prune(self, now: int | None = None) -> None:
        cutoff = (now or now_ms()) - KEEP_MS
        await self.writer.write(WriteOp("", statements=[
            ("DELETE FROM limit_snapshots WHERE observed_ms < ?", (cutoff,))]))
