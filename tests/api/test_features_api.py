"""The feature services over the API, through the client on a real socket: each answer is
the engine service's own, rebuilt as the same model (compared with what the engine says
in-process), and each refusal is the same RelayError class."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import httpx
import pytest

from relay.core.audit import iter_entries
from relay.core.errors import (
    AccountError,
    DetectNotFoundError,
    PipelineError,
    PipelineInvalidError,
    PipelineUntrustedError,
    RelayError,
    SessionNotFoundError,
)
from relay.core.models import SessionSpec
from relay.core.pipeline_model import Pipeline
from relay.pipelines import files
from relay.wallet.usage_refresh import RefreshReport
from tests.api.conftest import Served
from tests.conftest import make_repo
from tests.pipelines.helpers import graph

KEY = "sk-ant-api03-FEATURES" + secrets.token_urlsafe(48)


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch, vault_env: None) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")


async def demo_session(served: Served, repo: Path) -> str:
    """A finished demo session with two stints (a handoff) and commits in ``repo``."""
    sid = await served.client.start_session(SessionSpec(
        repo=repo, task="add a greeting", runtime="demo",
        chain=["demo:primary", "demo:backup"], demo_limit_after=2))
    row = await served.client.wait_session(sid)
    assert row.state == "completed", row.reason
    return sid


# -- accounts and the wallet ------------------------------------------------------------

async def test_accounts_and_the_wallet(served: Served, tmp_path: Path,
                                       fakes_on_path: Path) -> None:
    folder = tmp_path / "claude-work"
    folder.mkdir()
    accounts, eng = served.client.accounts, served.engine
    added = await accounts.add("claude", "work", folder, "api_key", KEY)
    assert (added.entry, added.auth_kind, added.has_key) == ("claude:work", "api_key", True)
    assert await eng.accounts.agent_env(added) == {"CLAUDE_CONFIG_DIR": str(folder.resolve()),
                                                   "ANTHROPIC_API_KEY": KEY}
    assert await accounts.all() == await eng.accounts.all() == [added]
    assert await accounts.get("claude", "nobody") is None
    with pytest.raises(AccountError, match="registered already"):
        await accounts.add("claude", "work", folder, "api_key", KEY)

    renamed = await accounts.edit("claude", "work", new_label="main")
    assert (renamed.entry, renamed.config_dir, renamed.has_key) == ("claude:main", folder.resolve(),
                                                                    True)
    default_dir = await accounts.edit("claude", "main", config_dir=None)
    assert default_dir.config_dir is None
    await accounts.edit("claude", "main", config_dir=folder)
    await accounts.set_preferred("claude", "main")
    await accounts.set_paused("claude", "main", True)
    got = await accounts.get("claude", "main")
    assert got == await eng.accounts.get("claude", "main")
    assert got is not None
    assert (got.preferred, got.paused) == (True, True)
    await accounts.set_paused("claude", "main", False)

    check = await accounts.check("claude", "main")
    assert check.status == "ok", check
    assert check.summary.startswith("claude:main answers")
    with pytest.raises(AccountError, match="No account claude:nobody"):
        await accounts.check("claude", "nobody")

    wallet = served.client.wallet
    report = await wallet.refresh_index()
    assert isinstance(report, RefreshReport)
    assert report.files_changed >= 1  # the check's own transcript
    assert (await wallet.refresh_index()).files_changed == 0  # read once
    views = await wallet.summary()
    assert "claude:main" in [v.entry for v in views]
    in_process = await eng.wallet.summary()  # (the same but for the moment each was made)
    assert [(v.entry, v.auth_kind, v.registered) for v in views] == [
        (v.entry, v.auth_kind, v.registered) for v in in_process]
    assert await wallet.watermark() == eng.wallet.watermark
    table = await wallet.usage_report(by="session", since="7d")
    assert table.columns
    assert await wallet.budgets.period_checks() == await eng.wallet.budgets.period_checks()
    with pytest.raises(RelayError, match="neither a date"):
        await wallet.usage_report(since="yesterday-ish")

    await accounts.remove("claude", "main")
    assert await accounts.all() == []


# -- history, review and the audit log ---------------------------------------------------

async def test_history_review_and_audit(served: Served, git_repo: Path) -> None:
    sid = await demo_session(served, git_repo)
    history, eng = served.client.history, served.engine
    line = await history.timeline(sid)
    assert line == await eng.history.timeline(sid)
    assert len(line.stints) == 2
    assert line.commits
    tip = line.commits[-1].sha
    assert await history.commit_diff(tip, sid) == await eng.history.commit_diff(tip, sid)
    assert await history.stint_diff(sid, 1) == await eng.history.stint_diff(sid, 1)
    changed = await history.session_diff(sid)
    assert changed == await eng.history.session_diff(sid)
    assert changed
    summary = await history.summary(sid)
    assert summary == await eng.history.summary(sid)

    review = served.client.review
    path = changed[0].path
    comment = await review.comment(sid, tip, path, 1, "Say hello louder.")
    assert (comment.session_id, comment.path, comment.body) == (sid, path, "Say hello louder.")
    listed = await review.comments(sid, tip)
    assert [c.id for c in listed] == [comment.id]
    assert listed == await eng.review.comments(sid, tip)
    with pytest.raises(RelayError, match="empty"):
        await review.comment(sid, tip, path, 1, "   ")

    rewound = await history.rewind(line.commits[0].sha, session_id=sid)
    assert rewound.branch == f"relay/rewind-{line.commits[0].sha[:10]}"
    assert rewound.session_id is None
    kept = await history.finish(sid, "keep")
    assert (kept.action, kept.branch) == ("keep", summary.branch)

    audit = await served.client.audit.verify()
    assert audit.report.ok
    assert audit.report.entries > 0
    with pytest.raises(SessionNotFoundError):
        await history.timeline("nosuchsession")


# -- pipelines ---------------------------------------------------------------------------

async def test_pipelines(served: Served, git_repo: Path) -> None:
    pipes = served.client.pipelines
    pipeline = graph("greet", {"a": [], "b": ["a"]})
    assert await pipes.repo_source(git_repo) is None
    assert await pipes.validate(pipeline) == []
    broken = graph("broken", {"a": ["b"], "b": ["a"]})
    problems = await pipes.validate(broken)
    assert problems
    assert any(p.cycle for p in problems)
    with pytest.raises(PipelineInvalidError):
        await pipes.start(broken, git_repo)

    checked = graph("checked", {"a": []}).model_copy(update={"nodes": [
        graph("x", {"a": []}).nodes[0].model_copy(update={"verify": ["true"]})]})
    await _save(git_repo, checked)
    source = await pipes.untrusted(git_repo)
    assert source is not None
    assert [p.name for p in source.pipelines] == ["checked"]
    await pipes.trust(source)
    assert await pipes.untrusted(git_repo) is None
    await _save(git_repo, pipeline)  # the file changes: a new version to accept
    changed = await pipes.untrusted(git_repo)
    assert changed is not None
    assert changed.digest != source.digest
    with pytest.raises(PipelineUntrustedError, match="changed since"):
        await pipes.trust(source)

    run_id = await pipes.start(pipeline, git_repo)
    final = await pipes.wait(run_id)
    assert final.state == "succeeded", final.reason
    run, steps = await pipes.status(run_id)
    assert (run, steps) == served.engine.pipelines.status(run_id)
    assert [s.node_id for s in steps] == ["a", "b"]
    assert [r.id for r in await pipes.runs()] == [run_id]
    assert await pipes.log(run_id) == served.engine.pipelines.log(run_id)
    with pytest.raises(PipelineError, match="already succeeded"):
        await pipes.cancel(run_id)
    with pytest.raises(PipelineError, match="already succeeded"):
        await pipes.resume(run_id)
    with pytest.raises(PipelineError, match="No pipeline run"):
        await pipes.status("nosuchrun")
    assert (await served.client.history.run_timeline(run_id)).run_id == run_id


async def _save(repo: Path, pipeline: Pipeline) -> None:
    """Write ``pipeline`` into the repository's file (in place of one of its name)."""
    await asyncio.to_thread(files.save, repo, pipeline, pipeline.name)


# -- knowledge and detect ----------------------------------------------------------------

async def test_knowledge(served: Served, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "k", {"greet.py": "def greet_the_user(name):\n"
                                                  "    return f'hello {name}'\n"})
    knowledge = served.client.knowledge
    scanned = await knowledge.scan(repo)
    assert scanned.symbols >= 1
    hits = await knowledge.retrieve("greet_the_user", repo=repo)
    assert hits
    assert hits[0].path == "greet.py"
    assert hits == await served.engine.knowledge.retrieve("greet_the_user", repo=repo)
    stats = await knowledge.stats()
    assert stats == await served.engine.knowledge.stats()
    assert [r.symbols for r in stats.repos] == [scanned.symbols]
    assert (await knowledge.ingest()).sessions == 0


async def test_detect(served: Served) -> None:
    report = await served.client.detector.scan(all_sessions=True)
    assert report.sessions == []  # no agent folders in this test's world
    with pytest.raises(DetectNotFoundError, match="nosuch"):
        await served.client.detector.find("nosuch")
    with pytest.raises(DetectNotFoundError):
        await served.client.detector.adopt("nosuch", "demo")


# -- refusals on the wire ----------------------------------------------------------------

async def test_refusals_are_json_and_keep_no_key(served: Served, tmp_path: Path) -> None:
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False, timeout=30,
                                 headers={"Authorization": f"Bearer {served.token}"}) as http:
        bad_key = await http.post("/api/v1/accounts", json={
            "provider": "claude", "label": "x", "auth_kind": "api_key", "api_key": 12345,
            "config_dir": str(tmp_path)})
        no_folder = await http.post("/api/v1/accounts", json={
            "provider": "claude", "label": "x", "auth_kind": "api_key", "api_key": KEY,
            "config_dir": str(tmp_path / "absent")})
        spaced = await http.post("/api/v1/accounts", json={
            "provider": "claude", "label": "x", "auth_kind": "api_key",
            "api_key": f"{KEY} {KEY}"})
        unknown_run = await http.get("/api/v1/pipelines/runs/nosuchrun")
        no_session = await http.get("/api/v1/history/sessions/nosuch")
    expected = [(bad_key, 422, "invalid_request"), (no_folder, 400, "account"),
                (spaced, 400, "account"), (unknown_run, 400, "pipeline"),
                (no_session, 404, "session_not_found")]
    for response, status, code in expected:
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert set(error) == {"code", "message", "hint"}
        assert error["code"] == code
        assert KEY not in response.text
        assert KEY[20:40] not in response.text


# -- what the feature commands needed besides (budgets, breakers, status line, plan,
#    trust by digest, audit entries) -----------------------------------------------------

async def test_budgets_breakers_and_the_status_line(served: Served, git_repo: Path,
                                                    tmp_path: Path) -> None:
    from datetime import timedelta

    from relay.core.events import utcnow

    wallet, eng = served.client.wallet, served.engine
    book = wallet.budget_book
    row = await book.set("day", 30, "claude:work")
    assert (row.scope, row.entry, row.limit_usd) == ("day", "claude:work", 30.0)
    assert [b.scope for b in await wallet.budgets.period_checks()] == ["day:claude:work"]
    assert await eng.wallet.budget_book.all() == [row]
    assert await book.clear("day", "claude:work") is True
    assert await book.clear("day", "claude:work") is False
    with pytest.raises(RelayError, match="Invalid"):
        await book.set("day", float("nan"))
    sid = await demo_session(served, git_repo)
    assert await book.set_session(sid[:6], "task_budget_usd", 2.5) == sid
    assert (await eng.session_spec(sid)).task_budget_usd == 2.5
    assert await book.set_session(sid, "task_budget_usd", None) == sid
    assert (await eng.session_spec(sid)).task_budget_usd is None

    breakers = served.client.breakers
    assert await breakers.get("claude:work") is None
    until = utcnow() + timedelta(hours=2)
    await eng.breakers.trip("", "claude:work", "usage_limit", until, "out", now=utcnow())
    found = await breakers.get("claude:work")
    assert found is not None
    assert (found.state, found.reason) == ("open", "out")
    assert found.until is not None
    assert abs((found.until - until).total_seconds()) < 1
    await breakers.reset("claude:work")
    assert await eng.breakers.get("claude:work", now=utcnow()) is None

    folder = tmp_path / "claude-work"
    folder.mkdir()
    await served.client.accounts.add("claude", "work", folder)
    payload = {"rate_limits": {"five_hour": {"used_percentage": 42, "resets_at": 2_000_000_000}}}
    entry, readings = await wallet.record_statusline(payload, folder)
    assert entry == "claude:work"
    assert [(r.window, r.used_percent) for r in readings] == [("five_hour", 42.0)]
    views = {v.entry: v for v in await eng.wallet.summary()}
    assert [w.used.value for w in views["claude:work"].windows if w.kind == "five_hour"] == [0.42]


async def test_plan_trust_by_digest_and_audit_entries(served: Served, git_repo: Path) -> None:
    pipes = served.client.pipelines
    plan = await pipes.plan("add a changelog", git_repo)
    assert plan.pipeline is not None, plan.problems
    assert plan.pipeline.nodes
    assert (await served.client.get_session(plan.session_id)).state == "completed"
    with pytest.raises(PipelineError, match="goal is empty"):
        await pipes.plan("  ", git_repo)

    checked = graph("checked", {"a": []}).model_copy(update={"nodes": [
        graph("x", {"a": []}).nodes[0].model_copy(update={"verify": ["true"]})]})
    await _save(git_repo, checked)
    source = await pipes.repo_source(git_repo)
    assert source is not None
    assert await pipes.needs_trust(source) is True
    with pytest.raises(PipelineUntrustedError, match="nobody has accepted"):
        await pipes.require_trust(source, "accept them")
    await pipes.trust(source)
    assert await pipes.needs_trust(source) is False
    await pipes.require_trust(source, "accept them")  # accepted: no refusal

    lines = await served.client.audit.entries(3)
    assert 0 < len(lines) <= 3
    everything = await served.client.audit.entries(10_000)
    assert [x.line for x in everything] == list(range(1, len(everything) + 1))
    assert lines == everything[-len(lines):]
    on_disk = list(iter_entries(served.engine.audit.log.path))
    assert [x.entry for x in everything] == on_disk[:len(everything)]
    assert any(x.entry.data.get("session_id") == plan.session_id for x in everything)
