"""Talking to an HTTP runtime (issue 22): Relay runs the agent loop, so a steered message
goes into the very next model request, and an interrupt abandons the request in flight and
keeps the conversation — against the loopback mocks."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from relay.core.capabilities import Cap, Level
from relay.core.errors import RelayError
from relay.core.events import AgentEvent, AssistantText, SessionStarted, ToolCall, ToolResult
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest
from relay.runtimes.http import conversation as convs
from relay.runtimes.http.loop import HttpAdapter
from relay.runtimes.registry import make_adapter
from tests.conftest import make_repo
from tests.fakes import mock_anthropic, mock_openai
from tests.runtimes.http.helpers import FILES, KEY, ended, of

MODEL = "gpt-5.5"


def openai(mock: Any, tmp_path: Path) -> tuple[HttpAdapter, RunRequest]:
    adapter = make_adapter("openai", {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": mock.base_url,
                                      "PATH": "/usr/bin:/bin"})
    assert isinstance(adapter, HttpAdapter)
    repo = make_repo(tmp_path / "repo", FILES)
    return adapter, RunRequest(prompt="Read the notes", cwd=repo, model=MODEL,
                               options={"data_dir": str(tmp_path / "data")})


def user_texts(body: dict[str, Any]) -> list[str]:
    return [str(i["content"]) for i in body["input"] if i.get("role") == "user"]


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": args, "call_id": call_id}


def test_the_table() -> None:
    for runtime in ("anthropic", "openai", "openai-chat", "ollama"):
        caps = make_adapter(runtime, {}).capabilities
        assert caps.level(Cap.STEER) == Level.YES
        assert caps.level(Cap.INTERRUPT) == Level.PARTIAL


async def test_a_steered_message_goes_into_the_next_request_after_the_tool_results(
        tmp_path: Path) -> None:
    script = [{"items": [tool_call("read_file", {"path": "notes.txt"}, "call_1")]},
              {"text": "Read it, and noted the steer."}]
    with mock_openai.serve(script) as mock:
        adapter, request = openai(mock, tmp_path)
        events: list[AgentEvent] = []
        async for event in adapter.run(request):
            events.append(event)
            if isinstance(event, ToolCall):  # mid-turn: the model asked for a tool
                await adapter.steer("Also count the lines.")
        sent = [r["body"] for r in mock.response_requests()]
    assert ended(events).outcome == "completed"
    assert len(sent) == 2
    assert user_texts(sent[0]) == ["Read the notes"]
    assert user_texts(sent[1]) == ["Read the notes", "Also count the lines."]
    kinds = [i.get("type") or i.get("role") for i in sent[1]["input"]]
    assert kinds.index("function_call_output") < len(kinds) - 1  # the steer comes after it
    saved = convs.load(tmp_path / "data", "openai", str(of(events, SessionStarted)[0]
                                                        .agent_session_id))
    assert [m.text for m in saved.messages if m.role == "user"] == [
        "Read the notes", "Also count the lines."]


async def test_a_message_steered_during_the_final_answer_gets_one_more_request(
        tmp_path: Path) -> None:
    script = [{"text": "All done."}, {"text": "Counted: 2 lines."}]
    with mock_openai.serve(script) as mock:
        adapter, request = openai(mock, tmp_path)
        events: list[AgentEvent] = []
        async for event in adapter.run(request):
            events.append(event)
            if isinstance(event, AssistantText) and event.text == "All done.":
                await adapter.steer("Count the lines too.")
        sent = [r["body"] for r in mock.response_requests()]
    assert len(sent) == 2
    assert user_texts(sent[1])[-1] == "Count the lines too."
    assert ended(events).result_text == "Counted: 2 lines."


async def test_steer_without_a_running_turn_is_a_clear_error(tmp_path: Path) -> None:
    with mock_openai.serve([{"text": "hi"}]) as mock:
        adapter, _ = openai(mock, tmp_path)
        with pytest.raises(RelayError, match="No openai turn is running"):
            await adapter.steer("hello?")


async def test_interrupt_abandons_the_request_in_flight_and_resume_continues(
        tmp_path: Path) -> None:
    script = [{"text": "never sent", "delay_s": 30}, {"text": "Continuing."}]
    with mock_openai.serve(script) as mock:
        adapter, request = openai(mock, tmp_path)
        events: list[AgentEvent] = []
        started = time.monotonic()
        async for event in adapter.run(request):
            events.append(event)
            if isinstance(event, SessionStarted):
                asyncio.get_running_loop().create_task(interrupt_once_asked(adapter, mock))
        took = time.monotonic() - started
        end = ended(events)
        assert (end.outcome, end.reason) == ("interrupted", INTERRUPTED_REASON)
        assert took < 20  # not the 30 s the answer would have taken
        conv_id = str(of(events, SessionStarted)[0].agent_session_id)
        again = make_adapter("openai", dict(adapter.env))
        resumed = [e async for e in again.run(RunRequest(
            prompt="Go on", cwd=request.cwd, model=MODEL, resume_id=conv_id,
            options=request.options))]
        sent = [r["body"] for r in mock.response_requests()]
    assert ended(resumed).outcome == "completed"
    assert user_texts(sent[-1]) == ["Read the notes", "Go on"]


async def interrupt_once_asked(adapter: HttpAdapter, mock: Any) -> None:
    deadline = time.monotonic() + 10
    while not mock.response_requests():
        assert time.monotonic() < deadline, "the model request never arrived"
        await asyncio.sleep(0.02)  # polling the mock's log for the condition
    await adapter.interrupt()


async def test_calls_left_after_an_interrupt_are_refused_so_the_conversation_stays_whole(
        tmp_path: Path) -> None:
    script = [{"items": [tool_call("read_file", {"path": "notes.txt"}, "call_1"),
                         tool_call("read_file", {"path": "README.md"}, "call_2")]}]
    with mock_openai.serve(script) as mock:
        adapter, request = openai(mock, tmp_path)
        events: list[AgentEvent] = []
        async for event in adapter.run(request):
            events.append(event)
            if isinstance(event, ToolCall) and event.call_id == "call_1":
                await adapter.interrupt()
    assert ended(events).outcome == "interrupted"
    results = of(events, ToolResult)
    assert [r.call_id for r in results] == ["call_1", "call_2"]
    assert all(r.is_error and "Relay stopped the turn" in r.output for r in results)
    saved = convs.load(tmp_path / "data", "openai", str(of(events, SessionStarted)[0]
                                                        .agent_session_id))
    assert [m.call_id for m in saved.messages if m.role == "tool"] == ["call_1", "call_2"]


async def test_anthropic_sends_a_steered_message_in_the_tool_results_turn(
        tmp_path: Path) -> None:
    script = [{"tool_use": {"name": "read_file", "input": {"path": "notes.txt"}}},
              {"text": "ok"}]
    with mock_anthropic.serve(script) as mock:
        adapter = make_adapter("anthropic", {"ANTHROPIC_API_KEY": KEY,
                                             "ANTHROPIC_BASE_URL": mock.base_url,
                                             "PATH": "/usr/bin:/bin"})
        repo = make_repo(tmp_path / "repo", FILES)
        events: list[AgentEvent] = []
        async for event in adapter.run(RunRequest(prompt="Read", cwd=repo,
                                                  options={"data_dir": str(tmp_path / "d")})):
            events.append(event)
            if isinstance(event, ToolCall):
                await adapter.steer("And then stop.")
        sent = mock.message_requests()
    assert ended(events).outcome == "completed", json.dumps([e.kind for e in events])
    last = sent[-1]["body"]["messages"][-1]
    assert last["role"] == "user"
    assert [c["type"] for c in last["content"]] == ["tool_result", "text"]
    assert last["content"][1]["text"] == "And then stop."
