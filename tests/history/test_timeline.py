"""The time machine over real sessions: timeline, stints, diffs, the audit join."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.history.present import diff_text, timeline_lines


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def _handed_off(engine: Engine, repo: Path) -> str:
    row = await engine.run_session(SessionSpec(
        repo=repo, task="add a greeting", runtime="demo",
        chain=["demo:primary", "demo:backup"], demo_limit_after=2))
    assert row.state == "completed", row.reason
    return row.id


async def test_timeline_joins_runs_handoff_audit_and_commits(engine: Engine, git_repo: Path) -> None:
    base = str(pygit2.Repository(str(git_repo)).head.target)
    session_id = await _handed_off(engine, git_repo)
    await engine.audit.aclose()  # the audit trail appends in the background: drain it

    line = await engine.history.timeline(session_id)

    assert (line.base_sha, line.base_branch) == (base, "main")
    assert [s.entry for s in line.stints] == ["demo:primary", "demo:backup"]
    assert [s.outcome for s in line.stints] == ["failed", "completed"]
    assert line.stints[0].start_sha == base
    assert line.stints[1].start_sha == line.stints[0].end_sha
    kinds = [e.kind for e in line.entries]
    assert {"run", "handoff", "commit", "state"} <= set(kinds)
    # the giver's commits come before the handoff is done, the receiver's after it
    done = next(i for i, e in enumerate(line.entries) if e.title.endswith(": done"))
    commits = [(i, e) for i, e in enumerate(line.entries) if e.kind == "commit"]
    assert all(e.stint == 0 for i, e in commits if i < done)
    assert commits[-1][1].stint == 1
    assert commits[-1][0] > done
    snapshot = [c for c in line.commits if c.kind == "snapshot"]
    assert len(snapshot) == 1
    assert snapshot[0].trailers["Relay-To"] == "demo:backup"
    # every story entry is in the audit log, whose chain is intact
    assert line.audit_ok is True
    assert all(e.audited for e in line.entries if e.kind in ("handoff", "state"))
    text = "\n".join(timeline_lines(line))
    assert "stint 2: demo:backup" in text
    assert "audit log: chain intact" in text


async def test_each_stint_shows_what_that_agent_changed(engine: Engine, git_repo: Path) -> None:
    session_id = await _handed_off(engine, git_repo)

    first = await engine.history.stint_diff(session_id, 0)
    second = await engine.history.stint_diff(session_id, 1)
    whole = await engine.history.session_diff(session_id)

    assert [(f.path, f.status) for f in first] == [("RELAY_DEMO_NOTES.md", "added")]
    assert [(f.path, f.status) for f in second] == [("RELAY_DEMO_NOTES.md", "modified")]
    added_first = {ln.text for h in first[0].hunks for ln in h.lines if ln.kind == "add"}
    added_second = {ln.text for h in second[0].hunks for ln in h.lines if ln.kind == "add"}
    assert added_first
    assert added_second
    assert not added_first & added_second
    assert whole[0].additions == first[0].additions + second[0].additions
    assert any(t.startswith("+++ b/RELAY_DEMO_NOTES.md") for t in diff_text(whole))
    with pytest.raises(RelayError, match="no stint 3"):
        await engine.history.stint_diff(session_id, 2)


async def test_commit_diff_is_the_commit_against_its_parent(engine: Engine, git_repo: Path) -> None:
    session_id = await _handed_off(engine, git_repo)
    line = await engine.history.timeline(session_id)
    last = line.commits[-1]

    files = await engine.history.commit_diff(last.sha[:12])  # a prefix, found without a session

    repo = pygit2.Repository(str(git_repo))
    commit = repo[last.sha].peel(pygit2.Commit)
    expected = repo.diff(commit.parents[0], commit)
    assert [f.path for f in files] == sorted(d.new_file.path for d in expected.deltas)
    with pytest.raises(RelayError, match="No commit"):
        await engine.history.commit_diff("0123456789abcdef")


async def test_uncommitted_work_of_the_last_stint_is_shown(engine: Engine, git_repo: Path) -> None:
    session_id = await _handed_off(engine, git_repo)
    row = await engine.get_session(session_id)
    assert row.workdir
    (Path(row.workdir) / "later.txt").write_text("typed by the user after the session\n")

    line = await engine.history.timeline(session_id)
    last = await engine.history.stint_diff(session_id, len(line.stints) - 1)

    assert line.uncommitted == 1
    assert ("later.txt", "added") in [(f.path, f.status) for f in last]
    whole = await engine.history.session_diff(session_id)
    # against the worktree too, what the session created is "added", never "modified"
    assert {(f.path, f.status) for f in whole} == {("later.txt", "added"),
                                                   ("RELAY_DEMO_NOTES.md", "added")}
    assert "--- /dev/null" in list(diff_text(whole))


async def test_a_tampered_audit_log_shows_in_the_timeline(engine: Engine, git_repo: Path) -> None:
    session_id = await _handed_off(engine, git_repo)
    await engine.audit.aclose()
    path = engine.config.audit_path
    lines = path.read_text().splitlines()
    entry = json.loads(lines[1])
    entry["data"]["reason"] = "edited afterwards"
    lines[1] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")

    line = await engine.history.timeline(session_id)

    assert line.audit_ok is False
    assert line.audit_problem
    assert "line 2" in line.audit_problem
    assert "AUDIT LOG BROKEN" in "\n".join(timeline_lines(line))
