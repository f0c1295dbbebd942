"""A session's states and their groups, named once.

Kept apart from :mod:`relay.core.events` (pydantic) so the quick CLI paths can use them
without importing the event models.
"""

from __future__ import annotations

from typing import Literal

SessionState = Literal[
    "pending", "starting", "running", "needs_input", "waiting", "completed", "failed",
    "cancelled", "interrupted",
]
# The groups of session states, named once (tests/core/test_state_groups.py). Every state is
# either active or final.
#: not finished: something will still happen to it (``waiting`` included: Relay resumes it at
#: its limit's reset, and it can be stopped or handed off like a running one)
ACTIVE_STATES: tuple[SessionState, ...] = ("pending", "starting", "running", "needs_input", "waiting")
#: active and not waiting for a reset: an agent is, or is about to be, at work
WORKING_STATES: tuple[SessionState, ...] = ("pending", "starting", "running", "needs_input")
#: finished: nothing more happens unless the user continues it
FINAL_STATES: tuple[SessionState, ...] = ("completed", "failed", "cancelled", "interrupted")
