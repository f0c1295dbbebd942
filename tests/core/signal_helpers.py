"""The fixed clock of the signal tests that feed wordings and fields in directly."""

from __future__ import annotations

from datetime import UTC, datetime

NOW = datetime(2026, 11, 30, 10, 5, tzinfo=UTC)  # a Monday; 11:05 in Rome, 05:05 in New York


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
       second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
