"""The scheduler on fan-out/fan-in graphs: order, concurrency, failures, retries,
timeouts, cancellation, budget, and two engines sharing one run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from relay.core.errors import PipelineError
from relay.core.pipeline_model import Pipeline
from relay.pipelines.ledger import Ledger, RunInfo
from relay.pipelines.scheduler import Scheduler, Settings
from tests.pipelines.helpers import GatedExecutor, graph

FAST = Settings(lease_s=30.0, poll_s=0.05)


async def _run(ledger: Ledger, pipeline: Pipeline, executor: GatedExecutor,
               concurrency: int | None = None, budget: float | None = None,
               run_id: str = "run1", owner: str = "w1",
               settings: Settings = FAST) -> asyncio.Task[RunInfo]:
    await ledger.create_run(run_id, pipeline, Path("."), concurrency or pipeline.concurrency,
                            budget, None)
    scheduler = Scheduler(ledger, executor, owner, settings)
    return asyncio.create_task(scheduler.drive(run_id))


def _states(ledger: Ledger, run_id: str = "run1") -> dict[str, str]:
    return {s.node_id: s.state for s in ledger.steps(run_id)}


async def test_fan_out_fan_in_respects_concurrency_and_dependencies(ledger: Ledger) -> None:
    p = graph("fan", {"a": [], "b": ["a"], "c": ["a"], "d": ["a"], "e": ["b", "c", "d"]})
    ex = GatedExecutor(auto={"a", "e"})
    task = await _run(ledger, p, ex, concurrency=2)
    await asyncio.gather(ex.gate("b").started.wait(), ex.gate("c").started.wait())
    assert ex.running == 2
    assert "d" not in ex.started
    ex.gate("b").release.set()
    await ex.gate("d").started.wait()  # b's slot goes to d at once
    assert "e" not in ex.started
    ex.gate("c").release.set()
    ex.gate("d").release.set()
    run = await asyncio.wait_for(task, 10)
    assert run.state == "succeeded"
    assert ex.started[0] == "a"
    assert ex.started[-1] == "e"
    assert ex.peak == 2
    assert ex.prompts["e"] == "do e"
    steps = {s.node_id: s for s in ledger.steps("run1")}
    assert all(s.saves == 1 and s.state == "succeeded" for s in steps.values())
    assert steps["e"].outputs.output == "output of e"


async def test_a_slow_branch_never_holds_back_an_independent_one(ledger: Ledger) -> None:
    p = graph("two", {"a1": [], "a2": ["a1"], "b1": [], "b2": ["b1"]})
    ex = GatedExecutor(auto={"b1", "b2", "a2"})
    task = await _run(ledger, p, ex, concurrency=4)
    await ex.gate("a1").started.wait()
    await ex.gate("b2").done.wait()  # b's chain completes while a1 still runs
    assert _states(ledger)["b2"] == "succeeded"
    assert _states(ledger)["a1"] == "running"
    ex.gate("a1").release.set()
    assert (await asyncio.wait_for(task, 10)).state == "succeeded"


async def test_outputs_reach_dependents_through_templates(ledger: Ledger) -> None:
    p = graph("tpl", {"build": [], "review": ["build"]})
    raw = p.model_dump(by_alias=True)
    raw["nodes"][1]["task"] = "Review {{build.files}}: {{build.output}}"
    p = type(p).model_validate(raw)
    ex = GatedExecutor(auto={"build", "review"})
    await asyncio.wait_for(await _run(ledger, p, ex), 10)
    assert ex.prompts["review"] == "Review build.txt: output of build"


async def test_a_failed_node_skips_its_dependents_and_independent_branches_finish(
        ledger: Ledger) -> None:
    p = graph("fail", {"a": [], "b": ["a"], "c": ["b"], "x": []})
    ex = GatedExecutor(auto={"x"}, fail_first={"a": 1})
    run = await asyncio.wait_for(await _run(ledger, p, ex), 10)
    assert run.state == "failed"
    assert "a" in (run.reason or "")
    assert _states(ledger) == {"a": "failed", "b": "skipped", "c": "skipped", "x": "succeeded"}
    assert "b" not in ex.started


async def test_retries_with_backoff_then_success(ledger: Ledger) -> None:
    p = graph("retry", {"a": []}, backoff=0.05)
    raw = p.model_dump(by_alias=True)
    raw["nodes"][0]["retries"] = 2
    p = type(p).model_validate(raw)
    ex = GatedExecutor(auto={"a"}, fail_first={"a": 2})
    run = await asyncio.wait_for(await _run(ledger, p, ex), 10)
    assert run.state == "succeeded"
    step = ledger.steps("run1")[0]
    assert step.attempt == 3
    assert step.saves == 1
    kinds = [e.kind for e in ledger.log("run1") if e.node_id == "a"]
    assert kinds == ["claimed", "retry", "claimed", "retry", "claimed", "saved"]
    retries = [e for e in ledger.log("run1") if e.kind in ("retry", "claimed")]
    assert retries[2].ts_ms - retries[1].ts_ms >= 50 - 5
    gap = retries[4].ts_ms - retries[3].ts_ms  # the second retry waits twice as long
    assert gap >= 100 - 5


async def test_a_step_past_its_timeout_fails(ledger: Ledger) -> None:
    p = graph("slow", {"a": []})
    raw = p.model_dump(by_alias=True)
    raw["nodes"][0]["timeout"] = 0.1
    p = type(p).model_validate(raw)
    ex = GatedExecutor()
    run = await asyncio.wait_for(await _run(ledger, p, ex), 10)
    assert run.state == "failed"
    assert "timed out after 0.1 s" in (ledger.steps("run1")[0].error or "")


async def test_cancel_stops_running_steps_and_never_starts_the_rest(ledger: Ledger) -> None:
    p = graph("cancel", {"a": [], "b": ["a"], "x": []})
    ex = GatedExecutor()
    task = await _run(ledger, p, ex)
    await asyncio.gather(ex.gate("a").started.wait(), ex.gate("x").started.wait())
    await ledger.set_run_state("run1", "cancelling", "by the test", only_from=("running",))
    run = await asyncio.wait_for(task, 10)
    assert run.state == "cancelled"
    assert _states(ledger) == {"a": "cancelled", "b": "cancelled", "x": "cancelled"}
    assert "b" not in ex.started


async def test_a_spent_budget_starts_nothing_more(ledger: Ledger) -> None:
    p = graph("budget", {"a": [], "b": ["a"]})
    ex = GatedExecutor(auto={"a", "b"}, cost=0.6)
    run = await asyncio.wait_for(await _run(ledger, p, ex, budget=0.5), 10)
    assert run.state == "failed"
    assert "budget" in (run.reason or "")
    assert _states(ledger) == {"a": "succeeded", "b": "skipped"}
    assert ex.started == ["a"]


async def test_an_expired_lease_is_taken_over_and_the_old_workers_write_is_refused(
        ledger: Ledger, tmp_path: Path) -> None:
    p = graph("lease", {"a": [], "b": ["a"]})
    stale = GatedExecutor()
    # worker 1 never renews (as if frozen): its lease runs out after 0.2 s
    frozen = Settings(lease_s=0.2, heartbeat_s=3600, poll_s=0.05)
    first = await _run(ledger, p, stale, owner="w1", settings=frozen)
    await stale.gate("a").started.wait()
    other = Ledger.open(ledger.path)
    try:
        fresh = GatedExecutor(auto={"a", "b"})
        second = asyncio.create_task(Scheduler(other, fresh, "w2", FAST).drive("run1"))
        run = await asyncio.wait_for(second, 10)
        assert run.state == "succeeded"
        stale.gate("a").release.set()  # the frozen worker wakes and tries to save
        await asyncio.wait_for(first, 10)
    finally:
        other.close()
    steps = {s.node_id: s for s in ledger.steps("run1")}
    assert steps["a"].saves == 1
    assert steps["a"].epoch == 2
    assert steps["b"].saves == 1
    log = [(e.kind, e.node_id, e.owner, e.epoch) for e in ledger.log("run1")]
    assert ("takeover", "a", "w2", 2) in log
    assert ("fence_refused", "a", "w1", 1) in log
    assert ("saved", "a", "w2", 2) in log
    assert ("saved", "a", "w1", 1) not in log
    assert stale.started == ["a"]
    assert "b" not in stale.started


async def test_a_run_prefix_is_matched_exactly_and_bounded(ledger: Ledger) -> None:
    await ledger.create_run("abc123def456", graph("p", {"a": []}), Path("."), 1, None, None)
    assert ledger.run("abc1").id == "abc123def456"
    for pattern in ("%", "a%", "ab_", "_"):
        with pytest.raises(PipelineError, match=r"^No (such )?pipeline run"):
            ledger.run(pattern)
    with pytest.raises(PipelineError, match="at most 64 characters"):
        ledger.run("a" * 100_000)
