"""Forks of a Claude Code session (the fake ``claude``): the runtime has FORK, so the fork's
first run resumes a copy of the parent's conversation — ``--resume <parent> --fork-session``,
cut with ``--resume-session-at`` when it carries fewer turns than the parent had."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.claude import ClaudeAdapter


@pytest.fixture
def fake_log(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "b_write_tool")
    monkeypatch.setenv("RELAY_FAKE_STDIN_LOG", str(tmp_path / "stdin.log"))
    return log


def stdin_lines(log: Path) -> list[str]:
    """What the fake read on stdin, line by line (the prompts: stream-json input)."""
    path = log.with_name("stdin.log")
    return [json.dumps(json.loads(x)["line"]) for x in path.read_text().splitlines()]


def claude_argvs(log: Path) -> list[list[str]]:
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    return [[str(a) for a in c["argv"]] for c in calls if Path(c["argv"][0]).name == "claude"]


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


async def four_turns(engine: Engine, repo: Path) -> str:
    row = await engine.run_session(SessionSpec(repo=repo, task="write a file", runtime="claude"))
    assert row.state == "completed", row.reason
    for n in (2, 3, 4):
        await engine.continue_session(row.id, f"follow-up {n}")
        row = await engine.wait_session(row.id)
        assert row.state == "completed", row.reason
    return row.id


async def test_a_fork_at_turn_two_of_four_resumes_a_copy_cut_at_the_anchor(
        engine: Engine, git_repo: Path, fake_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = await four_turns(engine, git_repo)
    row = await engine.get_session(parent)
    asked: list[tuple[str, int, Path]] = []

    def anchor(cls: type, agent_session_id: str, turns: int, cwd: Path,
               env: Mapping[str, str]) -> str | None:
        asked.append((agent_session_id, turns, cwd))
        return "0b7c6a4e-anchor-of-turn-2"

    monkeypatch.setattr(ClaudeAdapter, "fork_anchor", classmethod(anchor))
    ends = [r for r in await engine.session_events(parent)
            if r.event.kind == "turn_completed" and r.event.result_text is not None]
    assert len(ends) == 4
    calls_before, said_before = len(claude_argvs(fake_log)), len(stdin_lines(fake_log))

    result = await engine.talk.fork(parent, at_event=ends[1].id, prompt="now try it in Go")

    assert (result.how, result.turns) == ("conversation", 2)
    assert asked == [(row.agent_session_id, 2, Path(row.workdir or ""))]
    origin = (await engine.session_spec(result.session_id)).fork_of
    assert origin is not None
    assert (origin.agent_session_id, origin.runtime, origin.resume_at) == (
        row.agent_session_id, "claude", "0b7c6a4e-anchor-of-turn-2")
    fork = await engine.wait_session(result.session_id)
    assert fork.state == "completed", fork.reason
    first = claude_argvs(fake_log)[calls_before]
    assert option(first, "--resume") == row.agent_session_id
    assert "--fork-session" in first
    assert option(first, "--resume-session-at") == "0b7c6a4e-anchor-of-turn-2"
    told = stdin_lines(fake_log)[said_before:]
    assert told
    assert "now try it in Go" in told[0]
    assert fork.branch == f"relay/{fork.id}"
    assert fork.workdir != row.workdir
    assert (await engine.get_session(parent)).agent_session_id == row.agent_session_id


async def test_a_fork_of_every_turn_copies_the_whole_conversation(
        engine: Engine, git_repo: Path, fake_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = await engine.run_session(SessionSpec(repo=git_repo, task="write a file",
                                                  runtime="claude"))
    asked: list[int] = []
    monkeypatch.setattr(ClaudeAdapter, "fork_anchor",
                        classmethod(lambda cls, sid, turns, cwd, env: asked.append(turns)))
    calls_before = len(claude_argvs(fake_log))

    result = await engine.talk.fork(parent.id)

    assert (result.how, result.turns) == ("conversation", 1)
    assert asked == []  # all of it: no cut to ask the runtime for
    assert (await engine.wait_session(result.session_id)).state == "completed"
    first = claude_argvs(fake_log)[calls_before]
    assert option(first, "--resume") == parent.agent_session_id
    assert "--fork-session" in first
    assert "--resume-session-at" not in first


async def test_without_an_anchor_the_fork_takes_the_brief(
        engine: Engine, git_repo: Path, fake_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = await four_turns(engine, git_repo)
    monkeypatch.setattr(ClaudeAdapter, "fork_anchor",
                        classmethod(lambda cls, sid, turns, cwd, env: None))
    ends = [r for r in await engine.session_events(parent)
            if r.event.kind == "turn_completed" and r.event.result_text is not None]
    calls_before = len(claude_argvs(fake_log))

    result = await engine.talk.fork(parent, at_event=ends[0].id)

    assert (result.how, result.turns) == ("brief", 1)
    assert (await engine.wait_session(result.session_id)).state == "completed"
    first = claude_argvs(fake_log)[calls_before]
    assert "--resume" not in first
    assert "--fork-session" not in first
    brief = option(first, "--append-system-prompt-file")  # the handoff receiver's way
    assert brief is not None
    assert "Continuation contract" in Path(brief).read_text()
