"""The Cursor and Continue stores on written samples of their formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay.core.events import (
    AssistantText,
    LimitHit,
    NeedsInput,
    ToolCall,
    TurnCompleted,
)
from relay.detect.stores import continuedev, cursor
from tests.detect import editor_samples as s
from tests.detect.editor_checks import FAST, by_id, kinds, only, prompt

# -- Cursor -----------------------------------------------------------------------------

@pytest.fixture
def cursor_user(tmp_path: Path) -> Path:
    user = tmp_path / "Cursor" / "User"
    rows = s.cursor_agent_rows("c0ffee")
    rows.update(s.cursor_agent_rows("beef", status="generating", last_user=True))
    rows["composerData:empty"] = s.composer("empty", [])
    s.state_db(user / "globalStorage" / "state.vscdb", disk=rows)
    hash_dir = s.workspace(user, "ws1", "file:///home/dev/shop")
    s.state_db(hash_dir / "state.vscdb", items={
        "composer.composerData": {"allComposers": [{"composerId": "c0ffee", "name": "x"}],
                                  "selectedComposerIds": ["c0ffee"]},
        "workbench.panel.aichat.view.aichat.chatdata": s.aichat([
            s.aichat_tab("tab-1", [("user", "Why the retry loop?"), ("ai", "It backs off.")]),
            s.aichat_tab("tab-2", [("user", "And the jitter?")]),
            s.aichat_tab("tab-empty", [])])})
    return user


def test_cursor_composer(cursor_user: Path) -> None:
    reads = by_id(cursor.STORE, cursor_user)

    assert sorted(reads) == ["beef", "c0ffee", "tab-1", "tab-2"]  # the empty composer is not
    read = reads["c0ffee"]
    assert read.item.path.name == "state.vscdb#composerData:c0ffee"
    assert kinds(read) == ["tool_call", "tool_result", "assistant_text", "tool_call",
                           "tool_result", "tool_call", "tool_result", "assistant_text",
                           "turn_completed"]
    assert prompt(read) == "Add pagination to /api/orders"
    thinking = read.events[2]
    assert isinstance(thinking, AssistantText)
    assert thinking.reasoning
    todos, *commands = [(e.name, e.input) for e in read.events if isinstance(e, ToolCall)]
    assert commands == [("read_file", {"target_file": "api/orders.py"}),
                        ("shell", {"command": "pytest -q api"})]
    assert todos[0] == "TodoWrite"
    assert todos[1]["todos"][1] == {"content": "Document the parameters", "status": "pending"}
    end = read.events[-1]
    assert isinstance(end, TurnCompleted)
    assert (end.usage.input_tokens, end.usage.output_tokens) == (9700, 450)
    assert read.cwd == "/home/dev/shop"  # via the workspace's list of composers
    assert read.models == ["claude-4.5-sonnet"]
    assert (read.started_ms, read.last_activity_ms) == (s.T0, s.T0 + 90_000)
    assert not read.open_turn
    assert read.problems == []
    assert "secret-token" not in repr(read)
    assert "do-not-read" not in repr(read)


def test_cursor_generating_and_unanswered(cursor_user: Path) -> None:
    reads = by_id(cursor.STORE, cursor_user)

    assert reads["beef"].open_turn
    assert kinds(reads["beef"])[-3:] == ["turn_completed", "tool_call", "tool_result"]
    assert prompt(reads["tab-1"]) == "Why the retry loop?"
    assert kinds(reads["tab-1"]) == ["assistant_text", "turn_completed"]
    assert not reads["tab-1"].open_turn
    assert reads["tab-2"].open_turn
    assert reads["tab-1"].cwd == "/home/dev/shop"


def test_cursor_error_status_names_the_limit(tmp_path: Path) -> None:
    user = tmp_path / "Cursor" / "User"
    rows = s.cursor_agent_rows("e1", status="error")
    last = rows["bubbleId:e1:b4"]
    last["errorDetails"] = {"message": "Rate limit exceeded. Please try again in a minute."}
    s.state_db(user / "globalStorage" / "state.vscdb", disk=rows)

    _, read = only(cursor.STORE, user)

    assert kinds(read)[-2:] == ["limit_hit", "error"]
    hit = read.events[-2]
    assert isinstance(hit, LimitHit)
    assert hit.limit == "rate_limit"


def test_cursor_corrupt_values_and_a_locked_database(tmp_path: Path,
                                                     locked: list[object]) -> None:
    user = tmp_path / "Cursor" / "User"
    rows = s.cursor_agent_rows("c1")
    rows["bubbleId:c1:b3"] = '{"_v": 3, "type": 2, "text": "cut'
    rows["composerData:bad"] = "{not json"
    db = s.state_db(user / "globalStorage" / "state.vscdb", disk=rows)
    store = cursor.CursorStore(timeout=FAST)

    reads = by_id(store, user)

    assert any("corrupt" in p or "cut short" in p for p in reads["c1"].problems)
    assert any("1 message(s)" in p for p in reads["c1"].problems)
    assert prompt(reads["c1"]) == "Add pagination to /api/orders"
    assert reads["bad"].events == []
    assert any("composerData:bad" in p
                                             for p in reads["bad"].problems)

    item = next(i for i in store.list(user, "").items if i.agent_session_id == "c1")
    locked.append(s.hold_exclusive_lock(db))
    listing = store.list(user, "")
    assert listing.items == []
    assert any("locked" in p for p in listing.problems)
    read = store.read(item)
    assert read.events == []
    assert any("locked" in p for p in read.problems)


def test_cursor_without_a_database_lists_nothing(tmp_path: Path) -> None:
    user = tmp_path / "Cursor" / "User"
    (user / "workspaceStorage" / "no-db").mkdir(parents=True)
    assert cursor.STORE.list(user, "").items == []
    assert cursor.STORE.list(user, "").problems == []


# -- Continue ---------------------------------------------------------------------------

def test_continue_session(tmp_path: Path) -> None:
    root = s.continue_dir(tmp_path / ".continue", {
        "2f4c": s.continue_session("2f4c", s.continue_agent_history())})

    item, read = only(continuedev.STORE, root)

    assert (item.runtime, item.agent_session_id) == ("continue", "2f4c")
    assert kinds(read) == ["assistant_text", "tool_call", "tool_result", "assistant_text",
                           "turn_completed"]
    assert prompt(read) == "Why are the tests slow?"
    call = read.events[1]
    assert isinstance(call, ToolCall)
    assert (call.name, call.input) == ("shell", {"command": "pytest -x -q"})
    end = read.events[-1]
    assert isinstance(end, TurnCompleted)
    assert end.usage.input_tokens == 3700
    assert read.cwd == s.CWD
    assert read.started_ms == s.T0
    assert read.models == ["Claude 4.5 Sonnet"]
    assert not read.open_turn
    assert read.problems == []


def test_continue_waiting_for_approval_and_broken_files(tmp_path: Path) -> None:
    root = s.continue_dir(tmp_path / ".continue", {
        "wait": s.continue_session("wait", s.continue_agent_history(approved=False)),
        "ask": s.continue_session("ask", [s.item({"role": "user", "content": "Hello?"})]),
        "shape": {"sessionId": "shape", "history": {"not": "a list"}, "workspaceDirectory": 7}})
    whole = json.dumps(s.continue_session("cut", s.continue_agent_history()))
    (root / "sessions" / "cut.json").write_text(whole[:200])

    reads = by_id(continuedev.STORE, root)

    waiting = reads["wait"].events[-1]
    assert isinstance(waiting, NeedsInput)
    assert waiting.prompt == "Approve run_terminal_command"
    assert reads["ask"].open_turn
    assert reads["shape"].events == []
    assert reads["shape"].cwd is None
    assert reads["cut"].events == []
    assert any("cut short" in p for p in reads["cut"].problems)


