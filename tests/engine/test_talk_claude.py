"""Talking to Claude through the engine with the fake claude (stream-json input replayed
like 2.1.197: docs/claude-talk.md): one process carries the queued messages as its next
turn, "interrupt & send" cuts a slow turn short and the message goes next in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.engine.talk_helpers import busy


@pytest.fixture
def stdin_log(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "stdin.jsonl"
    monkeypatch.setenv("RELAY_FAKE_STDIN_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_LOG", str(tmp_path / "fake.log"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_TURN_DELAY", "30,0")  # a slow first turn
    return log


def written(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def claude_runs(tmp_path: Path) -> int:
    return sum(1 for line in (tmp_path / "fake.log").read_text().splitlines()
               if "--version" not in json.loads(line)["argv"])


async def test_interrupt_and_send_goes_next_in_the_same_process(
        engine: Engine, git_repo: Path, stdin_log: Path, tmp_path: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="think slowly",
                                                 runtime="claude", worktree=False))
    await busy(engine, sid)
    sent = await engine.talk.say(sid, "answer briefly instead", mode="interrupt")
    row = await engine.wait_session(sid)
    assert row.state == "completed", row.reason
    lines = [w["line"] for w in written(stdin_log)]
    assert [line["type"] for line in lines] == ["user", "control_request", "user"]
    assert "answer briefly instead" in lines[2]["message"]["content"]
    (message,) = await engine.talk.messages(sid)
    assert (message.id, message.state, message.how) == (sent.id, "delivered", "turn")
    assert claude_runs(tmp_path) == 1


async def test_queued_during_a_slow_turn_go_as_one_next_turn(
        engine: Engine, git_repo: Path, stdin_log: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_TURN_DELAY", "2,0")
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="read the code",
                                                 runtime="claude", worktree=False))
    await busy(engine, sid)
    await engine.talk.say(sid, "also the README")
    await engine.talk.say(sid, "and the licence")
    row = await engine.wait_session(sid)
    assert row.state == "completed", row.reason
    turns = [w for w in written(stdin_log) if w["line"]["type"] == "user"]
    assert len(turns) == 2
    assert turns[1]["during_turn"] is False  # given at the turn boundary, not mid-turn
    second = turns[1]["line"]["message"]["content"]
    assert second.index("also the README") < second.index("and the licence")
    assert {m.how for m in await engine.talk.messages(sid)} == {"turn"}
    assert claude_runs(tmp_path) == 1


async def test_a_bare_interrupt_leaves_the_session_interrupted(
        engine: Engine, git_repo: Path, stdin_log: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="think slowly",
                                                 runtime="claude", worktree=False))
    await busy(engine, sid)
    await engine.talk.interrupt(sid)
    row = await engine.wait_session(sid)
    assert row.state == "interrupted", row.reason
