"""The four CLI session stores over the recorded captures (copied: ``conftest.capture``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    LimitHit,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.detect.stores.base import SessionStore, StoreItem
from relay.detect.stores.claude import ClaudeStore
from relay.detect.stores.codex import CodexStore
from relay.detect.stores.gemini import GeminiStore
from relay.detect.stores.pi import PiStore
from relay.detect.stores.transcript import TranscriptRead
from tests.detect.conftest import Capture

LIMIT = 64 * 1024
E = TypeVar("E", bound=AgentEvent)


def kinds(events: list[AgentEvent]) -> list[str]:
    return [e.kind for e in events]


def of(events: list[AgentEvent], cls: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, cls)]


def read_one(store: SessionStore, root: Path, session: str | None = None) -> TranscriptRead:
    listing = store.list(root, store.runtime)
    assert listing.problems == []
    items = [i for i in listing.items if session is None or i.agent_session_id == session]
    assert len(items) == 1, [i.agent_session_id for i in listing.items]
    read = store.read(items[0])
    assert isinstance(read, TranscriptRead)
    return read


def stdout_lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "stdout.ndjson").read_text().splitlines() if line]


# --- Claude ----------------------------------------------------------------------------------

def test_claude_lists_each_session_and_never_a_subagent(capture: Capture) -> None:
    root = capture("claude", "w_subagent") / "config"
    project = root / "projects" / "CWD_ENCODED"
    (project / "agent-1234abcd.jsonl").write_text("{}\n")  # 1.x wrote subagents beside sessions
    listing = ClaudeStore().list(root, "claude:work")
    assert [(i.agent_session_id, i.entry) for i in listing.items] == [
        ("96482de8-710f-4157-9d4d-d330bd3b204e", "claude:work")]
    assert any(project.glob("*/subagents/agent-*.jsonl"))
    item = listing.items[0]
    assert (item.size, item.runtime) == (item.path.stat().st_size, "claude")


def test_claude_write_tool_session(capture: Capture, repo_dir: Path) -> None:
    read = read_one(ClaudeStore(), capture("claude", "b_write_tool") / "config")
    assert read.initial_prompt == "Create hello.txt containing hello world"
    assert (read.cwd, read.git_branch, read.models) == (str(repo_dir), "main", ["claude-opus-4-8"])
    assert "deep-research" in read.skills  # the session's skill_listing
    assert kinds(read.events) == ["session_started", "assistant_text", "tool_call", "tool_result",
                                  "assistant_text", "turn_completed"]
    call, result = of(read.events, ToolCall)[0], of(read.events, ToolResult)[0]
    assert (call.name, call.input["file_path"]) == ("Write", f"{repo_dir}/hello.txt")
    assert (result.call_id, result.is_error) == (call.call_id, None)
    started = of(read.events, SessionStarted)[0]
    assert (started.permission_mode, started.version) == ("acceptEdits", "2.1.197")
    assert (read.open_turn, read.problems) == (False, [])
    assert all(e.replay for e in read.events)
    assert read.started_ms is not None
    assert read.last_activity_ms is not None
    assert read.started_ms < read.last_activity_ms
    assert read.last_activity_ms == int(read.events[-1].ts.timestamp() * 1000)


def test_claude_usage_limit_with_its_reset_time(capture: Capture) -> None:
    cap = capture("claude", "f_usage_limit")
    for run, scope in (("run1_subscriber_five_hour", "five_hour"),
                       ("run2_subscriber_seven_day", "seven_day")):
        event = next(o for o in stdout_lines(cap / run) if o["type"] == "rate_limit_event")
        read = read_one(ClaudeStore(), cap / "config", event["session_id"])
        limit: LimitHit = of(read.events, LimitHit)[0]
        assert (limit.limit, limit.scope, limit.blocking) == ("usage_limit", scope, True)
        assert limit.message.startswith("You've hit your")
        # the text says only the minute; the stream's rate_limit_event has the second
        assert limit.resets_at is not None
        official = event["rate_limit_info"]["resetsAt"]
        assert 0 <= official - limit.resets_at.timestamp() < 60
        assert of(read.events, AgentError)[0].category == "usage_limit"
        assert not read.open_turn


def test_claude_plain_429_is_a_rate_limit_without_reset(capture: Capture) -> None:
    cap = capture("claude", "f_usage_limit")
    session = next(o for o in stdout_lines(cap / "run3_subscriber_plain_429")
                   if o["type"] == "system")["session_id"]
    read = read_one(ClaudeStore(), cap / "config", session)
    limit = of(read.events, LimitHit)[0]
    assert (limit.limit, limit.resets_at) == ("rate_limit", None)
    assert of(read.events, AgentError)[0].http_status == 429


def test_claude_killed_run_leaves_an_open_turn(capture: Capture) -> None:
    listing = ClaudeStore().list(capture("claude", "r_signals") / "config", "claude")
    assert len(listing.items) == 2
    for item in listing.items:
        read = ClaudeStore().read(item)
        assert (read.open_turn, read.initial_prompt) == (True, "slow question")
        assert kinds(read.events) == ["session_started"]


def test_claude_thinking_and_parallel_calls_end_once(capture: Capture) -> None:
    read = read_one(ClaudeStore(), capture("claude", "u_thinking_and_parallel_tools") / "config")
    texts = of(read.events, AssistantText)
    assert [t.reasoning for t in texts] == [True, True, False]
    assert of(read.events, TurnCompleted)[0].result_text == "alpha and beta were printed."
    assert kinds(read.events).count("turn_completed") == 1
    assert {r.call_id for r in of(read.events, ToolResult)} == {
        c.call_id for c in of(read.events, ToolCall)}


def test_claude_max_turns_ends_the_turn(capture: Capture) -> None:
    listing = ClaudeStore().list(capture("claude", "i_max_turns") / "config", "claude")
    read = ClaudeStore().read(listing.items[0])
    assert kinds(read.events)[-1] == "error"
    assert (of(read.events, AgentError)[-1].category, read.open_turn) == ("max_turns", False)


# --- Codex -----------------------------------------------------------------------------------

def test_codex_usage_limit_reset_from_the_rollout(capture: Capture, repo_dir: Path) -> None:
    root = capture("codex", "d_usage_limit_pro")
    rollout = next((root / "sessions").rglob("rollout-*.jsonl"))
    lines = [json.loads(line) for line in rollout.read_text().splitlines()]
    meta = next(line["payload"] for line in lines if line["type"] == "session_meta")
    window = next(line["payload"]["rate_limits"]["primary"] for line in lines
                  if line["payload"].get("type") == "token_count")
    read = read_one(CodexStore(), root)
    assert read.item.agent_session_id == meta["id"]
    assert (read.cwd, read.git_branch, read.models) == (str(repo_dir), "main", ["gpt-5.5"])
    assert read.initial_prompt == "Say hello"
    assert read.skills[:2] == ["imagegen", "openai-docs"]
    assert "Discovery" not in read.skills
    limit = of(read.events, LimitHit)[0]
    assert limit.limit == "usage_limit"
    assert limit.resets_at is not None
    assert limit.resets_at.timestamp() == window["resets_at"]
    assert (of(read.events, SessionStarted)[0].permission_mode, read.open_turn) == ("never", False)


def test_codex_shell_and_patch(capture: Capture) -> None:
    read = read_one(CodexStore(), capture("codex", "b_tool_shell_and_patch"))
    calls = of(read.events, ToolCall)
    assert [c.name for c in calls] == ["exec_command", "apply_patch"]
    assert calls[0].input["cmd"] == "echo hi"
    assert "*** Add File: hello.txt" in calls[1].input["input"]
    results = of(read.events, ToolResult)
    assert [(r.call_id, r.exit_code, r.is_error) for r in results] == [
        (calls[0].call_id, 0, False), (calls[1].call_id, 0, False)]
    assert kinds(read.events)[-1] == "turn_completed"
    assert of(read.events, TurnCompleted)[-1].result_text == "Done: ran echo and created hello.txt."


def test_codex_refused_call_is_an_error(capture: Capture) -> None:
    read = read_one(CodexStore(), capture("codex", "g3_escalation_request_on_request_policy"))
    result = of(read.events, ToolResult)[0]
    assert result.is_error is True
    assert "approval policy is Never" in result.output


def test_codex_interrupted_and_killed_turns(capture: Capture) -> None:
    aborted = read_one(CodexStore(), capture("codex", "e8_sigint_midturn"))
    assert kinds(aborted.events)[-1] == "session_ended"
    assert (of(aborted.events, SessionEnded)[0].outcome, aborted.open_turn) == ("interrupted", False)
    killed = read_one(CodexStore(), capture("codex", "e7_sigterm_midturn"))
    assert (killed.open_turn, kinds(killed.events)) == (True, ["session_started"])


# --- Gemini ----------------------------------------------------------------------------------

def gemini(cap: Path, reports: bool = True) -> GeminiStore:
    return GeminiStore(error_report_dirs=[cap / "tmp_error_reports"] if reports else [])


def test_gemini_daily_quota_from_the_error_report(capture: Capture, repo_dir: Path) -> None:
    cap = capture("gemini", "d_429_daily_quota")
    read = read_one(gemini(cap), cap / "dot_gemini")
    assert read.item.path.name.startswith("session-")
    assert read.item.agent_session_id.startswith(read.item.path.stem.rsplit("-", 1)[1])
    assert (read.cwd, read.initial_prompt) == (str(repo_dir), "Say hello")
    limit = of(read.events, LimitHit)[0]
    assert (limit.limit, limit.scope) == ("quota", "daily")
    assert not read.open_turn


def test_gemini_rolled_back_prompt_without_a_report(capture: Capture) -> None:
    cap = capture("gemini", "d_429_daily_quota")
    read = read_one(gemini(cap, reports=False), cap / "dot_gemini")
    error = of(read.events, AgentError)[0]
    assert error.category == "unknown"
    assert "rolled it back" in error.message
    assert (of(read.events, LimitHit), read.open_turn) == ([], False)


def without_rollback(cap: Path) -> None:
    """The chat as a killed CLI leaves it: the prompt written, no rollback after it."""
    chat = next((cap / "dot_gemini").glob("tmp/*/chats/*.jsonl"))
    lines = chat.read_text().splitlines(keepends=True)
    assert '"messages"' in lines[-1]
    chat.write_text("".join(lines[:-1]))


def test_gemini_unanswered_prompt_is_open_until_a_report_explains_it(capture: Capture) -> None:
    cap = capture("gemini", "c2_429_rate_limit_exhausted")
    without_rollback(cap)
    assert read_one(gemini(cap, reports=False), cap / "dot_gemini").open_turn
    with_report = read_one(gemini(cap), cap / "dot_gemini")
    assert len(of(with_report.events, LimitHit)) == 1
    assert not with_report.open_turn


def test_gemini_report_of_another_prompt_is_not_used(capture: Capture) -> None:
    cap = capture("gemini", "c2_429_rate_limit_exhausted")
    report = next((cap / "tmp_error_reports").iterdir())
    report.write_text(report.read_text().replace('"Say hello"', '"Something else"'))
    read = read_one(gemini(cap), cap / "dot_gemini")
    assert of(read.events, LimitHit) == []
    assert of(read.events, AgentError)[0].category == "unknown"
    without_rollback(cap)
    assert read_one(gemini(cap), cap / "dot_gemini").open_turn


def test_gemini_tool_calls_once_each(capture: Capture) -> None:
    cap = capture("gemini", "b2_tool_fails")
    read = read_one(gemini(cap), cap / "dot_gemini")
    calls, results = of(read.events, ToolCall), of(read.events, ToolResult)
    assert [c.name for c in calls] == ["run_shell_command", "read_file"]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert (results[0].exit_code, results[0].is_error) == (3, True)
    assert (results[1].is_error, read.models) == (True, ["gemini-2.5-pro"])
    assert (kinds(read.events)[-1], read.open_turn) == ("turn_completed", False)


def test_gemini_resumed_session_is_one_session(capture: Capture) -> None:
    cap = capture("gemini", "f_resume_latest")
    read = read_one(gemini(cap), cap / "dot_gemini")
    assert read.initial_prompt == "Remember the word PINEAPPLE"
    assert kinds(read.events).count("turn_completed") == 3
    assert of(read.events, AssistantText)[-1].text == "Still PINEAPPLE."


# --- Pi --------------------------------------------------------------------------------------

def test_pi_failed_retries_are_read_from_the_records(capture: Capture, repo_dir: Path) -> None:
    read = read_one(PiStore(), capture("pi", "d_usage_limit_codex_style") / "dot_pi" / "agent")
    assert read.item.path.stem.endswith(read.item.agent_session_id)
    assert (read.cwd, read.models, read.initial_prompt) == (str(repo_dir), ["mock-model"], "Say hello")
    assert kinds(read.events) == ["session_started", "notice", "notice", "limit_hit", "error"]
    limit = of(read.events, LimitHit)[0]
    assert (limit.limit, limit.resets_at) == ("usage_limit", None)
    assert not read.open_turn


def test_pi_recovered_retry_is_only_a_notice(capture: Capture) -> None:
    read = read_one(PiStore(), capture("pi", "c_429_then_ok") / "dot_pi")  # the agent dir's parent
    assert kinds(read.events) == ["session_started", "notice", "assistant_text", "turn_completed"]


def test_pi_tools(capture: Capture) -> None:
    read = read_one(PiStore(), capture("pi", "b_tools_bash_write_edit") / "dot_pi" / "agent")
    calls = of(read.events, ToolCall)
    assert [c.name for c in calls] == ["bash", "write", "edit"]
    assert [r.call_id for r in of(read.events, ToolResult)] == [c.call_id for c in calls]


def test_pi_reads_only_the_active_branch(tmp_path: Path) -> None:
    folder = tmp_path / "agent" / "sessions" / "--srv-repo--"
    folder.mkdir(parents=True)
    def msg(id_: str, parent: str | None, role: str, **extra: Any) -> dict[str, Any]:
        return {"type": "message", "id": id_, "parentId": parent,
                "timestamp": "2026-11-30T10:00:00.000Z", "message": {"role": role, **extra}}
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-30T10:00:00.000Z",
         "cwd": "/srv/repo"},
        msg("u1", None, "user", content=[{"type": "text", "text": "first"}]),
        msg("a1", "u1", "assistant", content=[{"type": "text", "text": "abandoned"}],
            stopReason="stop"),
        msg("a2", "u1", "assistant", content=[{"type": "text", "text": "kept"}], stopReason="stop"),
    ]
    (folder / "2026-11-30T10-00-00-000Z_s1.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines))
    read = read_one(PiStore(), tmp_path / "agent")
    assert [t.text for t in of(read.events, AssistantText)] == ["kept"]
    assert (read.initial_prompt, read.problems) == ("first", [])


# --- bad input -------------------------------------------------------------------------------

SESSION_FILES = {
    "claude": ("b_write_tool", "config", "projects/*/*.jsonl"),
    "codex": ("b_tool_shell_and_patch", "", "sessions/*/*/*/*.jsonl"),
    "gemini": ("b_tools_yolo", "dot_gemini", "tmp/*/chats/*.jsonl"),
    "pi": ("b_tools_bash_write_edit", "dot_pi/agent", "sessions/*/*.jsonl"),
}
STORES = {"claude": ClaudeStore, "codex": CodexStore, "gemini": GeminiStore, "pi": PiStore}


def damaged(capture: Capture, runtime: str) -> tuple[SessionStore, Path, Path]:
    scenario, sub, pattern = SESSION_FILES[runtime]
    root = capture(runtime, scenario) / sub
    path = next(root.glob(pattern))
    return STORES[runtime](line_limit=LIMIT), root, path


@pytest.mark.parametrize("runtime", sorted(SESSION_FILES))
def test_bad_lines_are_counted_and_the_rest_read(capture: Capture, runtime: str) -> None:
    store, root, path = damaged(capture, runtime)
    clean = store.read(store.list(root, runtime).items[0])
    lines = path.read_bytes().splitlines(keepends=True)
    huge = b'{"type":"user","pad":"' + b"x" * (LIMIT * 3) + b'"}\n'
    path.write_bytes(b"".join([*lines[:2], b'{"type": "assist\n', huge, b"\xff\xfe{}\n", b"\n",
                               *lines[2:], b'{"type":"partial']))
    read = store.read(store.list(root, runtime).items[0])
    assert read.problems == ["1 unreadable line (corrupt or truncated)", "1 line not UTF-8",
                             "1 line over 65536 bytes skipped",
                             "the last line is incomplete (still being written, or cut off)"]
    assert kinds(read.events) == kinds(clean.events)
    assert isinstance(read, TranscriptRead)
    assert isinstance(clean, TranscriptRead)
    assert read.initial_prompt == clean.initial_prompt != ""


@pytest.mark.parametrize("runtime", sorted(SESSION_FILES))
def test_a_file_that_vanished_is_a_problem_not_an_exception(capture: Capture, runtime: str) -> None:
    store, root, path = damaged(capture, runtime)
    item = store.list(root, runtime).items[0]
    path.unlink()
    read = store.read(item)
    assert (read.events, len(read.problems)) == ([], 1)
    assert read.problems[0].startswith(f"cannot read {path.name}")


@pytest.mark.parametrize("runtime", sorted(SESSION_FILES))
def test_an_unlistable_folder_is_a_problem(tmp_path: Path, runtime: str) -> None:
    folder = {"claude": "projects", "codex": "sessions", "gemini": ".gemini/tmp",
              "pi": "sessions"}[runtime]
    (tmp_path / folder).parent.mkdir(exist_ok=True)
    (tmp_path / folder).write_text("not a folder")
    listing = STORES[runtime]().list(tmp_path, runtime)
    assert (listing.items, len(listing.problems)) == ([], 1)
    assert listing.problems[0].startswith(f"cannot list {tmp_path / folder}")


@pytest.mark.parametrize("runtime", sorted(SESSION_FILES))
def test_a_missing_folder_is_nothing(tmp_path: Path, runtime: str) -> None:
    listing = STORES[runtime]().list(tmp_path / "absent", runtime)
    assert (listing.items, listing.problems) == ([], [])


def test_a_huge_tool_result_is_clipped(capture: Capture) -> None:
    _, root, path = damaged(capture, "claude")
    data = path.read_text().replace("File created successfully", "y" * 200_000)
    path.write_text(data)
    store = ClaudeStore()
    read = store.read(store.list(root, "claude").items[0])
    result = of(read.events, ToolResult)[0]
    assert 0 < len(result.output) <= 4000
    assert read.problems == []


def test_the_stores_say_which_runtime_they_read() -> None:
    item = StoreItem("claude", "x", "claude", Path("/nonexistent/x.jsonl"), 0, 0)
    assert {name: cls().runtime for name, cls in STORES.items()} == {n: n for n in STORES}
    assert ClaudeStore().read(item).problems[0].startswith("cannot read x.jsonl")


def test_timestamps_become_event_times(capture: Capture) -> None:
    read = read_one(CodexStore(), capture("codex", "b_tool_shell_and_patch"))
    times = [e.ts for e in read.events]
    assert times == sorted(times)
    assert times[-1] == datetime.fromtimestamp(read.last_activity_ms / 1000, UTC)  # type: ignore[operator]
