"""JSON from outside Relay (a repository's pipeline file, an audit log line, a contract, an
agent's stream line) is parsed by relay.core.jsonvalue.loads: deeply nested text or a
5,000-digit integer is one clear error (or a skipped line), never a RecursionError or a
stray ValueError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay.core import audit
from relay.core.errors import ContractError, PipelineError
from relay.core.events import AgentError
from relay.core.jsonvalue import MAX_DEPTH, loads
from relay.pipelines import files, planner
from relay.runtimes.claude_stream import ClaudeStreamParser
from relay.sessions import contract

DEEP = "[" * 100_000 + "]" * 100_000  # the standard parser's RecursionError
DEEPISH = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)  # parses, but deeper than allowed
HUGE_INT = "9" * 5000  # int() of it: ValueError, Exceeds the limit (4300 digits)


@pytest.mark.parametrize("text", [DEEP, DEEPISH, HUGE_INT, '{"a": ' + DEEP + "}", "{", "\ud800"],
                         ids=["deep", "deeper-than-allowed", "5000-digits", "deep-in-object",
                              "invalid", "lone-surrogate"])
@pytest.mark.parametrize("fast", [False, True], ids=["json", "orjson"])
def test_loads_makes_every_bad_input_one_decode_error(text: str, fast: bool) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads(text, fast=fast)


def test_loads_reads_what_is_deep_enough_and_not_deeper() -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(ok) == loads(ok, fast=True) == json.loads(ok)
    wide = json.dumps([[i, {"k": [i]}] for i in range(1000)])  # many brackets, shallow
    assert loads(wide) == json.loads(wide)


@pytest.mark.parametrize("payload", [DEEP, HUGE_INT], ids=["deep", "5000-digits"])
def test_a_pipeline_file_that_is_too_deep_or_too_big_is_a_pipeline_error(payload: str) -> None:
    with pytest.raises(PipelineError, match=r"is not valid JSON|nested deeper than 32 levels"):
        files.parse_text('{"pipelines": ' + payload + "}", ".relay/pipelines.json")


@pytest.mark.parametrize("payload", [DEEP, HUGE_INT], ids=["deep", "5000-digits"])
def test_a_planner_answer_that_is_too_deep_is_refused(payload: str) -> None:
    with pytest.raises(PipelineError):
        planner.extract('{"name": "p", "nodes": ' + payload + "}")


@pytest.mark.parametrize("payload", [DEEP, HUGE_INT], ids=["deep", "5000-digits"])
def test_an_audit_line_that_is_too_deep_is_a_broken_line(payload: str, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    good = audit.AuditLog(log)
    good.append("session.created", {"id": "s1"})
    with log.open("ab") as fh:
        fh.write(b'{"ts": "x", "data": ' + payload.encode() + b"}\n")
    report = audit.verify(log)
    assert not report.ok
    assert report.broken_line == 2
    assert report.kind == audit.BreakKind.BAD_JSON


@pytest.mark.parametrize("payload", [DEEP, HUGE_INT], ids=["deep", "5000-digits"])
def test_a_contract_that_is_too_deep_is_refused(payload: str) -> None:
    envelope = ('{"version": 2, "intent": ' + payload + "}").encode()
    with pytest.raises(ContractError):
        contract.verify(envelope, b"k" * 32)
    assert contract.claims_simulation(envelope) is False


@pytest.mark.parametrize("payload", [DEEPISH, "[" * 1000 + "]" * 1000],
                         ids=["deeper-than-allowed", "within-orjson"])
def test_a_stream_line_that_is_too_deep_is_reported_and_skipped(payload: str) -> None:
    parser = ClaudeStreamParser()
    events = parser.feed_text('{"type": "assistant", "message": ' + payload + "}")
    assert len(events) == 1
    assert isinstance(events[0], AgentError)
    assert "not a JSON object" in events[0].message


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_brackets_inside_strings_neither_hide_nor_fake_depth(as_bytes: bool) -> None:
    hidden = "[" * (MAX_DEPTH + 1) + '"]]]]"' + "]" * (MAX_DEPTH + 1)  # closers in a string
    fake = '["' + "[" * 500 + '", "\\"{{{{"]'  # openers in strings: depth 1
    for text, deep in ((hidden, True), (fake, False)):
        data = text.encode() if as_bytes else text
        if deep:
            with pytest.raises(json.JSONDecodeError):
                loads(data)
        else:
            assert loads(data) == json.loads(text)
