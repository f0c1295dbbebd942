"""How handoffs, waits and hand-off targets read in the window.

Plain Python (no Qt): the step titles of the handoff state machine, clock
times, the countdown of a session waiting for a limit's reset, and the
parsing of the "hand off to" field.
"""

from __future__ import annotations

import re
from datetime import datetime

from relay.core.events import HandoffState

#: the states of a handoff that went well, in order (``failed`` may follow any of them).
STEPS: tuple[HandoffState, ...] = (
    "pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done")
STEP_TITLES: dict[HandoffState, str] = {
    "pausing": "Pausing", "snapshotted": "Snapshot", "envelope_built": "Contract",
    "dispatched": "Dispatched", "resuming": "Resuming", "done": "Done", "failed": "Failed",
}
#: ``provider`` or ``provider:account`` (the account may hold dots, @ and dashes).
_TARGET = re.compile(r"[A-Za-z0-9_-]+(?::[^\s:]+)?")


def rank(state: HandoffState | None) -> int:
    """Position of ``state`` in the machine (-1 before it begins; ``failed`` last)."""
    if state is None:
        return -1
    return len(STEPS) if state == "failed" else STEPS.index(state)


def clock(ts: datetime) -> str:
    """A time of day in local time, to the second."""
    return ts.astimezone().strftime("%H:%M:%S")


def countdown(until: datetime, now: datetime) -> str:
    """Time left as ``H:MM:SS`` (an hour or more) or ``M:SS``; never negative."""
    left = max(int((until - now).total_seconds() + 0.999), 0)  # 0.2 s left still reads 0:01
    hours, rest = divmod(left, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def resumes_in(until: datetime, now: datetime) -> str:
    """'resumes in 4:59' while the wait lasts, 'resuming…' once it is over."""
    return f"resumes in {countdown(until, now)}" if until > now else "resuming…"


def wait_line(until: datetime, now: datetime) -> str:
    """The session view's line for a session waiting for a limit's reset."""
    return (f"Waiting for the limit's reset — {resumes_in(until, now)} "
            f"(at {until.astimezone():%H:%M:%S}). Hand off now to move on at once.")


def parse_target(text: str) -> str | None:
    """The hand-off target typed by the user: ``None`` (next in the chain) or an entry.

    Raises:
        ValueError: not of the form ``provider`` or ``provider:account``.
    """
    entry = text.strip()
    if not entry:
        return None
    if entry.endswith(":"):
        raise ValueError(f"{entry!r}: name the account after the colon, or leave it out.")
    if not _TARGET.fullmatch(entry):
        raise ValueError(f"{entry!r} is not provider or provider:account (e.g. codex:work).")
    return entry
