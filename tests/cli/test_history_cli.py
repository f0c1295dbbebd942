"""relay-cli history, diff, rewind, review and finish, end to end in subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from tests.cli.test_cli import assert_no_traceback, cli
from tests.conftest import make_repo

SIGNING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
           "RELAY_VAULT_PASSPHRASE": "demo-passphrase"}


def _handed_off_session() -> dict[str, object]:
    proc = cli("demo", "--limit-after", "1", env_extra=SIGNING)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listing = cli("history", _last_session(), "--json")
    assert listing.returncode == 0, listing.stderr
    data: dict[str, object] = json.loads(listing.stdout)
    return data


def _last_session() -> str:
    proc = cli("sessions")
    ids = [w for line in proc.stdout.splitlines() for w in line.split()
           if len(w) == 12 and all(c in "0123456789abcdef" for c in w)]
    assert ids, proc.stdout
    return ids[0]


def test_history_shows_both_agents_and_the_snapshot() -> None:
    data = _handed_off_session()
    session = str(data["session_id"])
    proc = cli("history", session)

    assert proc.returncode == 0, proc.stderr
    assert "stint 1: demo:primary" in proc.stdout
    assert "stint 2: demo:backup" in proc.stdout
    assert "snapshot of session" in proc.stdout
    assert "Handoff demo:primary → demo:backup: done" in proc.stdout
    stints = data["stints"]
    assert isinstance(stints, list)
    assert [s["entry"] for s in stints] == ["demo:primary",
                                                                           "demo:backup"]


def test_diff_of_a_stint_a_session_and_a_commit() -> None:
    data = _handed_off_session()
    session = str(data["session_id"])
    commits = data["commits"]
    assert isinstance(commits, list)

    stint = cli("diff", session, "--stint", "2")
    whole = cli("diff", session, "--stat")
    one = cli("diff", str(commits[-1]["sha"])[:10], "--json")

    assert stint.returncode == 0
    assert "+++ b/RELAY_DEMO_NOTES.md" in stint.stdout
    assert "1 file changed" in whole.stdout
    files = json.loads(one.stdout)
    assert [f["path"] for f in files] == ["RELAY_DEMO_NOTES.md"]
    bad = cli("diff", "nosuchthing")
    assert bad.returncode == 2
    assert "No commit 'nosuchthing'" in bad.stderr
    assert_no_traceback(bad)


def test_rewind_prints_the_new_branch_and_keeps_the_old_ones() -> None:
    data = _handed_off_session()
    commits = data["commits"]
    assert isinstance(commits, list)
    sha = str(commits[0]["sha"])
    row_repo = cli("show", str(data["session_id"]), "--json")
    assert row_repo.returncode == 0

    proc = cli("rewind", sha, "--json")

    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["branch"] == f"relay/rewind-{sha[:10]}"
    assert result["sha"] == sha
    again = cli("rewind", sha)
    assert f"relay/rewind-{sha[:10]}-2" in again.stdout


def test_review_add_sends_the_comment_and_the_agent_goes_on(git_repo: Path) -> None:
    run = cli("run", "write notes", "--repo", str(git_repo), "--provider", "demo")
    assert run.returncode == 0, run.stderr
    session = _last_session()

    added = cli("review", session, "--add", "RELAY_DEMO_NOTES.md:1", "Shorter heading, please.")
    listed = cli("review", session, "--json")

    assert added.returncode == 0, added.stdout + added.stderr
    assert "Comment sent" in added.stdout
    assert "COMPLETED" in added.stdout
    comments = json.loads(listed.stdout)
    assert [(c["path"], c["line"], c["state"]) for c in comments] == [
        ("RELAY_DEMO_NOTES.md", 1, "sent")]
    bad = cli("review", session, "--add", "no-line-number", "x")
    assert bad.returncode == 2
    assert "PATH:LINE" in bad.stderr


def test_finish_summarises_then_merges(git_repo: Path) -> None:
    run = cli("run", "write notes", "--repo", str(git_repo), "--provider", "demo")
    assert run.returncode == 0, run.stderr
    session = _last_session()

    summary = cli("finish", session)
    merged = cli("finish", session, "--merge", "--json")

    assert "RELAY_DEMO_NOTES.md" in summary.stdout
    assert "--merge` merges it into main" in summary.stdout
    assert merged.returncode == 0, merged.stderr
    result = json.loads(merged.stdout)
    repo = pygit2.Repository(str(git_repo))
    assert str(repo.branches.local["main"].target) == result["sha"]
    assert (git_repo / "RELAY_DEMO_NOTES.md").is_file()


def test_history_of_a_pipeline_run_joins_its_lease_log_and_steps(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    source = tmp_path / "two.json"
    source.write_text(json.dumps({"name": "two", "nodes": [
        {"id": "write", "provider": "demo", "task": "write notes"},
        {"id": "check", "provider": "demo", "dependsOn": ["write"], "task": "check them"}]}))
    run = cli("pipeline", "run", str(source), "--repo", str(repo))
    assert run.returncode == 0, run.stdout + run.stderr
    run_id = json.loads(cli("pipeline", "status", "--json").stdout)[0]["id"]

    text = cli("history", run_id[:8])
    data = json.loads(cli("history", run_id, "--json").stdout)

    assert text.returncode == 0, text.stderr
    assert f"Pipeline run {run_id} (two) · succeeded" in text.stdout
    assert "step write: succeeded" in text.stdout
    assert [s["node_id"] for s in data["steps"]] == ["write", "check"]
    titles = [e["title"] for e in data["entries"]]
    assert "write: claimed" in titles
    assert any(t.startswith("[check] demo started") for t in titles)
    assert data["result_branch"] == f"relay/pipeline-{run_id}"
    missing = cli("history", "nosuchthing")
    assert missing.returncode == 2
    assert "No session 'nosuchthing'" in missing.stderr
