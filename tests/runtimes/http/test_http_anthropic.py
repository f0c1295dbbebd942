"""The anthropic runtime end to end: Relay sessions in git worktrees against the loopback
Messages mock (real SSE, real tool calls, real commands)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.config import load_config
from relay.core.events import (
    AgentError,
    HandoffStep,
    LimitHit,
    Notice,
    PermissionDenied,
    QuotaUpdate,
    SessionEnded,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.conftest import make_repo
from tests.fakes import mock_anthropic
from tests.runtimes.http.helpers import (
    FILES,
    KEY,
    READ_ONLY,
    TOOL_TURNS,
    ended,
    of,
    run_adapter,
    session_texts,
)

MODEL = "claude-sonnet-4-5"  # priced as claude-sonnet-4 ($3/$15 per Mtok)


def tool_turn(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"text": f"Step {i}.", "tool_use": {"id": f"toolu_{i}", "name": name, "input": args},
            "usage": {"input_tokens": 1000, "output_tokens": 100}}


SCRIPT = {"turns": [tool_turn(i, n, a) for i, (n, a) in enumerate(TOOL_TURNS, 1)]
          + [{"text": "Done: wrote out/hello.txt.", "usage": {"input_tokens": 2000,
                                                              "output_tokens": 50}}]}


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES)


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


async def test_a_task_reads_writes_and_runs_a_command_in_its_worktree(
        engine: Engine, repo: Path, keyed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with mock_anthropic.serve(SCRIPT) as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.base_url)
        row = await engine.run_session(SessionSpec(repo=repo, task="Add hello", runtime="anthropic",
                                                   model=MODEL))
        requests = mock.message_requests()
    assert row.state == "completed", row.reason
    records = [r.event for r in await engine.session_events(row.id)]
    calls = of(records, ToolCall)
    results = [e for e in records if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["read_file", "write_file", "run_command"]
    assert [r.call_id for r in results] == ["toolu_1", "toolu_2", "toolu_3"]
    assert "alpha" in results[0].output
    assert not results[0].is_error
    assert results[2].exit_code == 0
    assert "out/" in results[2].output
    assert (Path(row.workdir or "") / "out/hello.txt").read_text() == "hello from the model\n"
    assert not (repo / "out").exists()  # the worktree, not the user's checkout
    turns = [e for e in records if isinstance(e, TurnCompleted)]
    assert len(turns) == 4
    assert turns[0].usage.input_tokens == 1000
    assert turns[0].usage.output_tokens == 100
    assert turns[0].usage.cost_usd == pytest.approx((1000 * 3 + 100 * 15) / 1e6)
    assert row.usage.input_tokens == 5000
    assert of(records, SessionEnded)[-1].result_text == "Done: wrote out/hello.txt."
    # the wire: the key as x-api-key, tool results sent back with the model's ids
    assert all(r["headers"].get("x-api-key") == KEY for r in requests)
    last = requests[-1]["body"]
    assert last["stream"] is True
    assert last["model"] == MODEL
    assert {t["name"] for t in last["tools"]} == {"read_file", "list_files", "write_file",
                                                  "edit_file", "run_command"}
    results_sent = [b for m in last["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert [b["tool_use_id"] for b in results_sent] == ["toolu_1", "toolu_2", "toolu_3"]
    # the key is nowhere Relay writes: events, database, conversation file, logs
    assert KEY not in await session_texts(engine, row.id)
    await engine.close()
    for path in engine.config.home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    db = sqlite3.connect(engine.config.db_path)
    assert not any(KEY in str(v) for t in ("events", "runs", "sessions")
                   for row_ in db.execute(f"SELECT * FROM {t}") for v in row_)
    db.close()


async def test_resume_continues_the_saved_conversation(engine: Engine, repo: Path, keyed: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    script = {"turns": [{"text": "First answer."}, {"text": "Second answer."}]}
    with mock_anthropic.serve(script) as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.base_url)
        first = await engine.run_session(SessionSpec(repo=repo, task="one", runtime="anthropic"))
        again = await engine.wait_session(await engine.continue_session(first.id, "two"))
        second = mock.message_requests()[1]["body"]["messages"]
    assert again.state == "completed", again.reason
    texts = [b.get("text") for m in second for b in m["content"]]
    assert texts == ["one", "First answer.", "two"]
    runs = await engine.runs(first.id)
    assert runs[0].agent_session_id == runs[1].agent_session_id
    saved = engine.config.home / "conversations" / "anthropic" / f"{runs[0].agent_session_id}.json"
    assert len(json.loads(saved.read_text())["messages"]) == 4


async def test_a_429_with_retry_after_is_retried_then_succeeds(tmp_path: Path) -> None:
    script = {"turns": [{"error": {"status": 429, "type": "rate_limit_error",
                                   "message": "Number of requests has exceeded your rate limit",
                                   "headers": {"retry-after": "0"}}},
                        {"text": "ok"}]}
    with mock_anthropic.serve(script) as mock:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": mock.base_url}
        events = await run_adapter("anthropic", env, make_repo(tmp_path / "r"))
        assert len(mock.message_requests()) == 2
    notices = of(events, Notice)
    assert notices
    assert "HTTP 429" in notices[0].message
    assert "retrying" in notices[0].message
    assert ended(events).outcome == "completed"


async def test_a_usage_limit_hands_the_session_to_the_next_chain_entry(
        engine: Engine, repo: Path, keyed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    limit = {"error": {"status": 429, "type": "rate_limit_error",
                       "message": "This request would exceed your account's rate limit.",
                       "headers": {"anthropic-ratelimit-unified-status": "rejected",
                                   "anthropic-ratelimit-unified-reset": "@now+18000",
                                   "anthropic-ratelimit-unified-representative-claim": "five_hour",
                                   "anthropic-ratelimit-unified-5h-status": "rejected",
                                   "anthropic-ratelimit-unified-5h-utilization": "1.0",
                                   "anthropic-ratelimit-unified-5h-reset": "@now+18000"}}}
    with mock_anthropic.serve({"turns": [limit]}) as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.base_url)
        row = await engine.run_session(SessionSpec(repo=repo, task="Add hello",
                                                   chain=["anthropic", "demo"]))
        assert len(mock.message_requests()) == 1  # a usage limit is not retried
    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [(r.runtime, r.outcome) for r in runs] == [("anthropic", "failed"), ("demo", "completed")]
    records = [r.event for r in await engine.session_events(row.id)]
    hit = next(e for e in records if isinstance(e, LimitHit))
    assert hit.limit == "usage_limit"
    assert hit.resets_at is not None
    quota = [e for e in records if isinstance(e, QuotaUpdate)]
    assert quota
    assert quota[0].window == "five_hour"
    assert quota[0].used_percent == 100.0
    assert of(records, HandoffStep)[0].reason == "usage_limit"


async def test_rate_limit_headers_become_quota_updates(tmp_path: Path) -> None:
    headers = {"anthropic-ratelimit-unified-5h-utilization": "0.42",
               "anthropic-ratelimit-unified-5h-status": "allowed",
               "anthropic-ratelimit-unified-5h-reset": "@now+3600",
               "anthropic-ratelimit-unified-7d-utilization": "0.1",
               "anthropic-ratelimit-unified-7d-status": "allowed"}
    with mock_anthropic.serve([{"text": "hi", "headers": headers}]) as mock:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": mock.base_url}
        events = await run_adapter("anthropic", env, make_repo(tmp_path / "r"))
    quota = {e.window: e for e in events if isinstance(e, QuotaUpdate)}
    assert quota["five_hour"].used_percent == pytest.approx(42.0)
    assert quota["five_hour"].resets_at is not None
    assert quota["five_hour"].status == "allowed"
    assert quota["seven_day"].used_percent == pytest.approx(10.0)
    assert quota["five_hour"].origin == "anthropic headers"


async def test_exhausted_retries_end_in_a_limit_hit(tmp_path: Path) -> None:
    busy = {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded",
                      "headers": {"retry-after": "0"}}, "repeat": 3}
    with mock_anthropic.serve([busy]) as mock:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": mock.base_url}
        events = await run_adapter("anthropic", env, make_repo(tmp_path / "r"))
        assert len(mock.message_requests()) == 3
    assert len(of(events, Notice)) == 2
    hit = of(events, LimitHit)
    assert hit
    assert hit[0].limit == "overloaded"
    error = of(events, AgentError)[0]
    assert error.category == "overloaded"
    assert error.http_status == 529
    assert ended(events).outcome == "failed"


async def test_a_plan_answer_is_validated_and_repaired_once(tmp_path: Path) -> None:
    good = {"name": "p", "nodes": [{"id": "a", "provider": "demo", "task": "t"}]}
    script = [{"text": "```json\n{\"name\": \"p\", \"nodes\": [{\"id\": 5}]}\n```"},
              {"text": json.dumps(good)}]
    with mock_anthropic.serve(script) as mock:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": mock.base_url}
        events = await run_adapter("anthropic", env, make_repo(tmp_path / "r"),
                                   options={"purpose": "plan"}, permission=READ_ONLY)
        repair = mock.message_requests()[1]["body"]["messages"][-1]["content"][0]["text"]
    assert "not valid" in repair
    assert "nodes.0" in repair
    assert ended(events).outcome == "completed"
    assert json.loads(ended(events).result_text or "") == good


async def test_read_only_offers_no_writing_tool_and_refuses_one(tmp_path: Path) -> None:
    script = [tool_turn(1, "write_file", {"path": "x.txt", "content": "x"}), {"text": "ok"}]
    cwd = make_repo(tmp_path / "r")
    with mock_anthropic.serve(script) as mock:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": mock.base_url}
        events = await run_adapter("anthropic", env, cwd, permission=READ_ONLY)
        offered = {t["name"] for t in mock.message_requests()[0]["body"]["tools"]}
    assert offered == {"read_file", "list_files"}
    denied = of(events, PermissionDenied)
    assert denied
    assert denied[0].tool == "write_file"
    assert of(events, ToolResult)[0].is_error
    assert not (cwd / "x.txt").exists()


async def test_paths_outside_the_worktree_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("private")
    script = [tool_turn(1, "read_file", {"path": "../outside.txt"}), {"text": "ok"}]
    with mock_anthropic.serve(script) as mock:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": mock.base_url}
        events = await run_adapter("anthropic", env, make_repo(tmp_path / "r"))
    result = of(events, ToolResult)[0]
    assert result.is_error
    assert "private" not in result.output
    assert "outside the worktree" in result.output


async def test_a_missing_key_is_a_clear_error(engine: Engine, repo: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    row = await engine.run_session(SessionSpec(repo=repo, task="t", runtime="anthropic"))
    assert row.state == "failed"
    assert "No API key for anthropic" in (row.reason or "")
    errors = of([r.event for r in await engine.session_events(row.id)], AgentError)
    assert "relay-cli accounts add anthropic <label> --auth api_key --api-key-stdin" in \
        errors[0].message


async def test_an_api_key_account_brings_its_key_from_the_vault(
        engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-the-users-own-key-must-not-be-used")
    await engine.accounts.add("anthropic", "work", None, "api_key", KEY)
    with mock_anthropic.serve([{"text": "ok"}]) as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.base_url)
        row = await engine.run_session(SessionSpec(repo=repo, task="t", chain=["anthropic:work"]))
        sent = mock.message_requests()[0]["headers"]["x-api-key"]
    assert row.state == "completed", row.reason
    assert sent == KEY
    assert KEY not in await session_texts(engine, row.id)


async def test_a_malformed_stream_fails_the_run_clearly(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.mock_anthropic import _Handler

    def broken(self: _Handler, message: dict[str, Any], turn: dict[str, Any]) -> None:
        self._start_sse(None)
        self.wfile.write(b"event: message_start\ndata: {not json\n\n")

    monkeypatch.setattr(_Handler, "_stream", broken)
    with mock_anthropic.serve([{"text": "x"}]) as mock:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": mock.base_url}
        events = await run_adapter("anthropic", env, make_repo(tmp_path / "r"))
    error = of(events, AgentError)[0]
    assert error.category == "malformed"
    assert ended(events).outcome == "failed"
