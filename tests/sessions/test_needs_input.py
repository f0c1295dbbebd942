"""Needs input: an agent's question becomes a session state with options, answered by the
user (from this process or another) or by the approval policy; answered or withdrawn, it
disappears everywhere."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.bus import Subscription
from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.core.events import EventRecord, InputOption, InputWithdrawn, NeedsInput
from relay.core.models import SessionSpec
from relay.core.present import end_state
from relay.engine.engine import Engine
from relay.runtimes.demo import NOTES_FILE
from relay.sessions.approvals import policy_choice


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def _asked(sub: Subscription, session_id: str) -> NeedsInput:
    async for record in sub:
        if record.session_id == session_id and isinstance(record.event, NeedsInput):
            return record.event
    raise AssertionError("the bus closed before the question")


def _kinds(records: list[EventRecord]) -> list[str]:
    return [r.event.kind for r in records]


async def test_the_user_allows_and_the_agent_goes_on(engine: Engine, git_repo: Path) -> None:
    sub = engine.bus.subscribe()
    session_id = await engine.start_session(SessionSpec(repo=git_repo, task="notes",
                                                        runtime="demo", demo_ask=True,
                                                        approvals="ask"))
    question = await _asked(sub, session_id)
    sub.close()

    assert question.about == "permission"
    assert question.tool == "write_file"
    assert [(o.id, o.kind) for o in question.options] == [("allow", "allow_once"),
                                                          ("reject", "reject_once")]
    row = await engine.get_session(session_id)
    assert row.state == "needs_input"
    assert [q.request_id for q in await engine.open_questions(session_id)] == [question.request_id]
    with pytest.raises(RelayError, match="not an answer"):
        await engine.answer_input(session_id, question.request_id, "maybe")

    said = await engine.answer_input(session_id, question.request_id, "allow")
    row = await engine.wait_session(session_id)

    assert said == f"Answered {question.request_id}: Allow once"
    assert row.state == "completed", row.reason
    assert row.workdir
    assert (Path(row.workdir) / NOTES_FILE).is_file()
    records = await engine.session_events(session_id)
    withdrawn = [r.event for r in records if isinstance(r.event, InputWithdrawn)]
    assert [(w.request_id, w.reason) for w in withdrawn] == [
        (question.request_id, "answered: Allow once")]
    states = [r.event.state for r in records if r.event.kind == "state_changed"]
    assert states.index("needs_input") < len(states) - 1
    assert states[states.index("needs_input") + 1] == "running"
    assert await engine.open_questions(session_id) == []


async def test_a_rejected_write_writes_nothing(engine: Engine, git_repo: Path) -> None:
    sub = engine.bus.subscribe()
    session_id = await engine.start_session(SessionSpec(repo=git_repo, task="notes",
                                                        runtime="demo", demo_ask=True,
                                                        approvals="ask"))
    question = await _asked(sub, session_id)
    sub.close()

    await engine.answer_input(session_id, question.request_id, "reject")
    row = await engine.wait_session(session_id)

    assert row.state == "completed"
    assert row.workdir
    assert not (Path(row.workdir) / NOTES_FILE).exists()
    kinds = _kinds(await engine.session_events(session_id))
    assert "permission_denied" in kinds


async def test_the_deny_policy_answers_without_asking(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="notes", runtime="demo",
                                               demo_ask=True, approvals="deny"))

    records = await engine.session_events(row.id)
    states = [r.event.state for r in records if r.event.kind == "state_changed"]
    assert "needs_input" not in states
    withdrawn = [r.event for r in records if isinstance(r.event, InputWithdrawn)]
    assert len(withdrawn) == 1
    assert withdrawn[0].reason == "answered by the deny policy: Reject"
    assert row.workdir
    assert not (Path(row.workdir) / NOTES_FILE).exists()
    # the refused write is in the end state: stored, and carried by the final state change
    assert (row.state, row.refused_calls) == ("completed", 1)
    final = [r.event for r in records if r.event.kind == "state_changed"][-1]
    assert (final.state, final.refused_calls) == ("completed", 1)
    assert end_state(row.state, row.refused_calls) == "completed · 1 tool call refused"


async def test_stopping_a_session_that_asks_withdraws_the_question(engine: Engine,
                                                                   git_repo: Path) -> None:
    sub = engine.bus.subscribe()
    session_id = await engine.start_session(SessionSpec(repo=git_repo, task="notes",
                                                        runtime="demo", demo_ask=True,
                                                        approvals="ask"))
    question = await _asked(sub, session_id)
    sub.close()

    await engine.cancel_session(session_id)
    row = await engine.wait_session(session_id)

    assert row.state == "cancelled"
    records = await engine.session_events(session_id)
    withdrawn = [r.event for r in records if isinstance(r.event, InputWithdrawn)]
    assert [w.request_id for w in withdrawn] == [question.request_id]
    with pytest.raises(RelayError, match="questions are closed"):
        await engine.answer_input(session_id, question.request_id, "allow")


def _question(read_only: bool | None, about: str = "permission") -> NeedsInput:
    return NeedsInput(request_id="r", prompt="?", about=about, read_only=read_only,
                      options=[InputOption(id="a2", label="Always", kind="allow_always"),
                               InputOption(id="a1", label="Once", kind="allow_once"),
                               InputOption(id="r1", label="No", kind="reject_once")])


@pytest.mark.parametrize(("policy", "read_only", "about", "picked"), [
    ("ask", True, "permission", None),
    ("read_only", True, "permission", "a1"),      # the narrowest allow
    ("read_only", False, "permission", None),
    ("read_only", None, "permission", None),      # unknown is not read-only
    ("deny", False, "permission", "r1"),
    ("deny", True, "question", None),             # a question needs a person
])
def test_policies_pick_by_option_kind(policy: str, read_only: bool | None, about: str,
                                      picked: str | None) -> None:
    choice = policy_choice(policy, _question(read_only, about))  # type: ignore[arg-type]
    assert (choice.id if choice else None) == picked
