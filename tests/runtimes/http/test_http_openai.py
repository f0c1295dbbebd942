"""The openai (Responses) and openai-chat (Chat Completions) runtimes end to end against
their loopback mocks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.config import load_config
from relay.core.events import LimitHit, Notice, ToolCall, ToolResult, TurnCompleted
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.conftest import make_repo
from tests.fakes import mock_chat_completions, mock_openai
from tests.runtimes.http.helpers import FILES, KEY, READ_ONLY, TOOL_TURNS, ended, of, run_adapter

MODEL = "gpt-5.5"  # $5 in / $30 out / $0.5 cache read per Mtok


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


def responses_turn(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"items": [{"type": "function_call", "name": name, "arguments": args,
                       "call_id": f"call_{i}"}],
            "usage": {"input_tokens": 1200, "cached_tokens": 200, "output_tokens": 40}}


async def test_responses_task_through_a_session(engine: Engine, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    script = [responses_turn(i, n, a) for i, (n, a) in enumerate(TOOL_TURNS, 1)]
    script.append({"reasoning": "All done.", "text": "Wrote out/hello.txt."})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with mock_openai.serve(script) as mock:
        monkeypatch.setenv("OPENAI_BASE_URL", mock.base_url)
        row = await engine.run_session(SessionSpec(repo=repo, task="Add hello", runtime="openai",
                                                   model=MODEL))
        requests = mock.response_requests()
    assert row.state == "completed", row.reason
    events = [r.event for r in await engine.session_events(row.id)]
    assert [c.call_id for c in of(events, ToolCall)] == ["call_1", "call_2", "call_3"]
    assert of(events, ToolResult)[2].exit_code == 0
    assert (Path(row.workdir or "") / "out/hello.txt").exists()
    usage = of(events, TurnCompleted)[0].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (1000, 200, 40)
    assert usage.cost_usd == pytest.approx((1000 * 5 + 200 * 0.5 + 40 * 30) / 1e6)
    sent = {k.lower(): v for k, v in requests[0]["headers"].items()}
    assert sent["authorization"] == f"Bearer {KEY}"
    outputs = [i for i in requests[-1]["body"]["input"] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_1", "call_2", "call_3"]


async def test_chat_completions_task_with_streamed_tool_calls(tmp_path: Path) -> None:
    cwd = make_repo(tmp_path / "r", FILES)
    script = [{"tool_calls": [{"name": n, "arguments": a, "id": f"c{i}"}], "chunk": 5}
              for i, (n, a) in enumerate(TOOL_TURNS, 1)] + [{"text": "Finished."}]
    with mock_chat_completions.serve(script) as mock:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": mock.base_url}
        events = await run_adapter("openai-chat", env, cwd, model="some-local-model")
        last = mock.completion_requests()[-1]["body"]
    assert [r.call_id for r in of(events, ToolResult)] == ["c1", "c2", "c3"]
    assert (cwd / "out/hello.txt").read_text() == "hello from the model\n"
    assert ended(events).result_text == "Finished."
    usage = of(events, TurnCompleted)[0].usage
    assert (usage.input_tokens, usage.cache_read_tokens) == (300, 800)  # 1100 prompt − 800 cached
    assert usage.cost_usd is None  # a model the price table does not know: unknown, never 0
    assert last["stream_options"] == {"include_usage": True}
    assert [m["role"] for m in last["messages"]][:3] == ["system", "user", "assistant"]


async def test_openai_speaks_chat_completions_when_told(tmp_path: Path) -> None:
    with mock_chat_completions.serve([{"text": "hi"}]) as mock:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": mock.base_url, "OPENAI_API": "chat"}
        events = await run_adapter("openai", env, make_repo(tmp_path / "r"), permission=READ_ONLY)
        tools = {t["function"]["name"] for t in mock.completion_requests()[0]["body"]["tools"]}
    assert ended(events).outcome == "completed"
    assert tools == {"read_file", "list_files"}


async def test_chat_429_is_retried_then_succeeds(tmp_path: Path) -> None:
    script = [{"error": {"status": 429, "headers": {"retry-after": "0"}}}, {"text": "ok"}]
    with mock_chat_completions.serve(script) as mock:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": mock.base_url}
        events = await run_adapter("openai-chat", env, make_repo(tmp_path / "r"))
    assert [n.category for n in of(events, Notice)] == ["retry"]
    assert ended(events).outcome == "completed"


async def test_responses_usage_limit_is_a_limit_hit(tmp_path: Path) -> None:
    script = [{"error": {"status": 429, "body": {"error": {
        "type": "usage_limit_reached", "message": "The usage limit has been reached",
        "resets_at": "@now+7200"}}}}]
    with mock_openai.serve(script) as mock:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": mock.base_url}
        events = await run_adapter("openai", env, make_repo(tmp_path / "r"))
        assert len(mock.response_requests()) == 1
    hit = of(events, LimitHit)
    assert hit
    assert hit[0].limit == "usage_limit"
    assert hit[0].resets_at is not None
    assert ended(events).outcome == "failed"


async def test_a_disconnected_stream_fails_clearly(tmp_path: Path) -> None:
    with mock_chat_completions.serve([{"disconnect": True, "text": "Partial "}]) as mock:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": mock.base_url}
        events = await run_adapter("openai-chat", env, make_repo(tmp_path / "r"))
    assert ended(events).outcome == "failed"
    assert "finish_reason" in (ended(events).reason or "") or ended(events).reason
