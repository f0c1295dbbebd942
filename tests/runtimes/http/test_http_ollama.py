"""The ollama runtime end to end against the loopback mock Ollama server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from relay.core.config import load_config
from relay.core.events import AgentError, Notice, ToolCall, ToolResult, TurnCompleted
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.http.ollama import host_url, list_models
from relay.runtimes.registry import make_adapter
from tests.conftest import make_repo
from tests.fakes import mock_ollama
from tests.runtimes.http.helpers import FILES, TOOL_TURNS, ended, of, run_adapter


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def test_a_task_with_tool_calls_through_a_session(engine: Engine, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    script = [{"text": f"step {i}", "tool_calls": [{"name": n, "arguments": a}],
               "usage": {"prompt_eval_count": 500, "eval_count": 20}}
              for i, (n, a) in enumerate(TOOL_TURNS, 1)] + [{"text": "Done.", "chunk": 2}]
    with mock_ollama.serve(script) as mock:
        monkeypatch.setenv("OLLAMA_HOST", mock.base_url)
        row = await engine.run_session(SessionSpec(repo=repo, task="Add hello", runtime="ollama",
                                                   model="qwen3-coder:30b"))
        last = mock.chat_requests()[-1]["body"]
    assert row.state == "completed", row.reason
    events = [r.event for r in await engine.session_events(row.id)]
    assert [c.name for c in of(events, ToolCall)] == ["read_file", "write_file", "run_command"]
    assert "alpha" in of(events, ToolResult)[0].output
    assert (Path(row.workdir or "") / "out/hello.txt").exists()
    usage = of(events, TurnCompleted)[0].usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (500, 20, 0.0)
    assert [m["role"] for m in last["messages"]].count("tool") == 3
    assert last["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"path": "notes.txt"}


async def test_a_model_without_tools_goes_on_as_a_plain_chat(tmp_path: Path) -> None:
    with mock_ollama.serve([{"text": "I can only talk."}]) as mock:
        events = await run_adapter("ollama", {"OLLAMA_HOST": mock.base_url},
                                   make_repo(tmp_path / "r"), model="gemma2:2b")
        bodies = [r["body"] for r in mock.chat_requests()]
    assert "tools" in bodies[0]
    assert "tools" not in bodies[1]
    fallback = [n for n in of(events, Notice) if n.category == "fallback"]
    assert fallback
    assert "does not support tools" in fallback[0].message
    assert ended(events).result_text == "I can only talk."


async def test_the_models_are_listed_from_the_server(tmp_path: Path) -> None:
    with mock_ollama.serve([{"text": "hi"}]) as mock:
        async with httpx.AsyncClient() as client:
            assert await list_models(client, mock.base_url) == ["qwen3-coder:30b", "gemma2:2b"]
        events = await run_adapter("ollama", {"OLLAMA_HOST": mock.base_url},
                                   make_repo(tmp_path / "r"))
        assert mock.chat_requests()[0]["body"]["model"] == "qwen3-coder:30b"
        info = make_adapter("ollama", {"OLLAMA_HOST": mock.base_url}).info()
    assert any("using qwen3-coder:30b" in n.message for n in of(events, Notice))
    assert info.problem is None
    assert info.version == f"{mock_ollama.VERSION} (2 models)"


def test_doctor_says_when_ollama_is_not_running() -> None:
    info = make_adapter("ollama", {"OLLAMA_HOST": "127.0.0.1:9"}).info()
    assert info.problem is not None
    assert "not reachable" in info.problem
    assert "ollama serve" in (info.hint or "")
    assert host_url({"OLLAMA_HOST": "0.0.0.0:11434"}) == "http://127.0.0.1:11434"


@pytest.mark.parametrize(("turn", "category"), [
    ({"malformed": True, "text": "half"}, "malformed"),
    ({"stream_error": "model runner has unexpectedly stopped"}, "unknown"),
    ({"error": {"status": 500, "message": "boom"}, "repeat": 3}, "overloaded"),
])
async def test_failures_end_the_run_clearly(tmp_path: Path, turn: dict[str, object],
                                            category: str) -> None:
    with mock_ollama.serve([turn]) as mock:
        events = await run_adapter("ollama", {"OLLAMA_HOST": mock.base_url},
                                   make_repo(tmp_path / "r"), model="qwen3-coder:30b",
                                   options={"retry_max_delay": 0.01})
    errors = of(events, AgentError)
    assert errors
    assert errors[-1].category == category
    assert ended(events).outcome == "failed"
