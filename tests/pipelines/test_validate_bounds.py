"""Validation is linear and a repository's file is bounded (issue 18, item 4).

A pipeline file comes from a repository anyone may have written: its templates, graph
and size must never make Relay work for minutes. The work of the graph checks is
counted in executed Python lines (deterministic, unlike a clock on a shared machine);
the template scan runs in C, so its check is a generous deadline on the issue's 80 KB.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from relay.core.errors import PipelineError, PipelineInvalidError
from relay.core.pipeline_model import (
    MAX_FILE_BYTES,
    MAX_NESTING,
    MAX_STEPS,
    MAX_TASK_CHARS,
    Pipeline,
    parse_pipeline,
)
from relay.pipelines import files
from relay.pipelines.templates import FIELDS, StepOutputs, references, render
from relay.pipelines.validate import problems

RUNTIMES = ["demo"]


def _lines_run(fn: Callable[[], object]) -> int:
    """How many Python lines ``fn`` executes (every frame it calls, Relay's or not)."""
    count = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def _chain(n: int) -> Pipeline:
    """n steps, each after the one before and quoting the one before that (an ancestor
    that is not a direct dependency: the reference check must know the whole graph)."""
    nodes: list[dict[str, Any]] = [{"id": "n0", "provider": "demo", "task": "start"}]
    for i in range(1, n):
        task = f"go on from {{{{n{i - 2}.output}}}}" if i > 1 else "next"
        nodes.append({"id": f"n{i}", "provider": "demo", "task": task, "dependsOn": [f"n{i - 1}"]})
    return parse_pipeline({"name": "chain", "nodes": nodes})


def test_80_kb_of_openers_validates_in_seconds() -> None:
    # the old regex rescanned to the end from every "{{": 197 s for this task
    p = parse_pipeline({"name": "t", "nodes": [{"id": "a", "provider": "demo",
                                                 "task": "{{" * 40_000}]})
    started = time.monotonic()
    found = [str(x) for x in problems(p, RUNTIMES)]
    elapsed = time.monotonic() - started
    assert found == ["node 'a' field task: '{{' is never closed with '}}'"]
    assert elapsed < 5.0, f"80 KB of '{{{{' took {elapsed:.1f} s to validate"


def test_the_reference_scan_does_the_same_work_per_reference() -> None:
    def scan(n: int) -> int:
        text = "{{a.output}} x " * n
        return _lines_run(lambda: references(text))

    small, large = scan(500), scan(4000)
    assert large < 10 * small, (small, large)  # 8× the text: linear is 8×, quadratic 64×


def test_a_4000_node_chain_validates_fast() -> None:
    # one reachability walk per node took 19.7 s
    p = _chain(4000)
    started = time.monotonic()
    assert problems(p, RUNTIMES) == []
    assert time.monotonic() - started < 5.0


def test_graph_checks_do_the_same_work_per_node() -> None:
    small_p, large_p = _chain(250), _chain(2000)
    small = _lines_run(lambda: problems(small_p, RUNTIMES))
    large = _lines_run(lambda: problems(large_p, RUNTIMES))
    assert large < 12 * small, (small, large)  # 8× the nodes: linear is 8×, quadratic 64×


def test_many_unknown_dependencies_do_not_compare_every_name_with_every_other() -> None:
    nodes = [{"id": f"n{i}", "provider": "demo", "task": "x", "dependsOn": [f"m{i}"]}
             for i in range(3000)]
    p = parse_pipeline({"name": "t", "nodes": nodes})
    started = time.monotonic()
    found = problems(p, RUNTIMES)
    assert len(found) == 3000
    assert time.monotonic() - started < 5.0


def test_a_long_dependency_list_is_checked_once() -> None:
    deps = [f"n{i}" for i in range(3000)]
    nodes: list[dict[str, Any]] = [{"id": f"n{i}", "provider": "demo", "task": "x"}
                                   for i in range(3000)]
    nodes.append({"id": "last", "provider": "demo", "task": "x", "dependsOn": deps + deps})
    p = parse_pipeline({"name": "t", "nodes": nodes})
    started = time.monotonic()
    found = problems(p, RUNTIMES)
    assert len(found) == 3000
    assert all("listed twice" in str(x) for x in found)
    assert time.monotonic() - started < 5.0


def test_many_cycles_are_reported_without_walking_each_one_from_every_node() -> None:
    # 2,000 nodes on one ring, each also depending on the first: thousands of back edges
    n = 2000
    nodes = [{"id": f"n{i}", "provider": "demo", "task": "x",
              "dependsOn": [f"n{(i + 1) % n}", "n0"] if i else ["n1"]} for i in range(n)]
    p = parse_pipeline({"name": "t", "nodes": nodes})
    started = time.monotonic()
    cycles = [x for x in problems(p, RUNTIMES) if x.cycle]
    assert cycles
    assert all(c.cycle[0] == c.cycle[-1] for c in cycles)
    assert time.monotonic() - started < 5.0


# -- the tokenizer means what the old regex meant -----------------------------------------

_OLD_REF = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


def _old_references(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The regex the tokenizer replaced (quadratic on unclosed '{{'; fine on small text)."""
    name = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_-]*)\.([A-Za-z]+)\s*$")
    fields = ("output", "files", "commit", "branch", "session")
    refs, bad = [], []
    for match in _OLD_REF.finditer(text):
        found = name.match(match.group(1))
        if found is None or found.group(2) not in fields:
            bad.append(match.group(0))
        else:
            refs.append((found.group(1), found.group(2)))
    # the old code joined the text between matches before looking ("}" + "}" met across a
    # reference); the pieces are looked at one by one now
    rest = _OLD_REF.split(text)[::2]
    if any("{{" in piece for piece in rest):
        bad.append("unclosed")
    elif any("}}" in piece for piece in rest):
        bad.append("unopened")
    return refs, bad


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="{}a.x output files\n", max_size=60))
@example("{{a.a}}")  # an unknown field of a known node: kept as text, not looked up
def test_the_tokenizer_agrees_with_the_old_regex(text: str) -> None:
    refs, bad = references(text)
    old_refs, old_bad = _old_references(text)
    assert [(r.node, r.field) for r in refs] == old_refs
    assert len(bad) == len(old_bad)
    outputs = {"a": StepOutputs("OUT", ("f",), "c0", "b0", "s0")}

    def old_one(match: re.Match[str]) -> str:
        name = re.match(r"^\s*([A-Za-z][A-Za-z0-9_-]*)\.([A-Za-z]+)\s*$", match.group(1))
        if name is None or name.group(1) not in outputs or name.group(2) not in FIELDS:
            return match.group(0)
        return outputs[name.group(1)].value(name.group(2))
    assert render(text, outputs) == _OLD_REF.sub(old_one, text)


# -- what a repository's file may make Relay do -------------------------------------------

def _write(tmp_path: Path, obj: object) -> Path:
    path = tmp_path / "pipelines.json"
    path.write_text(json.dumps(obj))
    return path


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"name": "x", "description": "' + "a" * MAX_FILE_BYTES + '", "nodes": []}')
    with pytest.raises(PipelineError) as info:
        files.read_file(path)
    assert f"{MAX_FILE_BYTES // (1024 * 1024)} MiB" in info.value.message
    assert "\n" not in info.value.message


def test_too_many_steps_name_the_limit(tmp_path: Path) -> None:
    nodes = [{"id": f"n{i}", "provider": "demo", "task": "x"} for i in range(MAX_STEPS + 1)]
    with pytest.raises(PipelineInvalidError) as info:
        files.read_file(_write(tmp_path, {"name": "x", "nodes": nodes}))
    assert f"{MAX_STEPS + 1:,} steps" in str(info.value)
    assert f"at most {MAX_STEPS:,}" in str(info.value)


def test_a_task_over_the_template_limit_names_the_limit(tmp_path: Path) -> None:
    nodes = [{"id": "a", "provider": "demo", "task": "x" * (MAX_TASK_CHARS + 1)}]
    with pytest.raises(PipelineInvalidError) as info:
        files.read_file(_write(tmp_path, {"name": "x", "nodes": nodes}))
    assert f"at most {MAX_TASK_CHARS:,} characters" in str(info.value)
    assert "node 'a'" in str(info.value)


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 100_000])
def test_nesting_over_the_limit_names_the_limit(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"name": "x", "nodes": [], "description": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(PipelineError) as info:
        files.read_file(path)
    assert f"nested deeper than {MAX_NESTING}" in info.value.message


def test_files_within_the_limits_still_read(tmp_path: Path) -> None:
    nodes = [{"id": "a", "provider": "demo", "task": "x" * MAX_TASK_CHARS,
              "position": {"x": 1, "y": 2}}]
    found = files.read_file(_write(tmp_path, {"pipelines": [{"name": "x", "nodes": nodes}]}))
    assert len(found[0].nodes[0].task) == MAX_TASK_CHARS
