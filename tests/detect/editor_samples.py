"""Written samples of the editors' session formats (Cline, VS Code chat, Cursor, Continue).

Built from the editors' public sources (see docs/detect-formats.md), not recorded from live
installs: each builder writes the files, folders and real SQLite ``state.vscdb`` databases an
editor would, with realistic keys and values, and the broken variants the stores must survive
(a locked database, a corrupt value, a missing file, a file cut short).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

#: 2025-12-29 09:20 UTC, in ms: the samples' clock
T0 = 1_767_000_000_000
CWD = "/home/dev/shop"


# -- Cline ------------------------------------------------------------------------------

def say(offset_s: int, kind: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {"ts": T0 + offset_s * 1000, "type": "say", "say": kind, "text": text, **extra}


def ask(offset_s: int, kind: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {"ts": T0 + offset_s * 1000, "type": "ask", "ask": kind, "text": text, **extra}


def api_req(offset_s: int, *, tokens_in: int | None = None, tokens_out: int | None = None,
            cost: float | None = None, request: str = "", **extra: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"request": request, **extra}
    if tokens_in is not None:
        info.update(tokensIn=tokens_in, tokensOut=tokens_out, cacheWrites=0, cacheReads=0,
                    cost=cost)
    return say(offset_s, "api_req_started", json.dumps(info))


ENVIRONMENT = (f"<task>\nAdd a --verbose flag to the CLI\n</task>\n\n<environment_details>\n"
               f"# Current Working Directory ({CWD}) Files\nsrc/\ntests/\n</environment_details>")


def cline_completed() -> list[dict[str, Any]]:
    """A task that ran tools and a command and finished with a completion result."""
    return [
        say(0, "task", "Add a --verbose flag to the CLI"),
        api_req(1, tokens_in=1200, tokens_out=150, cost=0.0125, request=ENVIRONMENT),
        say(2, "reasoning", "I should read the CLI entry point first."),
        say(3, "text", "Let me look at the CLI module."),
        say(4, "tool", json.dumps({"tool": "readFile", "path": "src/cli.py",
                                   "content": f"{CWD}/src/cli.py"})),
        api_req(5, tokens_in=2400, tokens_out=310, cost=0.02,
                request="[read_file for 'src/cli.py'] Result:"),
        ask(6, "tool", json.dumps({"tool": "editedExistingFile", "path": "src/cli.py",
                                   "diff": "------- SEARCH\nargs\n=======\nargs, verbose\n"})),
        api_req(7, tokens_in=2600, tokens_out=90, cost=0.01),
        say(8, "command", "pytest -q"),
        ask(9, "command_output", "3 passed in 0.12s"),
        api_req(10, tokens_in=2700, tokens_out=120, cost=0.011),
        say(11, "task_progress", "- [x] Read the CLI\n- [x] Add the flag\n- [ ] Update the docs"),
        say(12, "completion_result", "Added --verbose to the CLI.HAS_CHANGES"),
        ask(13, "completion_result", ""),
    ]


def cline_followup() -> list[dict[str, Any]]:
    """The agent asked a question nobody answered yet."""
    return [
        say(0, "task", "Migrate the settings to TOML"),
        api_req(1, tokens_in=900, tokens_out=80, cost=0.004),
        ask(2, "followup", json.dumps({"question": "Keep the old INI file as a fallback?",
                                       "options": ["Yes", "No"]})),
    ]


def cline_command_approval() -> list[dict[str, Any]]:
    """The agent waits for the user to approve a command."""
    return [
        say(0, "task", "Build the release"),
        api_req(1, tokens_in=700, tokens_out=40, cost=0.002),
        ask(2, "command", "npm run build -- --prodREQ_APP"),
    ]


def cline_rate_limited() -> list[dict[str, Any]]:
    """Retries ran out on HTTP 429: the task halts on api_req_failed."""
    failure = json.dumps({"message": "429 Too Many Requests: rate limit exceeded, retry later",
                          "status": 429, "request_id": "req_01", "code": "rate_limit_error",
                          "modelId": "claude-sonnet-4-5", "providerId": "anthropic"})
    return [
        say(0, "task", "Refactor the payment module"),
        api_req(1, tokens_in=0, tokens_out=0, cost=None, cancelReason="streaming_failed",
                streamingFailedMessage=failure),
        say(2, "error_retry", json.dumps({"attempt": 1, "maxAttempts": 3, "delaySeconds": 2,
                                          "errorMessage": failure})),
        say(3, "error_retry", json.dumps({"attempt": 3, "maxAttempts": 3, "delaySeconds": 0,
                                          "failed": True, "errorMessage": failure})),
        ask(4, "api_req_failed", failure),
    ]


def cline_quota() -> list[dict[str, Any]]:
    """An OpenAI-compatible provider out of quota (older builds: the plain text)."""
    return [
        say(0, "task", "Write the changelog"),
        api_req(1),
        ask(2, "api_req_failed", "429 You exceeded your current quota, please check your plan "
                                 "and billing details."),
    ]


def cline_streaming() -> list[dict[str, Any]]:
    """Mid-turn: the request is open and the text still streams."""
    return [
        say(0, "task", "Explain the cache layer"),
        api_req(1, request=ENVIRONMENT),
        say(2, "text", "The cache layer keeps", partial=True),
    ]


def cline_api_history() -> list[dict[str, Any]]:
    """The Anthropic-style conversation history of a task (with native tool use)."""
    return [
        {"role": "user", "content": [{"type": "text", "text": ENVIRONMENT}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading the CLI."},
            {"type": "tool_use", "id": "toolu_01", "name": "read_file",
             "input": {"path": "src/cli.py"}}],
         "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"}},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "import argparse"}]},
    ]


def cline_task(root: Path, task_id: str, messages: list[Any] | None,
               history: list[dict[str, Any]] | None = None,
               metadata: dict[str, Any] | None = None, raw_ui: bytes | None = None) -> Path:
    """A task folder under ``root/tasks`` (``root``: the extension's globalStorage folder)."""
    folder = root / "tasks" / task_id
    folder.mkdir(parents=True, exist_ok=True)
    if raw_ui is not None:
        (folder / "ui_messages.json").write_bytes(raw_ui)
    elif messages is not None:
        (folder / "ui_messages.json").write_text(json.dumps(messages))
    if history is not None:
        (folder / "api_conversation_history.json").write_text(json.dumps(history))
    if metadata is not None:
        (folder / "task_metadata.json").write_text(json.dumps(metadata))
    return folder


def cline_metadata() -> dict[str, Any]:
    return {"files_in_context": [{"path": "src/cli.py", "record_state": "active",
                                  "record_source": "cline_edited", "cline_read_date": T0,
                                  "cline_edit_date": T0 + 6000, "user_edit_date": None}],
            "model_usage": [{"ts": T0, "model_id": "claude-sonnet-4-5",
                             "model_provider_id": "anthropic", "mode": "act"}],
            "environment_history": []}


def cline_history(root: Path, entries: dict[str, str]) -> None:
    """``state/taskHistory.json``: task id → cwd."""
    (root / "state").mkdir(parents=True, exist_ok=True)
    (root / "state" / "taskHistory.json").write_text(json.dumps([
        {"id": task_id, "ts": T0, "task": "…", "tokensIn": 10, "tokensOut": 5,
         "totalCost": 0.01, "cwdOnTaskInitialization": cwd}
        for task_id, cwd in entries.items()]))


# -- state.vscdb ------------------------------------------------------------------------

def state_db(path: Path, items: dict[str, Any] | None = None,
             disk: dict[str, Any] | None = None) -> Path:
    """A real ``state.vscdb``: ``ItemTable`` (and Cursor's ``cursorDiskKV``) of JSON values.

    A value that is ``bytes`` or ``str`` is stored as given (to write a corrupt one).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS ItemTable "
                     "(key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        conn.execute("CREATE TABLE IF NOT EXISTS cursorDiskKV "
                     "(key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        for table, rows in (("ItemTable", items or {}), ("cursorDiskKV", disk or {})):
            for key, value in rows.items():
                stored = value if isinstance(value, bytes | str) else json.dumps(value)
                conn.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (key, stored))
        conn.execute("INSERT INTO ItemTable VALUES ('cursorAuth/accessToken', 'secret-token')")
        conn.commit()
    finally:
        conn.close()
    return path


def hold_exclusive_lock(path: Path) -> sqlite3.Connection:
    """Another connection holding the database's exclusive lock (the editor mid-write)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


def workspace(user_dir: Path, hash_id: str, folder: str) -> Path:
    """``workspaceStorage/<hash>`` with its ``workspace.json``."""
    hash_dir = user_dir / "workspaceStorage" / hash_id
    hash_dir.mkdir(parents=True, exist_ok=True)
    (hash_dir / "workspace.json").write_text(json.dumps({"folder": folder}))
    return hash_dir


# -- VS Code chat (Copilot) ---------------------------------------------------------------

def chat_request(request_id: str, prompt: str, *, offset_s: int, response: list[Any],
                 state: int | None = 1, model: str = "copilot/gpt-4.1",
                 result: dict[str, Any] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "requestId": request_id, "timestamp": T0 + offset_s * 1000,
        "message": {"text": prompt, "parts": [{"kind": "text", "text": prompt}]},
        "variableData": {"variables": []}, "response": response,
        "result": result or {"timings": {"firstProgress": 800, "totalElapsed": 4200},
                             "metadata": {}},
        "followups": [], "modelId": model, "responseId": f"response_{request_id}",
        "agent": {"id": "github.copilot.editsAgent"}, "contentReferences": [],
    }
    if state is not None:
        request["modelState"] = {"value": state, "completedAt": T0 + offset_s * 1000 + 4200}
    return request


def markdown(text: str) -> dict[str, Any]:
    return {"value": text, "supportThemeIcons": False, "supportHtml": False}


def terminal_tool(call_id: str, command: str, output: str, exit_code: int) -> dict[str, Any]:
    return {"kind": "toolInvocationSerialized", "toolId": "run_in_terminal",
            "toolCallId": call_id, "invocationMessage": {"value": f"Running `{command}`"},
            "pastTenseMessage": {"value": f"Ran `{command}`"}, "isConfirmed": {"type": 1},
            "isComplete": True, "source": {"type": "internal", "label": "Built-In"},
            "toolSpecificData": {"kind": "terminal", "commandLine": {"original": command},
                                 "terminalCommandState": {"exitCode": exit_code},
                                 "terminalCommandOutput": {"text": output}}}


def edit_tool(call_id: str, path: str) -> dict[str, Any]:
    return {"kind": "toolInvocationSerialized", "toolId": "copilot_replaceString",
            "toolCallId": call_id, "isComplete": True, "isConfirmed": {"type": 1},
            "invocationMessage": {"value": f"Editing [](file://{path})",
                                  "uris": {f"file://{path}": {"$mid": 1, "fsPath": path,
                                                              "path": path,
                                                              "scheme": "file"}}},
            "pastTenseMessage": {"value": "Edited the file"},
            "resultDetails": {"input": json.dumps({"filePath": path, "oldString": "a",
                                                   "newString": "b"}),
                              "output": [{"value": "The file was edited."}], "isError": False},
            "source": {"type": "mcp", "label": "files", "serverLabel": "files"}}


def chat_session(session_id: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": 3, "sessionId": session_id, "creationDate": T0,
            "lastMessageDate": T0 + 60_000, "customTitle": "Fix the checkout total",
            "initialLocation": "panel", "requesterUsername": "dev",
            "responderUsername": "GitHub Copilot", "requests": requests,
            "inputState": {"selectedModel": {"identifier": "copilot/gpt-4.1"}}}


def copilot_done(session_id: str = "7c1e0b9a-3f51-4b4e-9d1a-2f0c7f5b1e01") -> dict[str, Any]:
    return chat_session(session_id, [
        chat_request("request_1", "Why is the checkout total off by one cent?", offset_s=0,
                     response=[markdown("The total is rounded "), markdown("per line item."),
                               terminal_tool("call_1", "pytest tests/test_cart.py", "1 failed",
                                             1),
                               edit_tool("call_2", f"{CWD}/src/cart.py"),
                               markdown("Rounding now happens once, on the sum.")],
                     result={"timings": {"totalElapsed": 9000},
                             "usage": {"promptTokens": 5100, "completionTokens": 420}}),
    ])


def jsonl_log(session: dict[str, Any], later: list[dict[str, Any]]) -> str:
    """The mutation log VS Code writes: the session, then ``later`` changes."""
    return "\n".join(json.dumps(entry) for entry in [{"kind": 0, "v": session}, *later]) + "\n"


# -- Cursor -----------------------------------------------------------------------------

def composer(composer_id: str, bubbles: list[tuple[str, int]], *, status: str = "completed",
             **extra: Any) -> dict[str, Any]:
    return {"_v": 10, "composerId": composer_id, "name": "Add pagination",
            "createdAt": T0, "lastUpdatedAt": T0 + 90_000, "status": status,
            "unifiedMode": "agent", "isAgentic": True,
            "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
            "fullConversationHeadersOnly": [{"bubbleId": b, "type": t} for b, t in bubbles],
            "conversationMap": {}, "text": "", "richText": "",
            "speculativeSummarizationEncryptionKey": "do-not-read", **extra}


def bubble(bubble_id: str, kind: int, text: str = "", offset_s: int = 0,
           **extra: Any) -> dict[str, Any]:
    return {"_v": 3, "type": kind, "bubbleId": bubble_id, "text": text, "richText": "",
            "createdAt": f"2025-12-29T09:20:{offset_s:02d}.000Z", "requestId": "req-1",
            "codeBlocks": [], "capabilities": [], **extra}


def cursor_tool(call_id: str, name: str, args: dict[str, Any], *, status: str = "completed",
                result: Any = None) -> dict[str, Any]:
    return {"tool": 15, "name": name, "toolCallId": call_id, "status": status,
            "rawArgs": json.dumps(args), "params": json.dumps(args),
            "result": json.dumps(result) if result is not None else None,
            "additionalData": {}}


def cursor_agent_rows(composer_id: str, *, status: str = "completed",
                      last_user: bool = False) -> dict[str, Any]:
    """The cursorDiskKV rows of one composer: a prompt, tool use, an answer."""
    rows: dict[str, Any] = {}
    plan = [("b1", 1), ("b2", 2), ("b3", 2), ("b4", 2)]
    rows[f"bubbleId:{composer_id}:b1"] = bubble("b1", 1, "Add pagination to /api/orders", 0,
                                                modelInfo={"modelName": "claude-4.5-sonnet"})
    rows[f"bubbleId:{composer_id}:b2"] = bubble(
        "b2", 2, "", 5, thinking={"text": "The handler returns every row."},
        toolFormerData=cursor_tool("toolu_a", "read_file", {"target_file": "api/orders.py"},
                                   result={"contents": "def orders(): ..."}),
        tokenCount={"inputTokens": 3000, "outputTokens": 200})
    rows[f"bubbleId:{composer_id}:b3"] = bubble(
        "b3", 2, "", 9, toolFormerData=cursor_tool(
            "toolu_b", "run_terminal_cmd", {"command": "pytest -q api"}, result={"exitCode": 0}),
        tokenCount={"inputTokens": 3300, "outputTokens": 90})
    rows[f"bubbleId:{composer_id}:b4"] = bubble(
        "b4", 2, "Orders are now paginated with ?page and ?per_page.", 12,
        tokenCount={"inputTokens": 3400, "outputTokens": 160})
    if last_user:
        plan.append(("b5", 1))
        rows[f"bubbleId:{composer_id}:b5"] = bubble("b5", 1, "Now add a total count header", 20)
    rows[f"composerData:{composer_id}"] = composer(
        composer_id, plan, status=status,
        todos=[{"id": "1", "content": "Paginate /api/orders", "status": "completed"},
               {"id": "2", "content": "Document the parameters", "status": "pending"}])
    return rows


def aichat(tabs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"tabs": tabs, "selectedTabId": tabs[0]["tabId"] if tabs else None}


def aichat_tab(tab_id: str, texts: list[tuple[str, str]]) -> dict[str, Any]:
    return {"tabId": tab_id, "chatTitle": "Explain the retry loop", "lastSendTime": T0 + 5000,
            "bubbles": [{"type": kind, "id": f"{tab_id}-{i}", "text": text, "rawText": text}
                        for i, (kind, text) in enumerate(texts)]}


# -- Continue ---------------------------------------------------------------------------

def continue_session(session_id: str, history: list[dict[str, Any]],
                     workspace_dir: str = f"file://{CWD}") -> dict[str, Any]:
    return {"sessionId": session_id, "title": "Speed up the tests",
            "workspaceDirectory": workspace_dir, "history": history, "mode": "agent",
            "chatModelTitle": "Claude 4.5 Sonnet"}


def item(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"message": message, "contextItems": [], **extra}


def continue_agent_history(*, approved: bool = True) -> list[dict[str, Any]]:
    """A prompt, a tool call (approved and run, or waiting), and the answer."""
    call = {"id": "call_9", "type": "function",
            "function": {"name": "run_terminal_command",
                         "arguments": json.dumps({"command": "pytest -x -q"})}}
    history = [
        item({"role": "user", "content": [{"type": "text", "text": "Why are the tests slow?"}]}),
        item({"role": "assistant", "content": "Let me time them.", "toolCalls": [call],
              "usage": {"promptTokens": 1800, "completionTokens": 60}},
             toolCallStates=[{"toolCallId": "call_9", "toolCall": call,
                              "status": "done" if approved else "generated",
                              "parsedArgs": {"command": "pytest -x -q"},
                              "output": [{"name": "Terminal", "description": "",
                                          "content": "12 passed in 41.2s"}] if approved else []}],
             promptLogs=[{"modelTitle": "Claude 4.5 Sonnet", "modelProvider": "anthropic",
                          "prompt": "…", "completion": "…"}]),
    ]
    if approved:
        history += [
            item({"role": "tool", "content": "12 passed in 41.2s", "toolCallId": "call_9"}),
            item({"role": "assistant", "content": "The fixtures rebuild the database per test.",
                  "usage": {"promptTokens": 1900, "completionTokens": 80}}),
        ]
    return history


def continue_dir(root: Path, sessions: dict[str, dict[str, Any]]) -> Path:
    folder = root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    index = [{"sessionId": sid, "title": s.get("title", ""), "dateCreated": str(T0),
              "workspaceDirectory": s.get("workspaceDirectory", "")}
             for sid, s in sessions.items()]
    (folder / "sessions.json").write_text(json.dumps(index))
    for sid, session in sessions.items():
        (folder / f"{sid}.json").write_text(json.dumps(session))
    return root
