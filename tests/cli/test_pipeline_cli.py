"""relay-cli pipeline, as a user runs it: real processes, the demo runtime."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import assert_no_traceback, cli
from tests.conftest import make_repo

THREE = {"name": "ship", "nodes": [
    {"id": "plan", "provider": "demo", "task": "plan it"},
    {"id": "implement", "provider": "demo", "dependsOn": ["plan"], "task": "do {{plan.output}}"},
    {"id": "review", "provider": "demo", "dependsOn": ["implement"],
     "task": "review {{implement.files}}"}]}


def test_validate_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "bad", "nodes": [
        {"id": "a", "provider": "demo", "task": "x", "dependsOn": ["b"]},
        {"id": "b", "provider": "nope", "task": "{{a.output}", "dependsOn": ["a"]}]}))
    proc = cli("pipeline", "validate", str(bad))
    assert proc.returncode == 2
    assert_no_traceback(proc)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "node 'b' field provider: unknown provider 'nope'" in out
    assert "node 'b' field task: '{{' is never closed with '}}'" in out
    assert "cycle: a → b → a" in out
    good = tmp_path / "good.json"
    good.write_text(json.dumps(THREE))
    ok = cli("pipeline", "validate", str(good))
    assert ok.returncode == 0, ok.stderr
    assert "ship: 3 steps, valid" in ok.stdout
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    proc = cli("pipeline", "validate", str(broken))
    assert proc.returncode == 2
    assert_no_traceback(proc)
    assert "is not valid JSON" in proc.stdout + proc.stderr


def test_import_list_run_status_and_export(tmp_path: Path, relay_home: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    source = tmp_path / "ship.json"
    source.write_text(json.dumps(THREE))
    assert cli("pipeline", "import", str(source), "--repo", str(repo)).returncode == 0
    listed = cli("pipeline", "list", "--repo", str(repo), "--json")
    assert json.loads(listed.stdout) == [{"name": "ship", "nodes": 3, "problems": [],
                                           "commands": []}]
    run = cli("pipeline", "run", "ship", "--repo", str(repo), "--concurrency", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "review: result saved by this process" in " ".join(run.stdout.split())
    assert "succeeded" in run.stdout
    status = json.loads(cli("pipeline", "status", "--json").stdout)
    assert [(r["name"], r["state"]) for r in status] == [("ship", "succeeded")]
    one = json.loads(cli("pipeline", "status", status[0]["id"][:6], "--json").stdout)
    assert [(s["id"], s["state"], s["saves"]) for s in one["steps"]] == [
        ("plan", "succeeded", 1), ("implement", "succeeded", 1), ("review", "succeeded", 1)]
    assert one["steps"][2]["files"] == ["RELAY_DEMO_NOTES.md"]
    assert [e["kind"] for e in one["log"]].count("saved") == 3
    out = tmp_path / "out.json"
    assert cli("pipeline", "export", "ship", str(out), "--repo", str(repo)).returncode == 0
    assert json.loads(out.read_text())["pipelines"][0]["name"] == "ship"


def test_a_failing_step_fails_the_run_with_exit_1(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    source = tmp_path / "p.json"
    source.write_text(json.dumps({"name": "red", "nodes": [
        {"id": "build", "provider": "demo", "task": "x", "verify": ["false"]},
        {"id": "after", "provider": "demo", "task": "y", "dependsOn": ["build"]}]}))
    proc = cli("pipeline", "run", str(source), "--repo", str(repo), "--trust")  # runs `false`
    assert proc.returncode == 1
    assert_no_traceback(proc)
    text = " ".join(proc.stdout.split())
    assert "Run" in text
    assert "failed: step build failed" in text
    assert "after: skipped" in text


def test_plan_with_the_demo_saves_a_valid_graph_that_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    plan = cli("pipeline", "plan", "Add a greeting endpoint", "--repo", str(repo), "--save")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "review it before running" in plan.stdout
    assert "Saved as add-a-greeting-endpoint" in " ".join(plan.stdout.split())
    listed = json.loads(cli("pipeline", "list", "--repo", str(repo), "--json").stdout)
    assert listed == [{"name": "add-a-greeting-endpoint", "nodes": 3, "problems": [],
                       "commands": []}]
    run = cli("pipeline", "run", "add-a-greeting-endpoint", "--repo", str(repo))
    assert run.returncode == 0, run.stdout + run.stderr


def test_unknown_run_and_pipeline_are_clear_errors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for args in (("pipeline", "status", "nope"), ("pipeline", "resume", "nope"),
                 ("pipeline", "run", "nope", "--repo", str(repo))):
        proc = cli(*args)
        assert proc.returncode == 2, args
        assert_no_traceback(proc)
    assert "No pipeline named 'nope'" in cli("pipeline", "run", "nope", "--repo",
                                             str(repo)).stderr
