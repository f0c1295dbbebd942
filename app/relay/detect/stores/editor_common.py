"""What the editor stores (Cline, VS Code chat, Cursor, Continue) share.

The editors' formats are read from their public sources, not from a live install, so every
value is taken defensively: the coercions here turn a value of the wrong type into ``None``
(or an empty container) instead of raising, and the readers say in ``problems`` what they had
to skip. Unknown keys are never an error.

* :class:`EditorRead` — a :class:`~relay.detect.stores.base.StoreRead` plus the first prompt
  the user typed (``initial_prompt``, as the CLI stores' reads carry it; the lift reads it).
  Prompts are not events: Relay's event model has none for them.
* :func:`shared_call` — the editors' own tool names for running a command, writing or editing
  a file and keeping a to-do list, mapped onto the names the intent lift reads (``shell``,
  ``write_file``, ``edit_file``, ``TodoWrite``), with the path under ``path``; every other
  tool keeps its own name.
* :func:`failure_events` — an API failure through :mod:`relay.core.signals`: a blocking
  :class:`~relay.core.events.LimitHit` for a usage limit, quota or rate limit, then the fatal
  :class:`~relay.core.events.AgentError`. A failure the agent retried past is a ``retry``
  :class:`~relay.core.events.Notice`, never an error (an error ends the turn).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from relay.core import jsonvalue, signals
from relay.core.events import AgentEvent, SessionEnded
from relay.core.jsonvalue import as_dict, as_int, as_str
from relay.core.signals import classify, named_by_format
from relay.detect.stores.base import StoreRead, read_regular

#: characters of the initial prompt kept
MAX_PROMPT = 8000
#: tool outputs and long inputs are clipped to this many characters
CLIP = 8000
#: a JSON file larger than this is not loaded (reported instead)
MAX_JSON_BYTES = 256 * 1024 * 1024


def clip(text: str, limit: int = CLIP) -> str:
    """``text`` cut to ``limit`` characters (a huge tool result stays readable)."""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def clip_input(value: Any) -> dict[str, Any]:
    """A tool input as a dict with its long strings clipped (non-dicts wrapped as ``value``)."""
    if not isinstance(value, dict):
        return {} if value is None else {"value": _clip_any(value)}
    return {str(k): _clip_any(v) for k, v in value.items()}


def _clip_any(value: Any) -> Any:
    if isinstance(value, str):
        return clip(value, 2000)
    if isinstance(value, dict):
        return {str(k): _clip_any(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_any(v) for v in value[:200]]
    return value


def ms_to_dt(ms: int | float | None) -> datetime | None:
    """A Unix time in milliseconds as an aware UTC datetime (None when absent or absurd)."""
    if ms is None or isinstance(ms, bool):
        return None
    try:
        return datetime.fromtimestamp(float(ms) / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def iso_to_ms(value: Any) -> int | None:
    """Milliseconds from an ISO-8601 string, a number of milliseconds or a string of its
    digits (Continue's ``dateCreated`` is ``String(Date.now())``)."""
    number = as_int(value)
    if number is not None:
        return number
    text = (as_str(value) or "").strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


@dataclass(slots=True)
class EditorRead(StoreRead):
    """A session read from an editor's store."""

    #: the first prompt the user typed, clipped
    initial_prompt: str = ""

    def prompt(self, text: str) -> None:
        """A prompt the user typed: the first one is the session's initial prompt."""
        if text.strip() and not self.initial_prompt:
            self.initial_prompt = clip(text.strip(), MAX_PROMPT)


def interrupted(runtime: str, ts: datetime) -> SessionEnded:
    """The user stopped the turn (as the CLI stores say it)."""
    return SessionEnded(runtime=runtime, ts=ts, replay=True, outcome="interrupted",
                        reason="interrupted by the user")


#: the editors' tools that run a command / create a file / edit a file / keep a to-do list
SHELL_TOOLS = frozenset({
    "execute_command",                                            # Cline
    "run_in_terminal", "runInTerminal", "copilot_runInTerminal",  # VS Code chat (Copilot)
    "run_terminal_cmd",                                           # Cursor
    "run_terminal_command", "builtin_run_terminal_command"})      # Continue
CREATE_TOOLS = frozenset({
    "write_to_file", "newFileCreated", "copilot_createFile", "create_file", "create_new_file",
    "builtin_create_new_file", "write"})
EDIT_TOOLS = frozenset({
    "replace_in_file", "editedExistingFile", "copilot_replaceString", "replace_string_in_file",
    "copilot_multiReplaceString", "multi_replace_string_in_file", "copilot_insertEdit",
    "insert_edit_into_file", "copilot_applyPatch", "edit_file", "edit_file_v2",
    "search_replace", "MultiEdit", "edit_existing_file", "builtin_edit_existing_file",
    "single_find_and_replace", "multi_edit", "apply_diff"})
TODO_TOOLS = frozenset({"manage_todo_list", "todo_write", "update_todo_list", "todoList"})
_PATH_KEYS = ("path", "file_path", "filePath", "filepath", "target_file", "targetFile",
              "relative_workspace_path", "filename", "uri")


def shared_call(native: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(name, input)`` of a tool call, in the words the intent lift reads.

    A command becomes ``shell`` with ``command``; a new file ``write_file`` and an edit
    ``edit_file``, each with ``path``; a to-do list ``TodoWrite`` with ``todos`` of
    ``{content, status}``. The editor's other arguments are kept; other tools are unchanged.
    """
    if native in SHELL_TOOLS:
        command = arguments.get("command", arguments.get("cmd", ""))
        return "shell", {**arguments, "command": command}
    if native in CREATE_TOOLS or native in EDIT_TOOLS:
        path = next((p for k in _PATH_KEYS if isinstance(p := arguments.get(k), str) and p), "")
        name = "write_file" if native in CREATE_TOOLS else "edit_file"
        return name, {**arguments, "path": uri_to_path(path) or path} if path else arguments
    if native in TODO_TOOLS and isinstance(arguments.get("todos"), list):
        return "TodoWrite", {"todos": todo_entries(arguments["todos"])}
    return native, arguments


def todo_entries(raw: list[Any]) -> list[dict[str, str]]:
    """A to-do list as ``{content, status}`` entries (Claude's words for the status)."""
    entries = []
    for item in raw:
        entry = as_dict(item)
        text = next((t for k in ("content", "title", "text", "description")
                     if isinstance(t := entry.get(k), str) and t), "")
        if text:
            entries.append({"content": text, "status": todo_status(entry.get("status"))})
    return entries


def failure_events(message: str, *, runtime: str, ts: datetime, http_status: int | None = None,
                   structured: Mapping[str, Any] | None = None, fatal: bool = True,
                   forced: str | None = None) -> list[AgentEvent]:
    """An API failure as events: a :class:`LimitHit` when it is a limit, then the error.

    The wording, status and fields are classified by :mod:`relay.core.signals` (the same
    rules as every runtime's). ``forced`` (``rate_limit`` / ``quota``) is a flag the editor
    itself set on the error (Copilot's ``isRateLimited`` / ``isQuotaExceeded``).
    """
    signal = classify(message, http_status=http_status, structured=structured,
                      provider=runtime, now=ts, tz=None)
    if forced == "quota":
        signal = named_by_format(signal, "quota")
    elif forced == "rate_limit":  # a worded quota or overload stays what it is
        signal = named_by_format(signal, "rate_limit", over=False)
    return signals.failure_events(signal, message, runtime=runtime, fatal=fatal, ts=ts, replay=True)


def todos_from_checklist(text: str) -> list[dict[str, str]]:
    """``- [x] done`` / ``- [ ] to do`` lines as todos (``content``, ``status``)."""
    todos: list[dict[str, str]] = []
    for line in text.splitlines():
        item = line.strip()
        if not item.startswith(("- [", "* [")) or len(item) < 5 or item[4] != "]":
            continue
        mark = item[3].lower()
        status = "completed" if mark == "x" else "in_progress" if mark in "~-/" else "pending"
        if item[5:].strip():
            todos.append({"content": item[5:].strip(), "status": status})
    return todos


def todo_status(value: Any) -> str:
    """An editor's todo status in Claude's words: ``pending``, ``in_progress``, ``completed``."""
    text = (as_str(value) or "").lower().replace("-", "_").replace(" ", "_")
    if text in ("completed", "complete", "done", "finished"):
        return "completed"
    if text in ("in_progress", "inprogress", "active", "running", "started"):
        return "in_progress"
    return "pending"


def read_json_file(path: Path, problems: list[str], what: str) -> Any | None:
    """A JSON file's value, or None with the reason in ``problems`` (never raises)."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            problems.append(f"{what}: {path} is {size} bytes, more than Relay reads")
            return None
        raw = read_regular(path, MAX_JSON_BYTES)
    except FileNotFoundError:
        problems.append(f"{what}: {path} is missing")
        return None
    except OSError as exc:
        problems.append(f"{what}: {path} could not be read ({exc.strerror or exc})")
        return None
    return parse_json(raw, problems, f"{what} ({path})")


def parse_json(raw: bytes | str, problems: list[str], where: str) -> Any | None:
    """Decoded JSON, or None with a problem saying whether it was empty, cut short or corrupt."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})")
            return None
    if not raw.strip():
        problems.append(f"{where}: empty")
        return None
    try:
        return jsonvalue.loads(raw)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(raw.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        reason = "cut short (still being written?)" if cut else "corrupt"
        problems.append(f"{where}: JSON {reason} at line {exc.lineno} column {exc.colno}")
        return None
    except RecursionError:
        problems.append(f"{where}: JSON nested too deeply")
        return None


def uri_to_path(uri: str) -> str | None:
    """A local folder from a ``file://`` URI (VS Code's workspace.json); None for remote ones."""
    if not uri:
        return None
    if "://" not in uri:
        return uri
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if len(path) >= 3 and path[0] == "/" and path[2] == ":":  # /c:/Users → c:/Users (Windows)
        path = path[1:]
    if parsed.netloc:  # a UNC share: file://server/share/x
        path = f"//{parsed.netloc}{path}"
    return path or None


def text_of(value: Any) -> str:
    """Plain text of a string, a ``{"value": …}`` markdown string or a list of text parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("value", "text", "content"):
            if isinstance(value.get(key), str):
                return str(value[key])
        return ""
    if isinstance(value, list):
        return "".join(text_of(part) for part in value)
    return ""
