"""Review comments reach the session's agent as its next instruction, never mid-turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.core.models import SessionSpec
from relay.engine.engine import Engine


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def test_a_comment_reaches_the_fake_agent_as_its_next_input(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "b_write_tool")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="write a file", runtime="claude"))
    assert row.state == "completed", row.reason
    line = await engine.history.timeline(row.id)
    commit = line.commits[-1]
    files = await engine.history.commit_diff(commit.sha)
    path = files[0].path
    first_added = next(ln for h in files[0].hunks for ln in h.lines if ln.kind == "add")
    assert first_added.new_no is not None

    comment = await engine.review.comment(row.id, commit.sha[:8], path, first_added.new_no,
                                          "Please name this file in the README too.")
    assert comment.state == "sent"
    assert comment.sha == commit.sha
    assert comment.excerpt == first_added.text.strip()
    final = await engine.wait_session(row.id)

    calls = [json.loads(x) for x in log.read_text().splitlines()]
    claude_calls = [c for c in calls if Path(c["argv"][0]).name == "claude"]
    assert len(claude_calls) == 2
    second = claude_calls[1]["argv"]
    assert second[second.index("--resume") + 1] == row.agent_session_id  # the same conversation
    prompt = claude_calls[1]["prompt"]  # stream-json input: the first stdin line
    assert "Please name this file in the README too." in prompt
    assert f"{path} line {first_added.new_no}" in prompt
    assert final.state == "completed"
    # the thread stays with the commit
    on_commit = await engine.review.comments(row.id, commit.sha)
    assert [(c.path, c.line, c.state) for c in on_commit] == [(path, first_added.new_no, "sent")]
    timeline = await engine.history.timeline(row.id)
    assert any(e.kind == "review" and e.sha == commit.sha for e in timeline.entries)


async def test_a_comment_waits_while_the_agent_is_busy(relay_home: Path, vault_env: None,
                                                       git_repo: Path) -> None:
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:
        first = await engine.run_session(SessionSpec(repo=git_repo, task="write notes",
                                                      runtime="demo"))
        sha = (await engine.history.timeline(first.id)).commits[-1].sha
        # a slow second run: the agent is busy when the comment arrives
        engine.config = load_config(demo_step_delay=0.2)
        sub = engine.bus.subscribe()
        await engine.continue_session(first.id, "keep going")
        async for record in sub:  # the run is under way
            if record.session_id == first.id and record.event.kind == "assistant_text":
                break

        comment = await engine.review.comment(first.id, sha, "RELAY_DEMO_NOTES.md", 1,
                                              "Use a title case heading.")
        assert comment.state == "queued"
        assert engine.is_running_here(first.id)

        started: list[str] = []
        async for record in sub:  # the busy run ends, then the comment's run starts
            ev = record.event
            if record.session_id == first.id and ev.kind == "session_started":
                started.append(record.run_id or "")
                break
        sub.close()
        while engine.is_running_here(first.id):  # the comment's own run
            await engine.wait_session(first.id)
        sent = (await engine.review.comments(first.id))[0]
        assert sent.state == "sent"
        assert sent.sent_at is not None
        runs = await engine.runs(first.id)
        assert len(runs) == 3  # the task, "keep going", the comment — none cut short
        assert [r.outcome for r in runs] == ["completed"] * 3
        assert started == [runs[2].id]
    finally:
        await engine.close()


async def test_comments_are_checked_and_scrubbed(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    sha = (await engine.history.timeline(row.id)).commits[-1].sha
    with pytest.raises(RelayError, match="empty"):
        await engine.review.comment(row.id, sha, "RELAY_DEMO_NOTES.md", 1, "   ")
    with pytest.raises(RelayError, match="not a line number"):
        await engine.review.comment(row.id, sha, "RELAY_DEMO_NOTES.md", 0, "x")
    secret = "sk-ant-api03-" + "A1b2C3d4E5" * 9
    comment = await engine.review.comment(row.id, sha, "RELAY_DEMO_NOTES.md", 1,
                                          f"use the key {secret} here")
    assert secret not in comment.body
    await engine.wait_session(row.id)
    stored = await engine.store.conn.execute_fetchall("SELECT body FROM review_comments")
    assert all(secret not in r[0] for r in stored)
