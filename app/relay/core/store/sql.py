"""What the store's modules share: a statement, and the tables' times.

A :data:`Statement` is one SQL text and its parameters, as a table's owner builds it and
the :class:`~relay.core.store.writer.EventWriter` commits it. Times are Unix milliseconds
in the tables and aware UTC datetimes in the rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

Statement = tuple[str, Sequence[Any]]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)
