"""The previous agent's own intent, lifted from its stored events.

Two things a continuation contract cannot get from git:

* **its plan** — the to-do list the agent kept for itself. Runtimes keep it differently:

  - Claude Code ``TodoWrite`` (older versions): ``input.todos = [{content, status,
    activeForm}]``, each call the whole list, so the last call wins;
  - Claude Code ``TaskCreate`` / ``TaskUpdate`` / ``TaskList`` (2.1.197, the recorded
    version): one task per call; the id is only in the result ("Task #1 created
    successfully: …"), statuses are pending / in_progress / completed / deleted, and a
    ``TaskList`` result ("#1 [in_progress] Write tests") shows the whole board;
  - Codex ``update_plan`` (``input.plan = [{step, status}]``) where a parser reports it as
    a tool call, and ``codex exec --json`` ``todo_list`` items, which the codex parser
    reports as a :class:`~relay.core.events.Notice` reading ``Plan:`` then one
    ``[x] text`` / ``[ ] text`` line per item (done or not: that stream has no
    in-progress state).

  Whichever of them came last wins. A call whose result is an error changed nothing.

* **its in-flight code** — a file write or edit it started but that never got a result
  (the agent was cut off mid-call), unless a later write to the same file succeeded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal

from relay.core.events import AgentEvent, ToolCall
from relay.core.present import clip
from relay.sessions.contract import InFlightCode

#: Claude's, the demo's and the HTTP runtimes' tools, Codex's items, Pi's tools (write,
#: edit) and ACP's tool kind (edit)
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "edit_file",
                         "file_change", "apply_patch", "write", "edit"})
IN_PROGRESS = "(in progress) "
MAX_PLAN = 50
MAX_IN_FLIGHT = 5
SNIPPET_CHARS = 2000
_ITEM_CHARS = 300

Status = Literal["completed", "in_progress", "pending"]
_STATUSES: dict[str, Status] = {"completed": "completed", "in_progress": "in_progress",
                                "pending": "pending"}


@dataclass(frozen=True)
class PlanItem:
    """One entry of the agent's to-do list."""

    text: str
    status: Status


# --- the plan ------------------------------------------------------------------------------

def plan_lists(events: Sequence[AgentEvent]) -> tuple[list[str], list[str]]:
    """``(plan, tasks_remaining)`` for the contract from the agent's last to-do list.

    ``plan`` is the whole list in the agent's order; ``tasks_remaining`` the unfinished
    entries, in-progress ones first, written exactly as in ``plan`` (so the brief can tick
    off the rest). In-progress entries start with :data:`IN_PROGRESS`.
    """
    items = _capped(latest_plan(events) or [])
    label = {id(item): _label(item) for item in items}
    remaining = ([label[id(i)] for i in items if i.status == "in_progress"]
                 + [label[id(i)] for i in items if i.status == "pending"])
    return [label[id(i)] for i in items], remaining


def latest_plan(events: Sequence[AgentEvent]) -> list[PlanItem] | None:
    """The agent's most recent to-do list, or ``None`` if it never kept one."""
    results = {e.call_id: e for e in events if e.kind == "tool_result"}
    board = _TaskBoard()
    latest: list[PlanItem] | None = None
    for event in events:
        found: list[PlanItem] | None = None
        if event.kind == "tool_call":
            result = results.get(event.call_id)
            if result is not None and result.is_error is True:
                continue
            found = _from_call(event, result.output if result else None, board)
        elif event.kind == "notice":
            found = _codex_todo_list(event.message)
        if found is not None:
            latest = found
    return latest


def _from_call(call: ToolCall, output: str | None, board: _TaskBoard) -> list[PlanItem] | None:
    if call.name == "TodoWrite":
        return _entries(call.input.get("todos"), "content")
    if call.name == "update_plan":
        return _entries(call.input.get("plan"), "step")
    if call.name == "TaskCreate":
        board.create(call.input, output)
    elif call.name == "TaskUpdate":
        board.update(call.input)
    elif call.name == "TaskList" and output:
        board.sync(output)
    else:
        return None
    return board.items()


def _entries(raw: Any, text_key: str) -> list[PlanItem] | None:
    if not isinstance(raw, list):
        return None
    items = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            continue
        text, status = _text(entry.get(text_key)), _STATUSES.get(str(entry.get("status")))
        if text and status:
            items.append(PlanItem(text, status))
    return items


_CREATED = re.compile(r"\bTask #(\S+?) created\b")
_LISTED = re.compile(r"#(\S+) \[(\w+)\] (.+)")


class _TaskBoard:
    """Claude Code's task list, replayed from TaskCreate / TaskUpdate / TaskList calls."""

    def __init__(self) -> None:
        self._tasks: dict[str, PlanItem] = {}

    def items(self) -> list[PlanItem]:
        return list(self._tasks.values())

    def create(self, tool_input: Mapping[str, Any], output: str | None) -> None:
        subject = _text(tool_input.get("subject"))
        if not subject:
            return
        match = _CREATED.search(output or "")
        task_id = match.group(1) if match else self._next_id()
        self._tasks[task_id] = PlanItem(subject, "pending")

    def update(self, tool_input: Mapping[str, Any]) -> None:
        task_id = str(tool_input.get("taskId") or "")
        current = self._tasks.get(task_id)
        status = str(tool_input.get("status") or "")
        if status == "deleted":
            self._tasks.pop(task_id, None)
            return
        subject = _text(tool_input.get("subject")) or (current.text if current else "")
        if subject:  # a task from before these events is known only once it is named
            self._tasks[task_id] = PlanItem(
                subject, _STATUSES.get(status, current.status if current else "pending"))

    def sync(self, listing: str) -> None:
        for line in listing.splitlines():
            match = _LISTED.fullmatch(line.strip())
            status = _STATUSES.get(match.group(2)) if match else None
            if match is None or status is None:
                continue
            known = self._tasks.get(match.group(1))
            self._tasks[match.group(1)] = PlanItem(known.text if known else match.group(3), status)

    def _next_id(self) -> str:
        numbers = [int(k) for k in self._tasks if k.isdigit()]
        return str(max(numbers, default=0) + 1)


_TODO_LINE = re.compile(r"\[([ x])\] (.*)")


def _codex_todo_list(message: str) -> list[PlanItem] | None:
    """A codex ``todo_list`` as the codex parser words it (``Plan:`` + ``[x] text`` lines)."""
    head, _, body = message.partition("\n")
    if head != "Plan:":
        return None
    items: list[PlanItem] = []
    for line in body.splitlines():
        match = _TODO_LINE.fullmatch(line)
        if match:
            items.append(PlanItem(match.group(2).strip(),
                                  "completed" if match.group(1) == "x" else "pending"))
        elif items:  # an item text that itself had a line break
            items[-1] = PlanItem(f"{items[-1].text} {line.strip()}".strip(), items[-1].status)
        elif line.strip():
            return None
    return [item for item in items if item.text]


def _label(item: PlanItem) -> str:
    text = clip(" ".join(item.text.split()), _ITEM_CHARS)
    return IN_PROGRESS + text if item.status == "in_progress" else text


def _capped(items: list[PlanItem]) -> list[PlanItem]:
    """At most :data:`MAX_PLAN` items, dropping the oldest finished ones first."""
    excess = len(items) - MAX_PLAN
    if excess <= 0:
        return items
    done = {i for i, item in enumerate(items) if item.status == "completed"}
    dropped = set(sorted(done)[:excess])
    kept = [item for i, item in enumerate(items) if i not in dropped]
    return kept[-MAX_PLAN:]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


# --- in-flight code ------------------------------------------------------------------------

def in_flight_code(events: Sequence[AgentEvent], worktree: Path) -> list[InFlightCode]:
    """Writes the agent started but never finished (no result), newest last.

    A later successful write to the same file supersedes an unfinished one.
    """
    results = {e.call_id: e for e in events if e.kind == "tool_result"}
    open_writes: dict[str, InFlightCode] = {}
    for event in events:
        if event.kind != "tool_call" or event.name not in WRITE_TOOLS:
            continue
        result = results.get(event.call_id)
        for path, snippet in written(event, worktree):
            if result is None:
                open_writes.pop(path, None)  # keep the newest last
                open_writes[path] = InFlightCode(path=path, snippet=_clipped(snippet))
            elif result.is_error is not True:
                open_writes.pop(path, None)
    return list(open_writes.values())[-MAX_IN_FLIGHT:]


def written(call: ToolCall, worktree: Path) -> list[tuple[str, str]]:
    """``(path, text written)`` for each file a write/edit tool call touches."""
    if call.name == "apply_patch":
        return _patch_sections(_patch_text(call.input), worktree)
    if call.name == "file_change":
        return _file_changes(call.input.get("changes"), worktree)
    path = next((_text(call.input.get(k)) for k in ("file_path", "path", "notebook_path", "filename")
                 if _text(call.input.get(k))), "")
    if not path:
        return []
    edits = call.input.get("edits")
    if isinstance(edits, list):
        snippet = "\n⋮\n".join(str(e.get("new_string", "")) for e in edits if isinstance(e, Mapping))
    else:
        snippet = next((v for k in ("content", "new_string", "new_source", "text")
                        if isinstance(v := call.input.get(k), str)), "")
    return [(_relative(path, worktree), snippet)]


def _clipped(snippet: str) -> str:
    """The snippet as written (whitespace kept), cut at :data:`SNIPPET_CHARS`."""
    return snippet if len(snippet) <= SNIPPET_CHARS else snippet[:SNIPPET_CHARS - 1] + "…"


_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


def _patch_text(tool_input: Mapping[str, Any]) -> str:
    for key in ("input", "patch"):
        if isinstance(value := tool_input.get(key), str):
            return value
    return ""


def _patch_sections(patch: str, worktree: Path) -> list[tuple[str, str]]:
    """An apply_patch text split per file (``*** Update File: path`` headers)."""
    heads = list(_PATCH_FILE.finditer(patch))
    if not heads:
        return [("(apply_patch)", patch)] if patch.strip() else []
    ends = [h.start() for h in heads[1:]] + [len(patch)]
    return [(_relative(h.group(1).strip(), worktree), patch[h.start():end].rstrip())
            for h, end in zip(heads, ends, strict=True)]


def _file_changes(changes: Any, worktree: Path) -> list[tuple[str, str]]:
    """Codex ``file_change``: ``[{path, kind}]`` in ``exec --json``, ``{path: {type, content}}``
    in rollouts. The former carries no content."""
    if isinstance(changes, Mapping):
        return [(_relative(str(path), worktree),
                 str(change.get("content") or change.get("unified_diff") or "")
                 if isinstance(change, Mapping) else "")
                for path, change in changes.items() if str(path)]
    out = []
    for change in changes if isinstance(changes, list) else []:
        if isinstance(change, Mapping) and _text(change.get("path")):
            kind = _text(change.get("kind")) or "change"
            out.append((_relative(change["path"].strip(), worktree),
                        f"({kind}; the runtime did not report the content)"))
    return out


def _relative(path: str, worktree: Path) -> str:
    """``path`` relative to the worktree when it lies inside it, with ``/``."""
    candidate = PurePath(path)
    if candidate.is_absolute():
        for root in (worktree, worktree.resolve()):
            if candidate.is_relative_to(root):
                return candidate.relative_to(root).as_posix() or path
    return path
