"""Intent and state lifted from store reads: the recorded captures, then the state matrix."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    LimitHit,
    NeedsInput,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.detect.lift import Lifted, lift
from relay.detect.model import LiveProcess, PlanEntry
from relay.detect.stores.base import SessionStore, StoreItem
from relay.detect.stores.claude import ClaudeStore
from relay.detect.stores.codex import CodexStore
from relay.detect.stores.gemini import GeminiStore
from relay.detect.stores.pi import PiStore
from relay.detect.stores.transcript import TranscriptRead
from tests.detect.conftest import Capture

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
T0_MS = int(T0.timestamp() * 1000)


def process(runtime: str = "claude") -> LiveProcess:
    return LiveProcess(pid=4242, runtime=runtime, cmdline=(runtime,), cwd="/srv/repo",
                       started_ms=T0_MS - 3_600_000, ppid=1)


def only_read(store: SessionStore, root: Path, session: str | None = None) -> TranscriptRead:
    items = [i for i in store.list(root, store.runtime).items
             if session is None or i.agent_session_id == session]
    assert len(items) == 1
    read = store.read(items[0])
    assert isinstance(read, TranscriptRead)
    return read


def after(read: TranscriptRead, seconds: float) -> int:
    """``seconds`` after the session's last record."""
    assert read.last_activity_ms is not None
    return read.last_activity_ms + int(seconds * 1000)


# --- from the recorded captures --------------------------------------------------------------

def test_claude_usage_limit_blocks_until_its_reset(capture: Capture) -> None:
    cap = capture("claude", "f_usage_limit")
    stdout = (cap / "run1_subscriber_five_hour" / "stdout.ndjson").read_text().splitlines()
    event = next(json.loads(line) for line in stdout if '"rate_limit_event"' in line)
    read = only_read(ClaudeStore(), cap / "config", event["session_id"])
    official_ms = event["rate_limit_info"]["resetsAt"] * 1000
    for live in (None, process()):
        lifted = lift(read, live, after(read, 60))
        assert lifted.state == "blocked"
        assert lifted.resets_at_ms is not None
        assert 0 <= official_ms - lifted.resets_at_ms < 60_000
        assert "the last turn ended on a usage limit; resets 2026-11-30 12:05 UTC" in lifted.why
        assert "You've hit your session limit" in lifted.why
    stale = lift(read, None, official_ms + 3_600_000)
    assert (stale.state, stale.resets_at_ms) == ("blocked", None)
    assert "the reset it gave (2026-11-30 12:05 UTC) has passed, so it may go on now" in stale.why
    assert "unknown" not in stale.why  # it was known, and it is over
    assert stale.intent.initial_prompt == "hi"


def test_claude_write_tool_touches_its_file(capture: Capture) -> None:
    read = only_read(ClaudeStore(), capture("claude", "b_write_tool") / "config")
    lifted = lift(read, None, after(read, 30))
    assert (lifted.state, lifted.why) == ("ended", "no process; the last turn finished")
    intent = lifted.intent
    assert intent.files_touched == ["hello.txt"]
    assert intent.initial_prompt == "Create hello.txt containing hello world"
    assert intent.last_message == "Created hello.txt with the requested content."
    assert intent.models == ["claude-opus-4-8"]
    assert "deep-research" in intent.skills
    assert (intent.commands, intent.plan) == ([], [])


def test_claude_denied_writes_are_not_touched_files(capture: Capture) -> None:
    root = capture("claude", "h_permission_denied") / "config"
    for item in ClaudeStore().list(root, "claude").items:
        intent = lift(ClaudeStore().read(item), None, T0_MS).intent
        assert intent.files_touched == []
    commands = [lift(ClaudeStore().read(i), None, T0_MS).intent.commands
                for i in ClaudeStore().list(root, "claude").items]
    assert ["touch by_bash.txt", "python3 -c 'print(1)'"] in commands


def test_claude_task_tools_are_the_plan(capture: Capture) -> None:
    read = only_read(ClaudeStore(), capture("claude", "o_task_tools") / "config")
    intent = lift(read, None, after(read, 5)).intent
    assert intent.plan == [PlanEntry("Write tests", "in_progress")]
    assert intent.tasks_remaining == ["(in progress) Write tests"]


def test_claude_killed_run(capture: Capture) -> None:
    for item in ClaudeStore().list(capture("claude", "r_signals") / "config", "claude").items:
        read = ClaudeStore().read(item)
        crashed = lift(read, None, after(read, 5))
        assert crashed.state == "crashed"
        assert "the last prompt got no answer" in crashed.why
        assert lift(read, process(), after(read, 5)).state == "working"
        quiet = lift(read, process(), after(read, 600))
        assert quiet.state == "working"
        assert "quiet for 10 min" in quiet.why


def test_codex_usage_limit(capture: Capture) -> None:
    root = capture("codex", "d_usage_limit_pro")
    rollout = next((root / "sessions").rglob("*.jsonl")).read_text().splitlines()
    window = next(json.loads(line)["payload"]["rate_limits"]["primary"] for line in rollout
                  if '"token_count"' in line)
    read = only_read(CodexStore(), root)
    lifted = lift(read, process("codex"), after(read, 600))
    assert (lifted.state, lifted.resets_at_ms) == ("blocked", window["resets_at"] * 1000)
    assert lifted.intent.models == ["gpt-5.5"]


def test_codex_commands_and_patched_files(capture: Capture) -> None:
    read = only_read(CodexStore(), capture("codex", "b_tool_shell_and_patch"))
    lifted = lift(read, process("codex"), after(read, 120))
    assert lifted.state == "idle"
    assert lifted.intent.commands == ["echo hi"]
    assert lifted.intent.files_touched == ["hello.txt", "README.md"]
    assert lifted.intent.last_message == "Done: ran echo and created hello.txt."


def test_codex_interrupted_and_killed(capture: Capture) -> None:
    aborted = only_read(CodexStore(), capture("codex", "e8_sigint_midturn"))
    ended = lift(aborted, None, after(aborted, 5))
    assert (ended.state, ended.why) == ("ended", "no process; the last turn was interrupted")
    killed = only_read(CodexStore(), capture("codex", "e7_sigterm_midturn"))
    assert lift(killed, None, after(killed, 5)).state == "crashed"


def test_gemini_quota_and_tools(capture: Capture) -> None:
    cap = capture("gemini", "d_429_daily_quota")
    store = GeminiStore(error_report_dirs=[cap / "tmp_error_reports"])
    read = only_read(store, cap / "dot_gemini")
    lifted = lift(read, None, after(read, 60))
    assert (lifted.state, lifted.resets_at_ms) == ("blocked", None)
    assert lifted.why.startswith("the last turn ended on a quota; reset time unknown")
    assert "daily quota" in lifted.why
    tools = capture("gemini", "b_tools_yolo")
    intent = lift(only_read(GeminiStore(error_report_dirs=[]), tools / "dot_gemini"), None,
                  T0_MS).intent
    assert (intent.commands, intent.files_touched) == (["echo hi"], ["hello.txt"])


def test_gemini_overload_blocks_the_session_like_every_other_limit(capture: Capture) -> None:
    # failure → events is one rule (tests/core/test_failure_events.py): an overload that
    # ended the turn is a blocking limit, so the session is adoptable elsewhere
    cap = capture("gemini", "e_503_overloaded")
    read = only_read(GeminiStore(error_report_dirs=[cap / "tmp_error_reports"]), cap / "dot_gemini")
    lifted = lift(read, None, after(read, 60))
    assert lifted.state == "blocked"
    assert "ended on an overload" in lifted.why
    assert "The model is overloaded" in lifted.why


def test_pi_usage_limit_and_tools(capture: Capture) -> None:
    read = only_read(PiStore(), capture("pi", "d_usage_limit_codex_style") / "dot_pi" / "agent")
    assert lift(read, None, after(read, 60)).state == "blocked"
    tools = only_read(PiStore(), capture("pi", "b_tools_bash_write_edit") / "dot_pi" / "agent")
    intent = lift(tools, None, T0_MS).intent
    assert (intent.commands, intent.files_touched) == (["echo hi"], ["hello.txt", "README.md"])
    assert intent.models == ["mock-model"]


# --- the state matrix ------------------------------------------------------------------------

def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def started(mode: str | None = "default", runtime: str = "claude") -> SessionStarted:
    return SessionStarted(runtime=runtime, ts=at(0), agent_session_id="s1", permission_mode=mode)


def text(words: str, runtime: str = "claude") -> AssistantText:
    return AssistantText(runtime=runtime, ts=at(1), text=words)


def call(name: str, runtime: str = "claude", call_id: str = "c1", **args: Any) -> ToolCall:
    return ToolCall(runtime=runtime, ts=at(2), call_id=call_id, name=name, input=args)


def result(call_id: str = "c1") -> ToolResult:
    return ToolResult(runtime="claude", ts=at(3), call_id=call_id, output="ok", is_error=False)


def done() -> TurnCompleted:
    return TurnCompleted(runtime="claude", ts=at(4))


def usage_limit(resets: datetime | None) -> list[AgentEvent]:
    return [LimitHit(runtime="claude", ts=at(4), limit="usage_limit", resets_at=resets,
                     message="You've hit your session limit"),
            AgentError(runtime="claude", ts=at(4), category="usage_limit",
                       message="You've hit your session limit")]


def synthetic(events: list[AgentEvent], *, open_turn: bool = False,
              prompt: str = "fix the bug") -> TranscriptRead:
    item = StoreItem("claude", "s1", "claude", Path("/srv/store/s1.jsonl"), 100, 0)
    return TranscriptRead(item=item, events=events, cwd="/srv/repo", started_ms=T0_MS,
                          last_activity_ms=T0_MS + 4000, open_turn=open_turn,
                          initial_prompt=prompt)


FINISHED: list[AgentEvent] = [started(), text("Fixed it."), done()]
ASKED: list[AgentEvent] = [started(), text("Should I also update the docs?"), done()]
PENDING_BASH: list[AgentEvent] = [started(), call("Bash", command="make test")]
QUESTION: list[AgentEvent] = [
    started(), call("AskUserQuestion", questions=[{"question": "Which database?"}])]
LIMITED: list[AgentEvent] = [started(), *usage_limit(at(3600))]

# (name, events, open turn, process alive, seconds after the last record, state, why contains)
MATRIX: list[tuple[str, list[AgentEvent], bool, bool, int, str, str]] = [
    ("finished, recent", FINISHED, False, True, 5, "working", "within the last minute"),
    ("finished, quiet", FINISHED, False, True, 120, "idle", "the last turn finished"),
    ("finished, no process", FINISHED, False, False, 5, "ended", "the last turn finished"),
    ("asked, quiet", ASKED, False, True, 120, "needs_input", "asks a question"),
    ("asked, no process", ASKED, False, False, 120, "ended", "finished"),
    ("bash pending, quiet", PENDING_BASH, True, True, 120, "needs_input", "Bash call waits"),
    ("bash pending, recent", PENDING_BASH, True, True, 5, "working", "within the last minute"),
    ("bash pending, no process", PENDING_BASH, True, False, 120, "crashed", "Bash call got no result"),
    ("question, recent", QUESTION, True, True, 5, "needs_input", "asks: Which database?"),
    ("question, no process", QUESTION, True, False, 5, "ended", "asking: Which database?"),
    ("limit, process", LIMITED, False, True, 5, "blocked", "usage limit; resets 2026-11-30 11:00"),
    ("limit, no process", LIMITED, False, False, 120, "blocked", "usage limit"),
    ("limit then a new prompt", LIMITED, True, True, 5, "working", "within the last minute"),
    ("limit then a new prompt, no process", LIMITED, True, False, 5, "crashed", "no answer"),
    ("prompt unanswered, quiet", [started()], True, True, 120, "working", "mid-turn, quiet for 2 min"),
    ("prompt unanswered, no process", [started()], True, False, 5, "crashed", "no answer"),
]


@pytest.mark.parametrize(("events", "open_turn", "alive", "quiet_s", "state", "why"),
                         [m[1:] for m in MATRIX], ids=[m[0] for m in MATRIX])
def test_state_matrix(events: list[AgentEvent], open_turn: bool, alive: bool, quiet_s: int,
                      state: str, why: str) -> None:
    read = synthetic(events, open_turn=open_turn)
    lifted = lift(read, process() if alive else None, after(read, quiet_s))
    assert (lifted.state, why in lifted.why) == (state, True), lifted.why


def test_nothing_readable_is_unknown() -> None:
    read = synthetic([started()], prompt="")
    read.problems.append("1 unreadable line (corrupt or truncated)")
    for live in (None, process()):
        lifted = lift(read, live, after(read, 5))
        assert (lifted.state, lifted.why) == ("unknown", "nothing readable in the session's file")


def test_the_quiet_threshold_is_one_minute() -> None:
    read = synthetic(FINISHED)
    assert lift(read, process(), after(read, 59.9)).state == "working"
    assert lift(read, process(), after(read, 60)).state == "idle"


def test_the_file_mtime_counts_as_activity() -> None:
    read = synthetic(FINISHED)
    later = T0_MS + 600_000
    moved = TranscriptRead(item=StoreItem("claude", "s1", "claude", read.item.path, 1,
                                          later * 1_000_000),
                           events=read.events, last_activity_ms=read.last_activity_ms,
                           initial_prompt="x")
    assert lift(moved, process(), later + 10_000).state == "working"


@pytest.mark.parametrize(("mode", "tool", "args", "state"), [
    ("bypassPermissions", "Bash", {}, "working"),
    ("acceptEdits", "Write", {"file_path": "/srv/repo/a.py"}, "working"),
    ("acceptEdits", "Bash", {"command": "rm -rf build"}, "needs_input"),
    ("default", "Read", {"file_path": "/srv/repo/a.py"}, "working"),
    ("default", "mcp__github__create_issue", {}, "needs_input"),
])
def test_claude_approval_depends_on_the_permission_mode(mode: str, tool: str,
                                                        args: dict[str, Any], state: str) -> None:
    read = synthetic([started(mode), call(tool, **args)], open_turn=True)
    assert lift(read, process(), after(read, 300)).state == state


@pytest.mark.parametrize(("policy", "args", "state"), [
    ("never", {"cmd": "make", "sandbox_permissions": "require_escalated"}, "working"),
    ("on-request", {"cmd": "make"}, "working"),
    ("on-request", {"cmd": "make", "sandbox_permissions": "require_escalated"}, "needs_input"),
    ("untrusted", {"cmd": "make"}, "needs_input"),
])
def test_codex_approval_depends_on_the_policy(policy: str, args: dict[str, Any],
                                              state: str) -> None:
    events: list[AgentEvent] = [started(policy, "codex"), call("exec_command", "codex", **args)]
    read = synthetic(events, open_turn=True)
    assert lift(read, process("codex"), after(read, 300)).state == state


def test_an_approval_request_is_a_question() -> None:
    request = NeedsInput(runtime="codex", ts=at(3), request_id="r1", prompt="Allow `rm -rf build`?")
    read = synthetic([started("on-request", "codex"), call("exec_command", "codex", cmd="rm"),
                      request], open_turn=True)
    lifted = lift(read, process("codex"), after(read, 1))
    assert (lifted.state, lifted.why) == ("needs_input", "asks: Allow `rm -rf build`?")


def test_an_answered_approval_request_is_not_open() -> None:
    request = NeedsInput(runtime="codex", ts=at(3), request_id="r1", prompt="Allow `make`?")
    read = synthetic([started("untrusted", "codex"), call("exec_command", "codex", cmd="make"),
                      request, result()], open_turn=True)
    assert lift(read, process("codex"), after(read, 300)).state == "working"


def test_an_interrupted_turn_is_finished() -> None:
    read = synthetic([started(), call("Bash", command="sleep 100"),
                      SessionEnded(runtime="claude", ts=at(5), outcome="interrupted")])
    lifted = lift(read, None, after(read, 5))
    assert (lifted.state, lifted.why) == ("ended", "no process; the last turn was interrupted")


def test_a_failed_turn_is_finished_with_its_reason() -> None:
    error = AgentError(runtime="claude", ts=at(4), category="auth", message="Invalid API key")
    lifted: Lifted = lift(synthetic([started(), error]), process(), T0_MS + 600_000)
    assert (lifted.state, lifted.why) == (
        "idle", "its process is alive; the last turn failed: Invalid API key")


def test_a_question_in_a_failed_turn_is_not_asking() -> None:
    error = AgentError(runtime="claude", ts=at(4), category="overloaded", message="Overloaded")
    read = synthetic([started(), text("Shall I go on?"), error])
    assert lift(read, process(), after(read, 300)).state == "idle"


# --- intent details --------------------------------------------------------------------------

def test_skills_and_mcp_servers_used() -> None:
    read = synthetic([started(), call("Skill", call_id="a", skill="pdf"), result("a"),
                      call("mcp__github__list_issues", call_id="b"), result("b"), done()])
    read.skills = ["deep-research", "pdf"]
    read.mcp_servers = ["linear"]
    intent = lift(read, None, T0_MS).intent
    assert intent.skills == ["pdf", "deep-research"]
    assert intent.mcp_servers == ["github", "linear"]


def test_gemini_write_todos_are_the_plan() -> None:
    todos = [{"description": "Read the code", "status": "completed"},
             {"description": "Fix the bug", "status": "in_progress"},
             {"description": "Add a test", "status": "pending"}]
    read = synthetic([started(None, "gemini"), call("write_todos", "gemini", todos=todos),
                      result(), done()])
    intent = lift(read, None, T0_MS).intent
    assert intent.plan == [PlanEntry("Read the code", "completed"),
                           PlanEntry("Fix the bug", "in_progress"),
                           PlanEntry("Add a test", "pending")]
    assert intent.tasks_remaining == ["(in progress) Fix the bug", "Add a test"]


def test_files_and_commands_most_recent_last() -> None:
    events: list[AgentEvent] = [started()]
    for n, (name, args) in enumerate([("Write", {"file_path": "/srv/repo/a.py"}),
                                      ("Bash", {"command": "pytest"}),
                                      ("Edit", {"file_path": "/srv/repo/b.py"}),
                                      ("Edit", {"file_path": "/srv/repo/a.py"}),
                                      ("Bash", {"command": "ruff check"}),
                                      ("Bash", {"command": "pytest"})]):
        events += [call(name, call_id=f"c{n}", **args), result(f"c{n}")]
    intent = lift(synthetic([*events, done()]), None, T0_MS).intent
    assert intent.files_touched == ["b.py", "a.py"]
    assert intent.commands == ["ruff check", "pytest"]
