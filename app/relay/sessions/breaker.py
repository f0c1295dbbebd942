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

**A simulated entry's breaker** (the demo's ``demo:primary``…) binds only the session whose
simulated limit opened it: its row is written like any other (the wallet shows it while
the demo runs), but another session — a later demo, in this process or another — looks
straight past it, and its first run on the entry closes it. So each demo run starts from
fresh simulated accounts, however often it is run in one data folder. A real account's
breaker is shared, and ``relay-cli accounts resume PROVIDER [LABEL]`` (:func:`resume_command`)
closes it by hand once the account is back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from relay.core.models import simulated_entry
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
        #: simulated entry → the session whose simulated limit opened its breaker
        self._simulated_by: dict[str, str] = {}

    async def trip(self, session_id: str, entry: str, kind: str, until: datetime | None,
                   reason: str, *, now: datetime) -> None:
        """Open ``entry``'s breaker until ``until`` (its reset); a simulated entry's binds
        ``session_id`` only (see the module docstring)."""
        if simulated_entry(entry):
            self._simulated_by[entry] = session_id
        hold = until if until is not None else now + UNKNOWN_RESET_HOLD
        await self.writer.write(WriteOp(session_id, statements=[(
            "INSERT INTO breakers (entry, kind, until_ms, reason, opened_ms) VALUES (?,?,?,?,?)"
            " ON CONFLICT(entry) DO UPDATE SET kind=excluded.kind, until_ms=excluded.until_ms,"
            " reason=excluded.reason, opened_ms=excluded.opened_ms",
            (entry, kind, int(hold.timestamp() * 1000), reason, now_ms()))]))

    async def reset(self, session_id: str, entry: str) -> None:
        """The probe worked (or the user cleared it): close the breaker."""
        self._simulated_by.pop(entry, None)
        await self.writer.write(WriteOp(session_id, statements=[
            ("DELETE FROM breakers WHERE entry=?", (entry,))]))

    async def get(self, entry: str, *, now: datetime,
                  session_id: str | None = None) -> Breaker | None:
        """``entry``'s breaker, or None when it is closed — or, asked for ``session_id``,
        when it is a simulated entry's that another session's simulated limit opened."""
        if (session_id is not None and simulated_entry(entry)
                and self._simulated_by.get(entry) != session_id):
            return None
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


def resume_command(entry: str) -> str:
    """The command that closes ``entry``'s breaker by hand (``relay-cli accounts resume``)."""
    provider, _, label = entry.partition(":")
    return f"relay-cli accounts resume {provider}" + (f" {label}" if label else "")
