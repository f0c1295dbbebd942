"""build_contract over real event shapes: recorded captures fed through the real parsers,
plus hand-built to-do sequences in the shapes each runtime uses."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pygit2
import pytest

from relay.core.events import (
    AgentEvent,
    AssistantText,
    EventRecord,
    ToolCall,
    ToolResult,
    VerifyResult,
)
from relay.runtimes.claude_stream import ClaudeStreamParser
from relay.runtimes.codex_stream import CodexStreamParser
from relay.sessions.briefing import MAX_ITEMS, build_contract, command_text, next_action
from relay.sessions.contract import (
    ContractV2,
    InFlightCode,
    envelope_bytes,
    render_markdown,
    sign,
    verify,
)
from relay.sessions.intent import SNIPPET_CHARS
from tests.conftest import fixtures_root

CLAUDE = fixtures_root() / "claude" / "captures"
CODEX = fixtures_root() / "codex" / "captures"
KEY = b"k" * 32

Line = dict[str, Any]


# --- helpers ----------------------------------------------------------------------------

def capture_lines(path: Path, worktree: Path) -> list[Line]:
    """A capture's stdout lines, with the sanitised ``<CWD>`` put back as the worktree."""
    text = path.read_text(encoding="utf-8").replace("<CWD>", str(worktree))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def claude_events(lines: Sequence[Line]) -> list[AgentEvent]:
    parser = ClaudeStreamParser()
    return [event for line in lines for event in parser.feed(dict(line))]


def codex_events(lines: Sequence[Line]) -> list[AgentEvent]:
    parser = CodexStreamParser(run_key="r1")
    return [event for line in lines for event in parser.feed(dict(line))]


def without(lines: list[Line], drop: Callable[[Line], bool]) -> list[Line]:
    kept = [line for line in lines if not drop(line)]
    assert len(kept) < len(lines), "the capture no longer has the line this test drops"
    return kept


def commit(worktree: Path, files: dict[str, str] | None = None) -> str:
    """Commit ``files`` (the session's work) on the worktree's branch; the snapshot sha."""
    repo = pygit2.Repository(str(worktree))
    for name, text in (files or {}).items():
        (worktree / name).write_text(text)
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("Relay Tests", "tests@relay.invalid")
    oid = repo.create_commit("HEAD", sig, sig, "work", repo.index.write_tree(), [repo.head.target])
    return str(oid)


def contract_of(events: Sequence[AgentEvent], worktree: Path, *,
                acceptance: Sequence[Sequence[str]] = (), reason: str | None = "usage_limit",
                sha: str | None = None) -> ContractV2:
    records = [EventRecord(id=i, session_id="s1", run_id="r1", event=e)
               for i, e in enumerate(events, start=1)]
    return build_contract(session_id="s1", task="Add a greeting", records=records,
                          worktree=worktree, branch="relay/s1", snapshot_sha=sha or commit(worktree),
                          reason=reason, acceptance=acceptance)


def call(call_id: str, name: str, **tool_input: Any) -> ToolCall:
    return ToolCall(runtime="claude", call_id=call_id, name=name, input=tool_input)


def ok(call_id: str, output: str = "ok") -> ToolResult:
    return ToolResult(runtime="claude", call_id=call_id, output=output)


def failed(call_id: str, output: str = "Error") -> ToolResult:
    return ToolResult(runtime="claude", call_id=call_id, output=output, is_error=True)


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": content + "ing"}


def check(command: list[str], passed: bool, *, exit_code: int | None = None, output: str = "",
          problem: str | None = None) -> VerifyResult:
    return VerifyResult(command=command, passed=passed, exit_code=exit_code, output=output,
                        problem=problem)


# --- the plan: Claude ---------------------------------------------------------------------

def test_the_last_todowrite_wins_in_progress_first(git_repo: Path) -> None:
    events: list[AgentEvent] = [
        call("t1", "TodoWrite", todos=[todo("Read code", "pending"), todo("Fix bug", "pending")]),
        ok("t1"),
        call("t2", "TodoWrite", todos=[todo("Read code", "completed"), todo("Write tests", "pending"),
                                       todo("Fix bug", "in_progress")]),
        ok("t2"),
        # a TodoWrite that failed changed nothing
        call("t3", "TodoWrite", todos=[todo("Something else", "pending")]),
        failed("t3", "InputValidationError"),
    ]
    contract = contract_of(events, git_repo)
    assert contract.plan == ["Read code", "Write tests", "(in progress) Fix bug"]
    assert contract.tasks_remaining == ["(in progress) Fix bug", "Write tests"]
    assert "It was working on: Fix bug." in contract.next_action
    assert contract.do_not_redo == []  # to-do bookkeeping is not work done


def test_an_unanswered_todowrite_still_counts(git_repo: Path) -> None:
    events: list[AgentEvent] = [
        call("t1", "TodoWrite", todos=[todo("A", "completed"), todo("B", "pending")]),
    ]
    contract = contract_of(events, git_repo)
    assert contract.plan == ["A", "B"]
    assert contract.tasks_remaining == ["B"]
    assert "Next on its plan: B." in contract.next_action


def test_claude_task_tools_from_the_recorded_capture(git_repo: Path) -> None:
    lines = capture_lines(CLAUDE / "o_task_tools" / "run1" / "stdout.ndjson", git_repo)
    contract = contract_of(claude_events(lines), git_repo)
    # TaskCreate "Write tests", TaskUpdate #1 → in_progress, TaskList "#1 [in_progress] Write tests"
    assert contract.plan == ["(in progress) Write tests"]
    assert contract.tasks_remaining == ["(in progress) Write tests"]
    assert "It was working on: Write tests." in contract.next_action
    assert contract.next_action.endswith("last message was: Created and started one task.")


def test_claude_task_tools_replayed_create_update_delete(git_repo: Path) -> None:
    lines = capture_lines(CLAUDE / "o_task_tools" / "run1" / "stdout.ndjson", git_repo)
    events = [
        *claude_events(lines),
        call("c2", "TaskCreate", subject="Wire the endpoint", description="d", activeForm="Wiring"),
        ok("c2", "Task #2 created successfully: Wire the endpoint"),
        call("c3", "TaskCreate", subject="Old idea", description="d"),
        ok("c3", "Task #3 created successfully: Old idea"),
        call("c4", "TaskCreate", subject="Update docs", description="d"),  # cut off: no result
        call("u1", "TaskUpdate", taskId="1", status="completed"), ok("u1", "Updated task #1 status"),
        call("u3", "TaskUpdate", taskId="3", status="deleted"), ok("u3", "Updated task #3 deleted"),
        call("u2", "TaskUpdate", taskId="2", status="completed"),
        failed("u2", "<tool_use_error>Task not found</tool_use_error>"),
        call("u5", "TaskUpdate", taskId="2", status="in_progress"), ok("u5"),
    ]
    contract = contract_of(events, git_repo)
    assert contract.plan == ["Write tests", "(in progress) Wire the endpoint", "Update docs"]
    assert contract.tasks_remaining == ["(in progress) Wire the endpoint", "Update docs"]


def test_a_task_list_result_shows_tasks_created_before_these_events(git_repo: Path) -> None:
    events: list[AgentEvent] = [
        call("l1", "TaskList"), ok("l1", "#4 [completed] Migrate db\n#5 [pending] Add refund"),
        call("u1", "TaskUpdate", taskId="5", status="in_progress"), ok("u1"),
    ]
    contract = contract_of(events, git_repo)
    assert contract.plan == ["Migrate db", "(in progress) Add refund"]
    assert contract.tasks_remaining == ["(in progress) Add refund"]


# --- the plan: Codex ----------------------------------------------------------------------

def todo_list(phase: str, *items: tuple[str, bool]) -> Line:
    return {"type": f"item.{phase}", "item": {"id": "item_3", "type": "todo_list",
                                                "items": [{"text": t, "completed": c} for t, c in items]}}


def test_codex_todo_list_items_through_the_parser(git_repo: Path) -> None:
    # No recorded codex run produced a todo_list (tests/fixtures/codex/NOTES.md); the item shape is
    # codex exec's: {"type":"todo_list","items":[{"text","completed"}]}, started/updated/completed.
    lines = capture_lines(CODEX / "b_tool_shell_and_patch" / "run1.stdout.jsonl", git_repo)
    events = codex_events([
        *lines[:2],
        todo_list("started", ("Read the code", False), ("Add hello.txt", False), ("Run tests", False)),
        *lines[2:5],
        todo_list("updated", ("Read the code", True), ("Add hello.txt", False), ("Run tests", False)),
        *lines[5:7],
        todo_list("updated", ("Read the code", True), ("Add hello.txt", True), ("Run tests", False)),
    ])
    contract = contract_of(events, git_repo)
    assert contract.plan == ["Read the code", "Add hello.txt", "Run tests"]
    assert contract.tasks_remaining == ["Run tests"]  # exec --json has no in-progress state
    assert "Next on its plan: Run tests." in contract.next_action


def test_codex_update_plan_call(git_repo: Path) -> None:
    plan = [{"step": "Write migration", "status": "completed"},
            {"step": "Wire POST /orders/:id/refund", "status": "in_progress"},
            {"step": "tests", "status": "pending"}]
    events: list[AgentEvent] = [
        ToolCall(runtime="codex", call_id="p1", name="update_plan", input={"plan": plan}),
        ToolResult(runtime="codex", call_id="p1", output="Plan updated"),
    ]
    contract = contract_of(events, git_repo)
    assert contract.plan == ["Write migration", "(in progress) Wire POST /orders/:id/refund", "tests"]
    assert contract.tasks_remaining == ["(in progress) Wire POST /orders/:id/refund", "tests"]


def test_the_most_recent_plan_wins_across_sources(git_repo: Path) -> None:
    events = [call("t1", "TodoWrite", todos=[todo("claude step", "pending")]), ok("t1"),
              *codex_events([todo_list("started", ("codex step", False))])]
    assert contract_of(events, git_repo).plan == ["codex step"]
    events = [*codex_events([todo_list("started", ("codex step", False))]),
              call("t1", "TodoWrite", todos=[todo("claude step", "pending")]), ok("t1")]
    assert contract_of(events, git_repo).plan == ["claude step"]


def test_no_plan_at_all(git_repo: Path) -> None:
    lines = capture_lines(CLAUDE / "c_bash_tool" / "run1" / "stdout.ndjson", git_repo)
    contract = contract_of(claude_events(lines), git_repo)
    assert contract.plan == []
    assert contract.tasks_remaining == []
    assert "plan" not in contract.next_action


# --- in-flight code ---------------------------------------------------------------------

def is_tool_result(line: Line) -> bool:
    content = line.get("message", {}).get("content")
    return line.get("type") == "user" and isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def test_claude_write_cut_off_mid_call(git_repo: Path) -> None:
    lines = capture_lines(CLAUDE / "b_write_tool" / "run1" / "stdout.ndjson", git_repo)
    cut = [line for line in without(lines, is_tool_result) if line["type"] != "result"][:3]
    contract = contract_of(claude_events(cut), git_repo)
    assert contract.in_flight_code == [InFlightCode(path="hello.txt", snippet="hello world\n")]
    assert contract.do_not_redo == []
    assert "cut off while writing `hello.txt`" in contract.next_action


def test_claude_write_that_finished_is_done_not_in_flight(git_repo: Path) -> None:
    lines = capture_lines(CLAUDE / "b_write_tool" / "run1" / "stdout.ndjson", git_repo)
    sha = commit(git_repo, {"hello.txt": "hello world\n"})
    contract = contract_of(claude_events(lines), git_repo, sha=sha)
    assert contract.in_flight_code == []
    assert contract.do_not_redo == ["Write: hello.txt"]
    assert [f.path for f in contract.file_manifest] == ["hello.txt"]


def test_codex_file_change_cut_off(git_repo: Path) -> None:
    lines = capture_lines(CODEX / "b_tool_shell_and_patch" / "run1.stdout.jsonl", git_repo)
    cut = without(lines, lambda line: line["type"] == "item.completed"
                  and line["item"]["type"] == "file_change")[:6]
    assert (cut[-1]["type"], cut[-1]["item"]["type"]) == ("item.started", "file_change")
    contract = contract_of(codex_events(cut), git_repo)
    assert [(c.path, c.snippet) for c in contract.in_flight_code] == [
        ("README.md", "(update; the runtime did not report the content)"),
        ("hello.txt", "(add; the runtime did not report the content)")]
    assert contract.do_not_redo == ["ran `echo hi` successfully"]


def test_codex_file_change_that_finished(git_repo: Path) -> None:
    lines = capture_lines(CODEX / "b_tool_shell_and_patch" / "run1.stdout.jsonl", git_repo)
    contract = contract_of(codex_events(lines), git_repo)
    assert contract.in_flight_code == []
    assert contract.do_not_redo == ["ran `echo hi` successfully", "file_change: README.md, hello.txt"]


def test_edit_multiedit_and_patch_snippets(git_repo: Path) -> None:
    big = "x = 1\n" * 1000
    patch = ("*** Begin Patch\n*** Update File: app/a.py\n@@\n-old\n+new\n"
             "*** Add File: app/b.py\n+print('b')\n*** End Patch")
    events: list[AgentEvent] = [
        call("e1", "Edit", file_path=str(git_repo / "src" / "m.py"), old_string="a", new_string=big),
        call("e2", "MultiEdit", file_path="rel.py",
             edits=[{"old_string": "a", "new_string": "A"}, {"old_string": "b", "new_string": "B"}]),
        ToolCall(runtime="codex", call_id="e3", name="apply_patch", input={"input": patch}),
    ]
    inflight = contract_of(events, git_repo).in_flight_code
    assert [c.path for c in inflight] == ["src/m.py", "rel.py", "app/a.py", "app/b.py"]
    assert len(inflight[0].snippet) == SNIPPET_CHARS
    assert inflight[0].snippet == big[:SNIPPET_CHARS - 1] + "…"
    assert inflight[1].snippet == "A\n⋮\nB"
    assert inflight[2].snippet == "*** Update File: app/a.py\n@@\n-old\n+new"
    assert inflight[3].snippet == "*** Add File: app/b.py\n+print('b')\n*** End Patch"


def test_a_later_successful_write_supersedes_an_unfinished_one(git_repo: Path) -> None:
    events: list[AgentEvent] = [
        call("w1", "Write", file_path="a.py", content="draft"),       # cut off (run 1)
        call("w2", "Write", file_path="b.py", content="kept"),        # cut off
        call("w3", "Write", file_path="a.py", content="final"), ok("w3"),  # redone (run 2)
        call("w4", "Write", file_path="b.py", content="retry"), failed("w4"),
    ]
    contract = contract_of(events, git_repo)
    assert contract.in_flight_code == [InFlightCode(path="b.py", snippet="kept")]
    assert contract.do_not_redo == ["Write: a.py"]


# --- do not redo ------------------------------------------------------------------------

def test_only_successful_commands_are_done(git_repo: Path) -> None:
    lines = capture_lines(CLAUDE / "c_bash_tool" / "run1" / "stdout.ndjson", git_repo)
    contract = contract_of(claude_events(lines), git_repo)
    assert contract.do_not_redo == ["ran `echo hi` successfully"]  # `ls does-not-exist` exited 2


def test_a_failed_codex_command_is_not_done(git_repo: Path) -> None:
    lines = capture_lines(CODEX / "b2_command_fails" / "run1.stdout.jsonl", git_repo)
    assert contract_of(codex_events(lines), git_repo).do_not_redo == []


def test_a_non_zero_exit_is_a_failure_even_unflagged(git_repo: Path) -> None:
    events: list[AgentEvent] = [
        ToolCall(runtime="codex", call_id="x1", name="shell", input={"command": "make"}),
        ToolResult(runtime="codex", call_id="x1", output="Error 2", exit_code=2),
        ToolCall(runtime="codex", call_id="x2", name="shell", input={"command": "make lint"}),
        ToolResult(runtime="codex", call_id="x2", output="", exit_code=0),
    ]
    assert contract_of(events, git_repo).do_not_redo == ["ran `make lint` successfully"]


def test_done_items_are_unique_and_capped(git_repo: Path) -> None:
    events: list[AgentEvent] = []
    for i in range(MAX_ITEMS + 10):
        events += [call(f"b{i}", "Bash", command=f"step {i}"), ok(f"b{i}")]
    events += [call("again", "Bash", command="step 3", description="again"), ok("again")]
    done = contract_of(events, git_repo).do_not_redo
    assert len(done) == MAX_ITEMS
    assert done[-1] == "ran `step 3` successfully"
    assert done[0] == "ran `step 11` successfully"
    assert len(set(done)) == len(done)


@pytest.mark.parametrize(("tool_input", "expected"), [
    ({"command": "/bin/bash -lc 'echo hi && ls'"}, "echo hi && ls"),
    ({"command": "pytest -q", "description": "Run tests"}, "pytest -q"),
    ({"cmd": ["bash", "-c", "make test"]}, "make test"),
    ({"command": ["git", "commit", "-m", "a b"]}, "git commit -m 'a b'"),
    ({"command": "echo 'unbalanced"}, "echo 'unbalanced"),
])
def test_command_text(tool_input: dict[str, Any], expected: str) -> None:
    assert command_text(tool_input) == expected


# --- acceptance checks --------------------------------------------------------------------

PYTEST = ["pytest", "-q"]
RUFF = ["ruff", "check", "app tests"]


def test_acceptance_assertions_are_the_quoted_commands(git_repo: Path) -> None:
    contract = contract_of([], git_repo, acceptance=[PYTEST, RUFF, PYTEST])
    assert contract.acceptance_assertions == ["`pytest -q` exits 0", "`ruff check 'app tests'` exits 0"]
    assert contract.next_action.startswith("Continue the task after the previous agent hit a usage limit.")


def test_the_last_failing_check_comes_first(git_repo: Path) -> None:
    output = "collected 3 items\n" + "." * 3000 + "\nFAILED tests/test_a.py::test_b - assert 1 == 2"
    events: list[AgentEvent] = [
        check(PYTEST, False, exit_code=1, output="old failure"),
        check(RUFF, True, exit_code=0),
        AssistantText(runtime="claude", text="All done, the tests pass."),
        check(PYTEST, True, exit_code=0),
        check(RUFF, False, exit_code=1, output=output),
    ]
    contract = contract_of(events, git_repo, acceptance=[PYTEST, RUFF])
    head = "The acceptance check `ruff check 'app tests'` failed (exit 1): …"
    assert contract.next_action.startswith(head)
    first = contract.next_action.split(". Fix it.")[0]
    assert first.endswith("FAILED tests/test_a.py::test_b - assert 1 == 2")
    assert "collected 3 items" not in first
    assert len(first) < len(head) + 600
    assert "Then continue the task" in contract.next_action
    assert "if it says the work is done, it is not" in contract.next_action
    assert "old failure" not in contract.next_action
    failing = [c for c in contract.constraints if "`ruff check 'app tests'`" in c]
    assert len(failing) == 1
    assert failing[0].startswith("The work is not done while `ruff check 'app tests'` fails; "
                                 "Relay's last run of it failed (exit 1) with this output:\n…")
    assert failing[0].endswith("assert 1 == 2")
    assert "The acceptance check `pytest -q` passed when Relay last ran it." in contract.decisions


def test_running_a_check_is_never_done(git_repo: Path) -> None:
    events: list[AgentEvent] = [
        call("b1", "Bash", command="pytest -q", description="Run the tests"), ok("b1", "3 passed"),
        call("b2", "Bash", command="pytest -q tests/test_a.py"), ok("b2", "1 passed"),
    ]
    contract = contract_of(events, git_repo, acceptance=[PYTEST])
    assert contract.do_not_redo == ["ran `pytest -q tests/test_a.py` successfully"]


def test_a_check_that_could_not_run(git_repo: Path) -> None:
    events = [check(PYTEST, False, problem="did not finish within 5 s and was stopped")]
    contract = contract_of(events, git_repo, acceptance=[PYTEST])
    assert contract.next_action.startswith(
        "The acceptance check `pytest -q` failed (did not finish within 5 s and was stopped). Fix it.")


def test_checks_come_from_the_verifier_when_the_task_names_none(git_repo: Path) -> None:
    events = [check(["make", "test"], False, exit_code=2, output="make: *** [test] Error 2")]
    contract = contract_of(events, git_repo)
    assert contract.acceptance_assertions == ["`make test` exits 0"]
    assert contract.next_action.startswith(
        "The acceptance check `make test` failed (exit 2): make: *** [test] Error 2. Fix it.")


def test_a_check_the_task_no_longer_has_does_not_block(git_repo: Path) -> None:
    events = [check(["make", "test"], False, exit_code=2, output="boom")]
    contract = contract_of(events, git_repo, acceptance=[PYTEST])
    assert contract.acceptance_assertions == ["`pytest -q` exits 0"]
    assert contract.next_action.startswith("Continue the task")
    assert not any("boom" in c for c in contract.constraints)


def test_all_green_says_nothing_failed(git_repo: Path) -> None:
    contract = contract_of([check(PYTEST, True, exit_code=0)], git_repo, acceptance=[PYTEST])
    assert "failed" not in contract.next_action
    assert contract.decisions == ["The acceptance check `pytest -q` passed when Relay last ran it."]
    assert len(contract.constraints) == 2


# --- the whole contract -------------------------------------------------------------------

def test_render_and_sign_show_plan_tasks_in_flight_and_checks(git_repo: Path) -> None:
    events: list[AgentEvent] = [
        call("t1", "TodoWrite", todos=[todo("Read code", "completed"), todo("Fix bug", "in_progress"),
                                       todo("Write tests", "pending")]),
        ok("t1"),
        call("w1", "Write", file_path=str(git_repo / "fix.py"), content="def fix():\n    return 1\n"),
        check(PYTEST, False, exit_code=1, output="1 failed"),
    ]
    contract = contract_of(events, git_repo, acceptance=[PYTEST])
    text = render_markdown(verify(_envelope(contract), KEY))
    assert "## Plan ([x] done, [ ] remaining)\n\n- [x] Read code\n- [ ] (in progress) Fix bug\n" \
           "- [ ] Write tests\n" in text
    assert "## In-flight code (unfinished when the previous agent stopped)\n\n`fix.py`:\n```\n" \
           "def fix():\n    return 1\n```" in text
    assert "- `pytest -q` exits 0" in text
    assert "**Next action:** The acceptance check `pytest -q` failed (exit 1): 1 failed. Fix it." in text
    assert "> Add a greeting" in text


def _envelope(contract: ContractV2) -> bytes:
    return envelope_bytes(sign(contract, KEY))


@pytest.mark.parametrize(("reason", "phrase"), [
    ("requested by the user", "Continue the task (the user handed it over from the previous agent)."),
    ("verify_failed", "Continue the task after the previous agent's work failed its acceptance checks."),
    ("quota", "Continue the task after the previous agent ran out of quota."),
    ("something_new", "Continue the task (handed over: something new)."),
    ("pre-emptive: close to the limit",
     "Continue the task before the previous agent's account reached its limit."),
])
def test_every_handoff_reason_reads_as_a_sentence(reason: str, phrase: str) -> None:

    text = next_action(reason=reason, failing=[], in_flight=[], remaining=[], last_message=None)
    assert text.startswith(phrase)
