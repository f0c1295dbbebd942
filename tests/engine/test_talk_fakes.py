"""Talking to one-shot agent CLIs (the fake codex and gemini replaying real captures): the
queue waits for the turn, a follow-up resumes the same conversation, steer is refused with
what to do instead; review and board comments travel through the inbox."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from relay.core.errors import UnsupportedCapabilityError
from relay.core.events import StateChanged
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.sessions.talking import STEER_HINT
from tests.engine.talk_helpers import said, until_event

#: a codex in front of the fake one: a first run (not ``exec resume``) waits for the gate
#: file before the fake replays its capture — a turn as slow as the test needs
_GATED = """#!{python}
import os, sys, time
gate = os.environ.get("RELAY_TEST_GATE", "")
if gate and "resume" not in sys.argv:
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
os.execv({real!r}, [{real!r}, *sys.argv[1:]])
"""


@pytest.fixture
def fake_log(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    return log


@pytest.fixture
def gate(fake_log: Path, fakes_on_path: Path, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file that lets the gated codex's first turn finish."""
    bin_dir = tmp_path / "gated-bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "codex"
    wrapper.write_text(_GATED.format(python=sys.executable, real=str(fakes_on_path / "codex")))
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    path = tmp_path / "gate"
    monkeypatch.setenv("RELAY_TEST_GATE", str(path))
    return path


def _calls(log: Path, name: str) -> list[list[str]]:
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [e["argv"] for e in entries if Path(e["argv"][0]).name == name
            and "--version" not in e["argv"]]


async def _busy(engine: Engine, session_id: str) -> None:
    """Until the session's turn runs (the gated codex holds it)."""
    await until_event(engine, session_id,
                      lambda e: isinstance(e, StateChanged) and e.state == "running")
    assert (await engine.talk.abilities(session_id)).busy


async def test_queued_during_a_slow_codex_turn_go_once_after_it(
        engine: Engine, git_repo: Path, gate: Path, fake_log: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="say hi", runtime="codex"))
    await _busy(engine, sid)
    first = await engine.talk.say(sid, "Then list the files.")
    second = await engine.talk.say(sid, "And count them.")
    assert (first.state, second.state) == ("queued", "queued")
    gate.touch()  # the turn ends
    row = await engine.wait_session(sid)
    assert row.state == "completed", row.reason

    calls = _calls(fake_log, "codex")
    assert len(calls) == 2  # the task, then the two messages as one prompt — once
    assert "resume" not in calls[0]
    resumed = calls[1]
    assert resumed[1:3] == ["exec", "resume"]
    assert row.agent_session_id in resumed  # the same thread
    prompt = "\n".join(resumed)
    assert "Then list the files.\n\nAnd count them." in prompt
    runs = await engine.runs(sid)
    assert [r.outcome for r in runs] == ["completed", "completed"]
    assert [(m.state, m.how, m.run_id) for m in await engine.talk.messages(sid)] == [
        ("delivered", "resume", runs[1].id)] * 2


async def test_steer_is_refused_on_codex_with_what_to_do_instead(
        engine: Engine, git_repo: Path, gate: Path, fake_log: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="say hi", runtime="codex"))
    await _busy(engine, sid)
    abilities = await engine.talk.abilities(sid)
    assert (abilities.steer, abilities.interrupt) == ("no", "partial")
    assert STEER_HINT in abilities.why_not["steer"]
    with pytest.raises(UnsupportedCapabilityError) as refused:
        await engine.talk.say(sid, "Faster, please.", mode="now")
    assert refused.value.hint == STEER_HINT
    assert refused.value.capability == "steer"
    assert await engine.talk.messages(sid) == []  # nothing stored, nothing sent
    gate.touch()
    await engine.wait_session(sid)
    assert len(_calls(fake_log, "codex")) == 1


@pytest.mark.parametrize("runtime", ["codex", "gemini"])
async def test_a_follow_up_on_a_finished_session_resumes_its_conversation(
        engine: Engine, git_repo: Path, fake_log: Path, runtime: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="say hi", runtime=runtime))
    assert row.state == "completed", row.reason
    assert row.agent_session_id
    sent = await engine.talk.say(row.id, "Now say goodbye.", source="tui")
    assert (sent.state, sent.how) == ("delivered", "resume")
    final = await engine.wait_session(row.id)
    runs = await engine.runs(row.id)
    assert final.state == "completed", final.reason
    assert len(runs) == 2
    assert sent.run_id == runs[1].id
    calls = _calls(fake_log, runtime)
    assert len(calls) == 2
    follow = calls[1]
    assert row.agent_session_id in follow  # the runtime's own resume of that conversation
    assert any("Now say goodbye." in arg for arg in follow)


async def test_without_a_conversation_to_resume_the_brief_carries_the_message(
        engine: Engine, git_repo: Path, fake_log: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="say hi", runtime="codex"))
    # as if its agent never started a conversation Relay could resume
    await engine.store.conn.execute("UPDATE sessions SET agent_session_id=NULL WHERE id=?",
                                    (row.id,))
    await engine.store.conn.commit()
    sent = await engine.talk.say(row.id, "Add a README.")
    assert (sent.state, sent.how) == ("delivered", "brief")
    await engine.wait_session(row.id)
    follow = _calls(fake_log, "codex")[1]
    assert "resume" not in follow
    prompt = "\n".join(follow)
    assert "Continuation contract" in prompt
    assert prompt.rstrip().endswith("Add a README.")


async def test_a_review_comment_travels_through_the_inbox(engine: Engine,
                                                          git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    sha = (await engine.history.timeline(row.id)).commits[-1].sha
    comment = await engine.review.comment(row.id, sha, "RELAY_DEMO_NOTES.md", 1,
                                          "Use a title case heading.")
    assert comment.state == "sent"
    message = await engine.inbox.get(row.id, comment.id)  # one id, one mechanism
    assert (message.kind, message.source, message.how) == ("review", "review", "resume")
    await engine.wait_session(row.id)
    runs = await engine.runs(row.id)
    assert message.run_id == runs[1].id
    text = await said(engine, row.id, runs[1].id)
    assert "RELAY_DEMO_NOTES.md line 1" in text
    assert "Use a title case heading." in text


async def test_a_board_comment_reaches_the_linked_relay_session(engine: Engine,
                                                                git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    task = await engine.board.create_task(str(git_repo), "Write the notes", session=row.id)
    comment = await engine.board.comment(task.key, "Mention the date too.")
    await engine.wait_session(row.id)
    board = [m for m in await engine.talk.messages(row.id) if m.kind == "board"]
    assert [(m.text, m.state, m.how, m.source) for m in board] == [
        ("Mention the date too.", "delivered", "resume", "board")]
    stored = await engine.board.comments(task.key)
    assert [(c.id, c.delivered_to) for c in stored] == [(comment.id, row.id)]
    runs = await engine.runs(row.id)
    text = await said(engine, row.id, runs[-1].id)
    assert task.key in text
    assert "Mention the date too." in text
