"""The editor stores (Cline, Copilot Chat, Cursor, Continue) on written samples of their formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay.core.events import (
    AgentError,
    AssistantText,
    LimitHit,
    NeedsInput,
    Notice,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.detect.lift import lift
from relay.detect.model import LiveProcess
from relay.detect.stores import cline, continuedev, cursor, vscdb
from relay.detect.stores.base import SessionStore
from tests.detect import editor_samples as s
from tests.detect.editor_checks import FAST, by_id, kinds, only, prompt


@pytest.fixture
def cline_root(tmp_path: Path) -> Path:
    return tmp_path / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"


def test_every_store_speaks_the_protocol() -> None:
    stores: list[SessionStore] = [cline.STORE, vscdb.COPILOT_STORE, cursor.STORE,
                                  continuedev.STORE]
    assert [s.runtime for s in stores] == ["cline", "copilot", "cursor", "continue"]


# -- where the editors are --------------------------------------------------------------

def test_editor_roots_on_linux(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code = home / ".config" / "Code" / "User"
    (code / "globalStorage" / "saoudrizwan.claude-dev").mkdir(parents=True)
    (home / ".config" / "Cursor" / "User").mkdir(parents=True)
    (home / ".vscode-server" / "data" / "User").mkdir(parents=True)
    (home / ".continue" / "sessions").mkdir(parents=True)
    (home / ".cline" / "data" / "tasks").mkdir(parents=True)
    (home / ".config" / "VSCodium").mkdir(parents=True)  # no User folder: not a root

    roots = vscdb.editor_roots({"HOME": str(home)}, "linux")

    assert roots == [
        ("copilot", code), ("cline", code / "globalStorage" / "saoudrizwan.claude-dev"),
        ("cursor", home / ".config" / "Cursor" / "User"),
        ("copilot", home / ".vscode-server" / "data" / "User"),
        ("cline", home / ".cline" / "data"), ("continue", home / ".continue")]


def test_editor_roots_follow_each_platform_and_the_overrides(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mac = home / "Library" / "Application Support" / "Code - Insiders" / "User"
    mac.mkdir(parents=True)
    appdata = tmp_path / "Roaming"
    (appdata / "Windsurf" / "User").mkdir(parents=True)
    xdg = tmp_path / "xdg"
    (xdg / "Code" / "User").mkdir(parents=True)
    cline_data = tmp_path / "cline-data"
    (cline_data / "tasks").mkdir(parents=True)
    cont = tmp_path / "cont"
    (cont / "sessions").mkdir(parents=True)

    assert vscdb.editor_roots({"HOME": str(home)}, "darwin") == [("copilot", mac)]
    assert vscdb.editor_roots({"USERPROFILE": str(home), "APPDATA": str(appdata)}, "win32") \
        == [("copilot", appdata / "Windsurf" / "User")]
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg), "CLINE_DATA_DIR": str(cline_data),
           "CONTINUE_GLOBAL_DIR": str(cont)}
    assert vscdb.editor_roots(env, "linux") == [
        ("copilot", xdg / "Code" / "User"), ("cline", cline_data), ("continue", cont)]


# -- Cline ------------------------------------------------------------------------------

def test_cline_task_reads_into_events_usage_and_intent(cline_root: Path) -> None:
    s.cline_task(cline_root, "1767000000000", s.cline_completed(), history=s.cline_api_history(),
                 metadata=s.cline_metadata())
    s.cline_history(cline_root, {"1767000000000": "/srv/from-history"})

    item, read = only(cline.STORE, cline_root, "cline")

    assert (item.runtime, item.entry, item.path.name) == ("cline", "cline", "1767000000000")
    assert kinds(read) == [
        "assistant_text", "assistant_text", "tool_call", "tool_result", "tool_call",
        "tool_result", "tool_call", "tool_result", "tool_call", "tool_result", "assistant_text",
        "turn_completed"]
    assert prompt(read) == "Add a --verbose flag to the CLI"
    calls = [e for e in read.events if isinstance(e, ToolCall)]
    assert [(c.name, c.input.get("path") or c.input.get("command")) for c in calls[:3]] == [
        ("read_file", "src/cli.py"), ("edit_file", "src/cli.py"), ("shell", "pytest -q")]
    assert calls[3].name == "TodoWrite"
    assert calls[3].input["todos"][2] == {"content": "Update the docs", "status": "pending"}
    results = {e.call_id: e.output for e in read.events if isinstance(e, ToolResult)}
    assert results[calls[2].call_id] == "3 passed in 0.12s"
    end = read.events[-1]
    assert isinstance(end, TurnCompleted)
    assert end.result_text == "Added --verbose to the CLI."  # the HAS_CHANGES flag is Cline's
    assert (end.usage.input_tokens, end.usage.output_tokens) == (8900, 670)
    assert end.usage.cost_usd == pytest.approx(0.0535)
    assert read.cwd == "/srv/from-history"
    assert read.models == ["claude-sonnet-4-5"]
    assert (read.started_ms, read.last_activity_ms) == (s.T0, s.T0 + 13_000)
    assert not read.open_turn
    assert read.problems == []
    assert all(e.replay and e.runtime == "cline" for e in read.events)


def test_cline_unanswered_asks_wait_for_the_user(cline_root: Path) -> None:
    s.cline_task(cline_root, "followup", s.cline_followup())
    s.cline_task(cline_root, "command", s.cline_command_approval())

    reads = by_id(cline.STORE, cline_root)

    question = reads["followup"].events[-1]
    assert isinstance(question, NeedsInput)
    assert question.prompt == "Keep the old INI file as a fallback?"
    assert [(o.label, o.kind) for o in question.options] == [("Yes", "answer"), ("No", "answer")]
    assert question.about == "question"
    approval = reads["command"].events[-1]
    assert isinstance(approval, NeedsInput)
    assert approval.prompt == "Approve the command: npm run build -- --prod"
    call = reads["command"].events[-2]
    assert isinstance(call, ToolCall)
    assert (call.name, call.input) == ("shell", {"command": "npm run build -- --prod"})
    assert not reads["followup"].open_turn
    assert not reads["command"].open_turn


def test_cline_api_failures_become_limits(cline_root: Path) -> None:
    s.cline_task(cline_root, "rate", s.cline_rate_limited())
    s.cline_task(cline_root, "quota", s.cline_quota())

    reads = by_id(cline.STORE, cline_root)

    rate = reads["rate"]
    assert kinds(rate)[-2:] == ["limit_hit", "error"]
    hit, error = rate.events[-2], rate.events[-1]
    assert isinstance(hit, LimitHit)
    assert hit.limit == "rate_limit"
    assert hit.blocking
    assert isinstance(error, AgentError)
    assert (error.category, error.http_status) == (
        "rate_limit", 429)
    assert "rate limit exceeded" in hit.message
    assert not hit.message.startswith("{")
    assert [e.category for e in rate.events if isinstance(e, Notice)] == ["retry", "retry"]
    quota = reads["quota"].events[-2]
    assert isinstance(quota, LimitHit)
    assert quota.limit == "quota"
    assert not rate.open_turn
    assert "turn_completed" not in kinds(rate)


def test_cline_mid_turn_is_an_open_turn(cline_root: Path) -> None:
    s.cline_task(cline_root, "streaming", s.cline_streaming())

    _, read = only(cline.STORE, cline_root)

    assert read.open_turn
    assert read.cwd == s.CWD  # from the environment details Cline sent with the request
    assert prompt(read) == "Explain the cache layer"


def test_cline_without_ui_messages_reads_the_conversation_history(cline_root: Path) -> None:
    s.cline_task(cline_root, "no-ui", None, history=s.cline_api_history())

    _, read = only(cline.STORE, cline_root)

    assert any("ui_messages.json is missing" in p for p in read.problems)
    assert kinds(read) == ["assistant_text", "tool_call", "tool_result"]
    assert prompt(read) == "Add a --verbose flag to the CLI"
    assert read.cwd == s.CWD
    assert read.models == ["claude-sonnet-4-5"]
    assert read.open_turn  # the last message is a tool result the model has not answered


def test_cline_truncated_ui_messages_are_reported_not_raised(cline_root: Path) -> None:
    whole = json.dumps(s.cline_completed()).encode()
    s.cline_task(cline_root, "cut", None, history=s.cline_api_history(),
                 raw_ui=whole[: len(whole) // 2])

    _, read = only(cline.STORE, cline_root)

    assert any("cut short" in p for p in read.problems)
    assert prompt(read) == "Add a --verbose flag to the CLI"  # from the fallback


def test_cline_values_of_the_wrong_type_are_skipped(cline_root: Path) -> None:
    garbage = [1, "text", {"ts": "soon", "type": "say", "say": "api_req_started",
                           "text": "{broken"},
               {"ts": s.T0, "type": "ask", "ask": "tool", "text": "{\"tool\": 5, \"path\": []}"},
               {"ts": s.T0 + 1, "type": "say", "say": "text", "text": 42},
               {"ts": s.T0 + 2, "type": "say", "say": "task", "text": "still readable"}]
    s.cline_task(cline_root, "garbage", garbage)
    (cline_root / "tasks" / "object").mkdir(parents=True)
    (cline_root / "tasks" / "object" / "ui_messages.json").write_text('{"not": "a list"}')

    reads = by_id(cline.STORE, cline_root)

    read = reads["garbage"]
    assert any("message 0: not an object" in p for p in read.problems)
    assert any("api_req_started" in p and "corrupt" in p for p in read.problems)
    assert prompt(read) == "still readable"
    assert any("not a list" in p for p in reads["object"].problems)


def test_cline_listing(cline_root: Path) -> None:
    assert cline.STORE.list(cline_root, "").items == []  # no tasks folder yet
    (cline_root / "tasks" / "being-created").mkdir(parents=True)
    task = s.cline_task(cline_root, "1", s.cline_followup(), history=s.cline_api_history())
    item, _ = only(cline.STORE, cline_root)
    sizes = sum((task / n).stat().st_size for n in ("ui_messages.json",
                                                    "api_conversation_history.json"))
    assert (item.agent_session_id, item.entry, item.size) == ("1", "cline", sizes)


def test_cline_task_history_in_the_editor_database(tmp_path: Path) -> None:
    global_storage = tmp_path / "Code" / "User" / "globalStorage"
    root = global_storage / "saoudrizwan.claude-dev"
    s.cline_task(root, "old", s.cline_followup())
    s.state_db(global_storage / "state.vscdb", items={"saoudrizwan.claude-dev": {
        "taskHistory": [{"id": "old", "ts": s.T0, "task": "…", "cwdOnTaskInitialization":
                         "/srv/legacy"}]}})

    _, read = only(cline.STORE, root)

    assert read.cwd == "/srv/legacy"


# -- Copilot Chat (VS Code's chat sessions) -----------------------------------------------

@pytest.fixture
def code_user(tmp_path: Path) -> Path:
    return tmp_path / "Code" / "User"


def test_copilot_session_file(code_user: Path) -> None:
    hash_dir = s.workspace(code_user, "5d2f9a", "file:///home/dev/web%20shop")
    (hash_dir / "chatSessions").mkdir()
    (hash_dir / "chatSessions" / "7c1e.json").write_text(json.dumps(s.copilot_done("7c1e")))

    item, read = only(vscdb.COPILOT_STORE, code_user)

    assert (item.runtime, item.agent_session_id, item.entry) == ("copilot", "7c1e", "copilot")
    assert kinds(read) == ["assistant_text", "tool_call", "tool_result", "tool_call",
                           "tool_result", "assistant_text", "turn_completed"]
    assert prompt(read) == "Why is the checkout total off by one cent?"
    text = read.events[0]
    assert isinstance(text, AssistantText)
    assert text.text == "The total is rounded per line item."
    command, edit = (e for e in read.events if isinstance(e, ToolCall))
    assert (command.name, command.input) == ("shell", {"command": "pytest tests/test_cart.py"})
    assert (edit.name, edit.input["path"]) == ("edit_file", f"{s.CWD}/src/cart.py")
    result = read.events[2]
    assert isinstance(result, ToolResult)
    assert (result.output, result.exit_code) == ("1 failed", 1)
    end = read.events[-1]
    assert isinstance(end, TurnCompleted)
    assert end.usage.input_tokens == 5100
    assert read.cwd == "/home/dev/web shop"
    assert read.mcp_servers == ["files"]
    assert read.models == ["copilot/gpt-4.1"]
    assert (read.started_ms, read.last_activity_ms) == (s.T0, s.T0 + 60_000)
    assert not read.open_turn
    assert read.problems == []


def test_copilot_mutation_log_is_replayed(code_user: Path) -> None:
    folder = s.workspace(code_user, "aa", "file:///home/dev/shop") / "chatSessions"
    folder.mkdir()
    pending = s.chat_request("request_2", "Also round the tax", offset_s=30, response=[],
                             state=0)
    log = s.jsonl_log(s.copilot_done("9f00"), [
        {"kind": 2, "k": ["requests"], "v": [pending]},
        {"kind": 1, "k": ["requests", 1, "response"], "v": [s.markdown("Looking at tax.py")]},
        {"kind": 1, "k": ["requests", 7, "response"], "v": []},   # a path that does not exist
        {"kind": 3, "k": ["customTitle"]},
    ])
    (folder / "9f00.jsonl").write_text(log + '{"kind": 1, "k": ["requ')  # a line being written

    _, read = only(vscdb.COPILOT_STORE, code_user)

    assert prompt(read) == "Why is the checkout total off by one cent?"
    last = read.events[-1]
    assert isinstance(last, AssistantText)
    assert last.text == "Looking at tax.py"
    assert read.open_turn  # the second request is pending
    assert any("cut short" in p for p in read.problems)
    assert any("1 change(s)" in p for p in read.problems)


def test_copilot_limits_and_waiting_for_confirmation(code_user: Path) -> None:
    folder = s.workspace(code_user, "bb", "file:///home/dev/shop") / "chatSessions"
    folder.mkdir()
    quota = s.chat_request("r1", "Write the tests", offset_s=0, response=[], state=3, result={
        "errorDetails": {"message": "You've reached your monthly chat messages quota. Upgrade "
                                    "to Copilot Pro.", "isQuotaExceeded": True}})
    rate = s.chat_request("r1", "Write the tests", offset_s=0, response=[], state=3, result={
        "errorDetails": {"message": "Sorry, you have been rate-limited.", "isRateLimited": True,
                         "code": "rate_limited"}})
    confirm = s.chat_request("r1", "Delete the build folder", offset_s=0, state=4, response=[
        s.markdown("I will run a command."),
        {"kind": "confirmation", "title": "Run `rm -rf build`?", "message": "Allow?",
         "data": {}, "isUsed": False}])
    for name, request in (("quota", quota), ("rate", rate), ("confirm", confirm)):
        (folder / f"{name}.json").write_text(json.dumps(s.chat_session(name, [request])))

    reads = by_id(vscdb.COPILOT_STORE, code_user)

    hit = reads["quota"].events[-2]
    assert isinstance(hit, LimitHit)
    assert hit.limit == "quota"
    error = reads["quota"].events[-1]
    assert isinstance(error, AgentError)
    assert error.category == "usage_limit"
    rate_hit = reads["rate"].events[-2]
    assert isinstance(rate_hit, LimitHit)
    assert rate_hit.limit == "rate_limit"
    waiting = reads["confirm"].events[-1]
    assert isinstance(waiting, NeedsInput)
    assert waiting.prompt == "Run `rm -rf build`?"
    assert not any(r.open_turn for r in reads.values())


def test_copilot_legacy_sessions_in_state_vscdb(code_user: Path) -> None:
    hash_dir = s.workspace(code_user, "cc", "file:///home/dev/shop")
    s.state_db(hash_dir / "state.vscdb", items={
        "interactive.sessions": [s.copilot_done("old-1"), s.copilot_done("moved")]})
    (hash_dir / "chatSessions").mkdir()
    (hash_dir / "chatSessions" / "moved.json").write_text(json.dumps(s.copilot_done("moved")))

    listing = vscdb.COPILOT_STORE.list(code_user, "")

    paths = sorted(i.path.name for i in listing.items)
    assert paths == ["moved.json", "state.vscdb#interactive.sessions:old-1"]
    legacy = next(i for i in listing.items if i.agent_session_id == "old-1")
    read = vscdb.COPILOT_STORE.read(legacy)
    assert prompt(read) == "Why is the checkout total off by one cent?"
    assert read.cwd == s.CWD
    assert read.problems == []


def test_copilot_locked_and_corrupt_databases_are_reported(code_user: Path,
                                                           locked: list[object]) -> None:
    store = vscdb.VSCodeChatStore(timeout=FAST)
    busy = s.workspace(code_user, "busy", "file:///home/dev/a")
    s.state_db(busy / "state.vscdb", items={"interactive.sessions": [s.copilot_done("l1")]})
    (busy / "chatSessions").mkdir()
    (busy / "chatSessions" / "f1.json").write_text(json.dumps(s.copilot_done("f1")))
    broken = s.workspace(code_user, "broken", "file:///home/dev/b")
    s.state_db(broken / "state.vscdb", items={"interactive.sessions": '[{"sessionId": "x", "req'})
    (s.workspace(code_user, "junk", "file:///home/dev/c") / "state.vscdb").write_bytes(
        b"this is not a database, just bytes" * 40)
    legacy = next(i for i in store.list(code_user, "").items if i.agent_session_id == "l1")
    locked.append(s.hold_exclusive_lock(busy / "state.vscdb"))
    fresh = vscdb.VSCodeChatStore(timeout=FAST)

    listing = fresh.list(code_user, "")

    assert [i.agent_session_id for i in listing.items] == ["f1"]  # the files stay readable
    assert any("busy" in p and "locked by the editor" in p for p in listing.problems)
    assert any("broken" in p and "JSON cut short" in p for p in listing.problems)
    assert any("junk" in p and "not a readable SQLite database" in p for p in listing.problems)
    read = fresh.read(legacy)
    assert read.events == []
    assert any("locked" in p for p in read.problems)


def test_a_session_gone_between_list_and_read_is_a_problem(tmp_path: Path,
                                                           cline_root: Path) -> None:
    root = s.continue_dir(tmp_path / ".continue", {"gone": s.continue_session("gone", [])})
    item = continuedev.STORE.list(root, "").items[0]
    item.path.unlink()
    assert any("missing" in p for p in continuedev.STORE.read(item).problems)

    task = s.cline_task(cline_root, "gone", s.cline_followup())
    cline_item = cline.STORE.list(cline_root, "").items[0]
    (task / "ui_messages.json").unlink()
    read = cline.STORE.read(cline_item)
    assert read.events == []
    assert any("missing" in p for p in read.problems)


# -- what the lift makes of them --------------------------------------------------------

def test_the_lift_reads_the_editor_stores(cline_root: Path, tmp_path: Path) -> None:
    for task_id, messages in (("done", s.cline_completed()), ("ask", s.cline_followup()),
                              ("rate", s.cline_rate_limited()), ("mid", s.cline_streaming())):
        s.cline_task(cline_root, task_id, messages)
    reads = by_id(cline.STORE, cline_root)
    later = s.T0 + 3_600_000
    editor = LiveProcess(pid=77, runtime="cline", cmdline=("code",), cwd=s.CWD,
                         started_ms=s.T0, ppid=1)

    done = lift(reads["done"], None, later)
    assert (done.state, done.intent.initial_prompt) == ("ended", "Add a --verbose flag to the CLI")
    assert done.intent.files_touched == ["src/cli.py"]
    assert done.intent.commands == ["pytest -q"]
    assert [(p.text, p.status) for p in done.intent.plan][-1] == ("Update the docs", "pending")
    assert done.intent.last_message == "Added --verbose to the CLI."
    assert lift(reads["ask"], editor, later).state == "needs_input"
    blocked = lift(reads["rate"], None, later)
    assert blocked.state == "blocked"
    assert "rate limit" in blocked.why
    assert lift(reads["mid"], None, later).state == "crashed"
    assert lift(reads["mid"], editor, later).state == "working"

    root = s.continue_dir(tmp_path / ".continue", {
        "wait": s.continue_session("wait", s.continue_agent_history(approved=False))})
    waiting = lift(only(continuedev.STORE, root)[1], editor, later)
    assert waiting.state == "needs_input"
    assert waiting.why == "asks: Approve run_terminal_command"
