"""Every rejection names the node and the field; the file format round-trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import PipelineError, PipelineInvalidError
from relay.core.pipeline_model import Pipeline, parse_pipeline
from relay.pipelines import files
from relay.pipelines.graph import Graph
from relay.pipelines.templates import StepOutputs, references, render
from relay.pipelines.validate import check, find_cycles, problems


def _p(*nodes: dict[str, Any], **extra: Any) -> Pipeline:
    return parse_pipeline({"name": "t", "nodes": list(nodes), **extra})


def _texts(p: Pipeline) -> list[str]:
    return [str(x) for x in problems(p, ["claude", "codex", "demo"])]


def test_a_valid_pipeline_has_no_problems_and_the_seed_example_parses() -> None:
    seed = {"name": "feature", "nodes": [{"id": "build", "provider": "claude",
                                          "task": "implement the endpoint", "dependsOn": [],
                                          "fallback": ["codex"],
                                          "verify": ["go build ./...", "go test ./..."]}]}
    p = parse_pipeline(seed)
    assert _texts(p) == []
    assert p.nodes[0].chain == ["claude", "codex"]
    assert p.nodes[0].verify_argv() == [["go", "build", "./..."], ["go", "test", "./..."]]
    assert check(p, ["claude", "codex"]) is p


def test_duplicate_ids_name_both_positions() -> None:
    p = _p({"id": "a", "provider": "demo", "task": "x"}, {"id": "a", "provider": "demo", "task": "y"})
    assert _texts(p) == ["node 'a' field id: duplicate id (nodes[0] and nodes[1])"]


def test_unknown_dependencies_are_named_with_a_suggestion() -> None:
    p = _p({"id": "build", "provider": "demo", "task": "x"},
           {"id": "test", "provider": "demo", "task": "y", "dependsOn": ["biuld"]})
    assert _texts(p) == ["node 'test' field dependsOn[0]: unknown node 'biuld' (did you mean 'build'?)"]


def test_a_cycle_is_named_in_order() -> None:
    p = _p({"id": "a", "provider": "demo", "task": "x", "dependsOn": ["c"]},
           {"id": "b", "provider": "demo", "task": "y", "dependsOn": ["a"]},
           {"id": "c", "provider": "demo", "task": "z", "dependsOn": ["b"]},
           {"id": "d", "provider": "demo", "task": "w"})
    found = problems(p, ["demo"])
    assert len(found) == 1
    assert found[0].cycle == ("a", "c", "b", "a")
    assert str(found[0]) == ("node 'a' field dependsOn: cycle: a → c → b → a (each waits for "
                             "the next; remove one dependency)")


def test_a_self_dependency_is_a_cycle() -> None:
    p = _p({"id": "a", "provider": "demo", "task": "x", "dependsOn": ["a"]})
    assert [x.cycle for x in problems(p, ["demo"])] == [("a", "a")]


def test_unknown_providers_in_provider_and_fallback() -> None:
    p = _p({"id": "a", "provider": "claud", "task": "x", "fallback": ["codex", "gpt"]})
    assert _texts(p) == [
        "node 'a' field provider: unknown provider 'claud' (did you mean 'claude'?); one of "
        "claude, codex, demo",
        "node 'a' field fallback[1]: unknown provider 'gpt'"]


@pytest.mark.parametrize(("task", "message"), [
    ("use {{build.output", "'{{' is never closed with '}}'"),
    ("use build.output}}", "'}}' has no opening '{{'"),
    ("use {{build}}", "'{{build}}' is not a reference; write {{node.field}} with field one of "
                      "output, files, commit, branch, session"),
    ("use {{build.result}}", "'{{build.result}}': unknown field 'result' (one of output, files, "
                             "commit, branch, session)"),
    ("use {{biuld.output}}", "{{biuld.output}} refers to unknown node 'biuld' (did you mean "
                             "'build'?)"),
    ("use {{other.output}}", "{{other.output}}: 'review' does not depend on 'other', so its "
                             "result may not exist yet (add it to dependsOn)"),
])
def test_bad_templates(task: str, message: str) -> None:
    p = _p({"id": "build", "provider": "demo", "task": "x"},
           {"id": "other", "provider": "demo", "task": "y"},
           {"id": "review", "provider": "demo", "task": task, "dependsOn": ["build"]})
    assert _texts(p) == [f"node 'review' field task: {message}"]


def test_a_reference_through_an_indirect_dependency_is_allowed() -> None:
    p = _p({"id": "a", "provider": "demo", "task": "x"},
           {"id": "b", "provider": "demo", "task": "y", "dependsOn": ["a"]},
           {"id": "c", "provider": "demo", "task": "{{a.files}} {{b.output}}", "dependsOn": ["b"]})
    assert _texts(p) == []


def test_structural_errors_name_node_and_field() -> None:
    with pytest.raises(PipelineInvalidError) as info:
        parse_pipeline({"name": "t", "nodes": [
            {"id": "ok", "provider": "demo", "task": "x", "dependson": ["a"]},
            {"id": "9bad", "provider": "demo", "task": ""},
            {"id": "t", "provider": "demo", "task": "x", "timeout": -1, "retries": "many"}]})
    assert info.value.problems == [
        "node 'ok' (nodes[0]) field dependson: unknown field (check its spelling)",
        "node '9bad' (nodes[1]) field id: an id starts with a letter and has only letters, "
        "digits, '-' and '_' (at most 64)",
        "node '9bad' (nodes[1]) field task: String should have at least 1 character",
        "node 't' (nodes[2]) field timeout: -1 is out of range: a time in seconds: a finite "
        "number, more than 0, at most 2,592,000",
        "node 't' (nodes[2]) field retries: Input should be a valid integer, unable to parse "
        "string as an integer"]


def test_verify_lines_that_cannot_be_split_and_other_node_rules() -> None:
    p = _p({"id": "a", "provider": "demo:work", "account": "x", "task": "t",
            "verify": ["pytest 'unclosed", "  "], "fallback": ["demo:work"],
            "dependsOn": []},
           {"id": "b", "provider": "demo", "task": "t", "dependsOn": ["a", "a"]})
    assert _texts(p) == [
        "node 'a' field account: the provider already names account 'work'",
        "node 'a' field fallback[0]: 'demo:work' is already in the chain",
        "node 'a' field verify[0]: cannot split \"pytest 'unclosed\": No closing quotation",
        "node 'a' field verify[1]: empty command",
        "node 'b' field dependsOn[1]: 'a' is listed twice"]


def test_an_empty_pipeline_and_check_raising() -> None:
    with pytest.raises(PipelineInvalidError) as info:
        check(_p(), ["demo"])
    assert info.value.problems == ["pipeline field nodes: the pipeline has no nodes"]


def test_cycles_in_a_long_chain_do_not_recurse() -> None:
    deps: dict[str, list[str]] = {f"n{i}": [f"n{i + 1}"] for i in range(5000)}
    deps["n5000"] = ["n0"]
    cycles = find_cycles(deps)
    assert len(cycles) == 1
    assert len(cycles[0]) == 5002


def test_templates_render_saved_outputs() -> None:
    refs, bad = references("a {{ x.output }} b {{x.files}}")
    assert bad == []
    assert [(r.node, r.field) for r in refs] == [("x", "output"), ("x", "files")]
    out = render("a {{ x.output }} b {{x.files}} {{x.commit}}",
                 {"x": StepOutputs("done", ("f.py", "g.py"), None)})
    assert out == "a done b f.py, g.py (no commit)"


def test_graph_layers_and_order() -> None:
    p = _p({"id": "d", "provider": "demo", "task": "x", "dependsOn": ["b", "c"]},
           {"id": "b", "provider": "demo", "task": "x", "dependsOn": ["a"]},
           {"id": "c", "provider": "demo", "task": "x", "dependsOn": ["a"]},
           {"id": "a", "provider": "demo", "task": "x"})
    g = Graph.of(p)
    assert g.layers() == [["a"], ["b", "c"], ["d"]]
    assert g.downstream("a") == ["b", "c", "d"]
    assert g.upstream("d") == ["a", "b", "c"]
    assert g.sinks() == ["d"]


def test_the_repository_file_keeps_other_pipelines_and_reads_every_shape(tmp_path: Path) -> None:
    one = _p({"id": "a", "provider": "demo", "task": "x"})
    two = parse_pipeline({"name": "second", "nodes": [{"id": "b", "provider": "demo", "task": "y"}]})
    files.save(tmp_path, one)
    files.save(tmp_path, two)
    files.save(tmp_path, one.model_copy(update={"description": "changed"}))
    assert [(p.name, p.description) for p in files.list_pipelines(tmp_path)] == [
        ("t", "changed"), ("second", "")]
    stored = json.loads(files.pipelines_path(tmp_path).read_text())
    assert stored["pipelines"][0] == {"name": "t", "description": "changed",
                                      "nodes": [{"id": "a", "provider": "demo", "task": "x"}]}
    single = tmp_path / "single.json"
    single.write_text(json.dumps(two.to_json_obj()))
    assert files.resolve(str(single), tmp_path) == two
    assert files.resolve("second", tmp_path) == two
    assert files.delete(tmp_path, "second")
    with pytest.raises(PipelineError, match="No pipeline named 'second'"):
        files.resolve("second", tmp_path)


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"name": "x",\n "nodes": [}\n')
    with pytest.raises(PipelineError, match=r"not valid JSON: .* at line 2, column 12"):
        files.read_file(path)
