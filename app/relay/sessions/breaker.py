"""Circuit breakers per chain entry (``provider[:account]``), shared by every Relay process.

After a terminal quota error (usage limit, billing quota) the entry's breaker
**opens** until the limit's reset: no session launches new work on that
account, it goes to the next chain entry instead (or waits). Once the reset
has passed the breaker is **half open**: the next run on the account is the
probe — its first sign of work closes the breaker, another limit opens it
again. A limit with no known reset keeps the breaker open for
:data:`UNKNOWN_RESET_HOLD`, then probes.

The state lives in the ``breakers`` table, so a window and a ``relay-cli run``
in a terminal agree about which accounts are out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from relay.core.store.db import Store, from_ms, now_ms
from relay.core.store.writer import EventWriter, WriteOp

UNKNOWN_RESET_HOLD = timedelta(hours=1)

BreakerState = Literal["open", "half_open"]


@dataclass(frozen=True, slots=True)
class Breaker:
    entry: str
    state: BreakerState
    kind: str
    until: datetime | None
    reason: str | None
    opened_at: datetime


class CircuitBreakers:
    """Reads through the store; writes through the engine's writer."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.store = store
        self.writer = writer

    async def trip(self, session_id: str, entry: str, kind: str, until: datetime | None,
                   reason: str, *, now: datetime) -> None:
        """Open ``entry``'s breaker until ``until`` (its reset)."""
        hold = until if until is not None else now + UNKNOWN_RESET_HOLD
        await self.writer.write(WriteOp(session_id, statements=[(
            "INSERT INTO breakers (entry, kind, until_ms, reason, opened_ms) VALUES (?,?,?,?,?)"
            " ON CONFLICT(entry) DO UPDATE SET kind=excluded.kind, until_ms=excluded.until_ms,"
            " reason=excluded.reason, opened_ms=excluded.opened_ms",
            (entry, kind, int(hold.timestamp() * 1000), reason, now_ms()))]))

    async def reset(self, session_id: str, entry: str) -> None:
        """The probe worked (or the user cleared it): close the breaker."""
        await self.writer.write(WriteOp(session_id, statements=[
            ("DELETE FROM breakers WHERE entry=?", (entry,))]))

    async def get(self, entry: str, *, now: datetime) -> Breaker | None:
        """``entry``'s breaker, or None when it is closed."""
        for breaker in await self.all(now=now):
            if breaker.entry == entry:
                return breaker
        return None

    async def all(self, *, now: datetime) -> list[Breaker]:
        await self.writer.flush()
        async with self.store.conn.execute(
                "SELECT entry, kind, until_ms, reason, opened_ms FROM breakers ORDER BY entry") as cur:
            rows = await cur.fetchall()
        out = []
        for entry, kind, until_ms, reason, opened_ms in rows:
            until = from_ms(until_ms) if until_ms is not None else None
            state: BreakerState = "open" if until is not None and until > now else "half_open"
            out.append(Breaker(entry, state, kind, until, reason, from_ms(opened_ms)))
        return out
