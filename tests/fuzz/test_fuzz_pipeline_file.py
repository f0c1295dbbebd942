"""A repository's pipeline file, generated: parsing and validating it raises nothing but a
RelayError (PipelineError / PipelineInvalidError, each a clear message)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from relay.core.errors import RelayError
from relay.core.pipeline_model import Pipeline
from relay.pipelines import files
from relay.pipelines.validate import problems
from tests.fuzz.strategies import FUZZ, json_values

NODE_KEYS = ["id", "provider", "task", "dependsOn", "fallback", "verify", "model", "account",
             "group", "timeout", "retries", "permission", "position", "x", "y"]
TOP_KEYS = ["name", "description", "nodes", "concurrency", "groups", "budgetUsd", "backoff",
            "pipelines"]

_node = st.fixed_dictionaries({"id": st.sampled_from(["a", "b", "c", "9", ""]) | st.text(max_size=5),
                               "provider": st.sampled_from(["demo", "claude", "x"]),
                               "task": st.sampled_from(["t", "{{a.output}}", "{{", "}}", "{{b.x}}"])
                               | st.text(max_size=20)},
                              optional={k: json_values(NODE_KEYS) for k in NODE_KEYS[3:]}) | \
    st.builds(lambda d: {"id": "a", "provider": "demo", "task": "t", **d},
              st.dictionaries(st.sampled_from(NODE_KEYS), json_values(NODE_KEYS), max_size=4))
_pipeline = st.fixed_dictionaries({"name": st.text(max_size=8) | st.just("p"),
                                   "nodes": st.lists(_node, max_size=5)},
                                  optional={k: json_values(TOP_KEYS) for k in TOP_KEYS[1:] if k != "nodes"})
_files = st.one_of(
    _pipeline.map(lambda p: json.dumps(p, default=str)),
    st.lists(_pipeline, max_size=3).map(lambda ps: json.dumps({"pipelines": ps}, default=str)),
    json_values(TOP_KEYS + NODE_KEYS).map(lambda v: json.dumps(v, default=str)),
    st.sampled_from(['{"pipelines": ' + "[" * 5000 + "]" * 5000 + "}",
                     '{"name": "p", "nodes": [], "concurrency": ' + "9" * 5000 + "}",
                     '{"name": "p", "nodes": [{"id": "a", "provider": "demo", "task": "t", '
                     '"timeout": Infinity}]}', '{"name": "p", "budgetUsd": NaN}', "{" * 40]),
    st.text(max_size=60),
)


@FUZZ
@given(text=_files)
def test_only_relay_errors_leave_parse_and_validate(text: str) -> None:
    pipelines, refused = _parse(text)
    if refused is not None:
        assert refused.message  # says what happened (PipelineInvalidError lists problems)
        return
    for pipeline in pipelines:
        for problem in problems(pipeline, ["demo", "claude"]):
            assert str(problem)


def _parse(text: str) -> tuple[list[Pipeline], RelayError | None]:
    try:
        return files.parse_text(text, ".relay/pipelines.json"), None
    except RelayError as exc:
        return [], exc
