"""The groups of session states: every state in exactly one of active and final; waiting is
active (Relay resumes it) but not working (no agent is at it)."""

from __future__ import annotations

from typing import get_args

from relay.core.models import SessionRow
from relay.core.states import ACTIVE_STATES, FINAL_STATES, WORKING_STATES, SessionState


def test_every_state_is_either_active_or_final() -> None:
    every = set(get_args(SessionState))
    assert set(ACTIVE_STATES) | set(FINAL_STATES) == every
    assert not set(ACTIVE_STATES) & set(FINAL_STATES)


def test_waiting_is_active_but_not_working() -> None:
    assert "waiting" in ACTIVE_STATES
    assert "waiting" not in WORKING_STATES
    assert "waiting" not in FINAL_STATES
    assert set(WORKING_STATES) == set(ACTIVE_STATES) - {"waiting"}


def test_a_row_is_finished_exactly_in_the_final_states() -> None:
    for state in get_args(SessionState):
        row = SessionRow.model_construct(state=state)  # type: ignore[call-arg]  # the state alone
        assert row.finished is (state in FINAL_STATES)
