"""Each node is a full Relay session: worktrees from the dependencies' results, outputs,
fallbacks on a limit or a failure, verify gates, fan-in merges, the result branch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.pipeline_model import Pipeline
from relay.engine.engine import Engine
from relay.runtimes.demo import NOTES_FILE


@pytest.fixture
async def engine() -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0, pipeline_poll=0.05))
    yield eng
    await eng.close()


def _commit(repo: pygit2.Repository, sha: str | None) -> pygit2.Commit:
    assert sha is not None
    return repo.revparse_single(sha).peel(pygit2.Commit)


def _pipeline(nodes: list[dict[str, object]], **extra: object) -> Pipeline:
    return Pipeline.model_validate({"name": "t", "nodes": nodes, **extra})


async def test_plan_implement_review_runs_each_step_as_a_session(engine: Engine,
                                                                  git_repo: Path) -> None:
    p = _pipeline([
        {"id": "plan", "provider": "demo", "task": "plan the change"},
        {"id": "implement", "provider": "demo", "dependsOn": ["plan"],
         "task": "implement: {{plan.output}}"},
        {"id": "review", "provider": "demo", "dependsOn": ["implement"],
         "task": "review {{implement.files}} at {{implement.commit}}"},
    ])
    run_id = await engine.pipelines.start(p, git_repo)
    run = await engine.pipelines.wait(run_id)
    assert run.state == "succeeded", run.reason
    _, steps = engine.pipelines.status(run_id)
    by = {s.node_id: s for s in steps}
    repo = pygit2.Repository(str(git_repo))
    for step in steps:
        assert step.saves == 1
        assert step.session_id
        session = await engine.get_session(step.session_id)
        assert session.state == "completed"
        assert step.outputs.commit
        assert step.outputs.files == (NOTES_FILE,)
    # implement started from plan's result; review from implement's
    impl = _commit(repo, by["implement"].outputs.commit)
    assert repo.descendant_of(impl.id, _commit(repo, by["plan"].outputs.commit).id)
    review_spec = await engine.store.sessions.spec(by["review"].session_id or "")
    assert review_spec.task == f"review {NOTES_FILE} at {by['implement'].outputs.commit}"
    assert review_spec.pipeline_step == f"{run_id}/review"
    implement_spec = await engine.store.sessions.spec(by["implement"].session_id or "")
    assert implement_spec.task == "implement: " + by["plan"].outputs.output
    assert by["plan"].outputs.output.startswith("(simulated) Done.")
    branch = repo.branches.local[f"relay/pipeline-{run_id}"]
    assert str(branch.target) == by["review"].outputs.commit == run.result_commit
    assert repo.head.shorthand == "main"  # the user's branch never moves


async def test_fan_in_merges_both_results_and_flags_conflicts(engine: Engine,
                                                              git_repo: Path) -> None:
    p = _pipeline([
        {"id": "left", "provider": "demo", "task": "left side"},
        {"id": "right", "provider": "demo", "task": "right side"},
        {"id": "join", "provider": "demo", "dependsOn": ["left", "right"], "task": "join them"},
    ])
    run = await engine.pipelines.wait(await engine.pipelines.start(p, git_repo))
    assert run.state == "succeeded", run.reason
    _, steps = engine.pipelines.status(run.id)
    join = next(s for s in steps if s.node_id == "join")
    spec = await engine.store.sessions.spec(join.session_id or "")
    # both demo agents wrote the notes file differently: the join starts with the markers
    assert spec.task.startswith("Before the task:")
    assert f"- {NOTES_FILE}" in spec.task
    repo = pygit2.Repository(str(git_repo))
    base = _commit(repo, spec.base_commit)
    assert len(base.parents) == 2
    blob = base.tree / NOTES_FILE
    assert isinstance(blob, pygit2.Blob)
    text = blob.data.decode()
    assert "<<<<<<<" in text
    assert ">>>>>>>" in text


async def test_a_failing_provider_hands_the_node_to_its_fallback(
        engine: Engine, git_repo: Path, fakes_on_path: Path, vault_env: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "e4_400_invalid_request")
    p = _pipeline([{"id": "build", "provider": "claude", "fallback": ["demo"],
                    "task": "build it"}])
    run = await engine.pipelines.wait(await engine.pipelines.start(p, git_repo))
    assert run.state == "succeeded", run.reason
    _, steps = engine.pipelines.status(run.id)
    runs = await engine.runs(steps[0].session_id or "")
    assert [r.runtime for r in runs] == ["claude", "demo"]
    assert runs[0].outcome == "failed"
    handoffs = await engine.handoffs(steps[0].session_id or "")
    assert handoffs[0].reason == "failed"


async def test_a_red_verify_with_no_fallback_fails_the_run_and_skips_dependents(
        engine: Engine, git_repo: Path) -> None:
    p = _pipeline([
        {"id": "build", "provider": "demo", "task": "build", "verify": ["false"]},
        {"id": "ship", "provider": "demo", "dependsOn": ["build"], "task": "ship"},
        {"id": "docs", "provider": "demo", "task": "docs"},
    ])
    run = await engine.pipelines.wait(await engine.pipelines.start(p, git_repo))
    assert run.state == "failed"
    assert run.reason == "step build failed"
    _, steps = engine.pipelines.status(run.id)
    states = {s.node_id: s.state for s in steps}
    assert states == {"build": "failed", "ship": "skipped", "docs": "succeeded"}
    build = next(s for s in steps if s.node_id == "build")
    assert "false" in (build.error or "")


async def test_plan_implement_on_claude_with_codex_fallback_review(
        engine: Engine, git_repo: Path, fakes_on_path: Path, vault_env: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's pipeline: Claude hits its usage limit in implement, Codex takes over."""
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "f_usage_limit")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "b_tool_shell_and_patch")
    p = _pipeline([
        {"id": "plan", "provider": "demo", "task": "plan the greeting"},
        {"id": "implement", "provider": "claude", "fallback": ["codex"], "dependsOn": ["plan"],
         "task": "implement: {{plan.output}}"},
        {"id": "review", "provider": "demo", "dependsOn": ["implement"],
         "task": "review {{implement.files}}"}])
    run = await engine.pipelines.wait(await engine.pipelines.start(p, git_repo))
    assert run.state == "succeeded", run.reason
    _, steps = engine.pipelines.status(run.id)
    assert [s.saves for s in steps] == [1, 1, 1]
    implement = steps[1]
    runs = await engine.runs(implement.session_id or "")
    assert [(r.runtime, r.outcome) for r in runs] == [("claude", "failed"), ("codex", "completed")]
    handoffs = await engine.handoffs(implement.session_id or "")
    assert [(h.from_entry, h.to_entry, h.state) for h in handoffs] == [("claude", "codex", "done")]
