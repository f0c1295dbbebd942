"""The real Pi 0.73.1 driven through PiAdapter against the loopback Chat Completions mock.

Pi gets an isolated ``HOME`` and ``PI_CODING_AGENT_DIR`` whose ``models.json`` declares a
custom provider ``mock`` (``api: openai-completions``) pointing at
:mod:`tests.fakes.mock_chat_completions`, with its key in ``MOCK_API_KEY``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import ConfigError
from relay.core.events import (
    AgentEvent,
    LimitHit,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.models import PermissionPolicy
from relay.runtimes.base import RunRequest
from relay.runtimes.pi import PI_VERSION, PiAdapter
from tests.fakes.mock_chat_completions import serve
from tests.integration.helpers import agents_dir

pytestmark = pytest.mark.integration

KEY = "sk-mock-relay-pi"


@pytest.fixture(scope="session")
def real_pi() -> Path:
    """The real pi (RELAY_REAL_PI or the install script's prefix), pinned version.
    Pi prints its version on stderr."""
    if os.environ.get("RELAY_SKIP_INTEGRATION") == "1":
        pytest.skip("RELAY_SKIP_INTEGRATION=1")
    override = os.environ.get("RELAY_REAL_PI")
    exe = Path(override) if override else agents_dir() / "pi" / "node_modules" / ".bin" / "pi"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        pytest.fail(f"real pi not found at {exe}: run scripts/install-agent-clis.sh or set "
                    "RELAY_REAL_PI (RELAY_SKIP_INTEGRATION=1 skips this tier).", pytrace=False)
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)
    found = re.search(r"\d+\.\d+\.\d+", done.stdout + done.stderr)
    if (found.group(0) if found else None) != PI_VERSION \
            and os.environ.get("RELAY_REAL_CLI_ANY_VERSION") != "1":
        pytest.fail(f"{exe} is not pi {PI_VERSION}: {done.stdout}{done.stderr}", pytrace=False)
    return exe


def pi_env(tmp_path: Path, real_pi: Path, base_url: str, *, key: bool = True) -> dict[str, str]:
    home, agent = tmp_path / "home", tmp_path / "pi-agent"
    agent.mkdir(parents=True)
    home.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"mock": {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "MOCK_API_KEY",
        "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 128000,
                    "maxTokens": 8192,
                    "cost": {"input": 1.25, "output": 10, "cacheRead": 0.125,
                             "cacheWrite": 0}}]}}}))
    (agent / "settings.json").write_text(json.dumps({"retry": {
        "enabled": True, "maxRetries": 1, "baseDelayMs": 100, "provider": {"maxRetries": 0}}}))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TZ": "UTC",
           "LANG": "C.UTF-8", "TERM": "dumb", "PI_CODING_AGENT_DIR": str(agent),
           "RELAY_PI_BIN": str(real_pi)}
    if key:
        env["MOCK_API_KEY"] = KEY
    return env


def request(cwd: Path, prompt: str, **kw: Any) -> RunRequest:
    return RunRequest(prompt=prompt, cwd=cwd, model="mock-model", options={"provider": "mock"},
                      inactivity_timeout=60, **kw)


async def collect(adapter: PiAdapter, req: RunRequest) -> list[AgentEvent]:
    return [e async for e in adapter.run(req)]


def only(events: list[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def test_text_answer_with_usage_and_cost(real_pi: Path, git_repo: Path,
                                               tmp_path: Path) -> None:
    with serve([{"text": "Hello from the mock.", "reasoning": "Hmm."}]) as mock:
        adapter = PiAdapter(env=pi_env(tmp_path, real_pi, mock.base_url))
        events = await collect(adapter, request(git_repo, "Say hello"))
        sent = mock.completion_requests()
    assert only(events, SessionStarted)[0].agent_session_id
    (turn,) = only(events, TurnCompleted)
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens,
            turn.usage.output_tokens) == (300, 800, 25)
    assert turn.usage.cost_usd == pytest.approx(0.000725)
    end = events[-1]
    assert isinstance(end, SessionEnded)
    assert (end.outcome, end.result_text) == ("completed", "Hello from the mock.")
    assert sent[0]["headers"]["authorization"] == f"Bearer {KEY}"


async def test_tools_run_and_stream(real_pi: Path, git_repo: Path, tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}},
                              {"name": "write", "arguments": {"path": "hello.txt",
                                                              "content": "hello\n"}}]},
              {"text": "Done."}]
    with serve(script) as mock:
        events = await collect(PiAdapter(env=pi_env(tmp_path, real_pi, mock.base_url)),
                               request(git_repo, "Do it"))
    assert sorted(c.name for c in only(events, ToolCall)) == ["bash", "write"]
    results = only(events, ToolResult)
    assert any(r.output == "hi\n" and r.exit_code == 0 for r in results)
    assert (git_repo / "hello.txt").read_text() == "hello\n"
    assert events[-1].outcome == "completed"  # type: ignore[union-attr]


async def test_read_only_has_no_bash(real_pi: Path, git_repo: Path, tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "bash", "arguments": {"command": "touch x"}}]},
              {"text": "Could not."}]
    with serve(script) as mock:
        events = await collect(PiAdapter(env=pi_env(tmp_path, real_pi, mock.base_url)),
                               request(git_repo, "Run", permission=PermissionPolicy.READ_ONLY))
        tools = [t["function"]["name"] for t in mock.completion_requests()[0]["body"]["tools"]]
    assert "bash" not in tools
    assert only(events, ToolResult)[0].is_error is True
    assert [d.tool for d in only(events, PermissionDenied)] == ["bash"]  # a refused call
    assert not (git_repo / "x").exists()


async def test_exhausted_429_fails_although_pi_exits_0(real_pi: Path, git_repo: Path,
                                                       tmp_path: Path) -> None:
    script = {"default": {"error": {"status": 429, "headers": {"retry-after": "1"}}}}
    with serve(script) as mock:
        events = await collect(PiAdapter(env=pi_env(tmp_path, real_pi, mock.base_url)),
                               request(git_repo, "Say hello"))
        attempts = len(mock.completion_requests())
    assert attempts == 2  # maxRetries 1
    assert only(events, LimitHit)[0].limit == "rate_limit"
    end = events[-1]
    assert isinstance(end, SessionEnded)
    assert (end.outcome, end.exit_code) == ("failed", 0)


async def test_resume_sends_the_history(real_pi: Path, git_repo: Path, tmp_path: Path) -> None:
    with serve([{"text": "Noted."}, {"text": "PINEAPPLE"}]) as mock:
        env = pi_env(tmp_path, real_pi, mock.base_url)
        first = PiAdapter(env=env)
        await collect(first, request(git_repo, "Remember PINEAPPLE"))
        second = PiAdapter(env=env)
        events = await collect(second, request(git_repo, "What was the word?",
                                               resume_id=first.session_id))
        history = json.dumps(mock.completion_requests()[1]["body"]["messages"])
    assert second.session_id == first.session_id
    assert "Remember PINEAPPLE" in history
    assert events[-1].result_text == "PINEAPPLE"  # type: ignore[union-attr]


async def test_brief_reaches_the_system_prompt(real_pi: Path, git_repo: Path,
                                               tmp_path: Path) -> None:
    (git_repo / "brief.md").write_text("RELAY-BRIEF-MARKER: continue the task.")
    with serve([{"text": "ok"}]) as mock:
        await collect(PiAdapter(env=pi_env(tmp_path, real_pi, mock.base_url)),
                      request(git_repo, "Go on", brief_file=Path("brief.md")))
        system = mock.completion_requests()[0]["body"]["messages"][0]
    assert system["role"] == "system"
    assert "RELAY-BRIEF-MARKER" in json.dumps(system)


async def test_unset_key_variable_never_reaches_the_server(real_pi: Path, git_repo: Path,
                                                           tmp_path: Path) -> None:
    with serve([{"text": "unused"}]) as mock:
        adapter = PiAdapter(env=pi_env(tmp_path, real_pi, mock.base_url, key=False))
        with pytest.raises(ConfigError, match="MOCK_API_KEY"):
            await collect(adapter, request(git_repo, "Say hello"))
        assert mock.completion_requests() == []
