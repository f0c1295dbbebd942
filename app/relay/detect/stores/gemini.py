"""Gemini CLI chats: ``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`` (and ``.json``).

What a chat file records (0.61.0, ``tests/fixtures/gemini/NOTES.md``, "Session files"):

* line 1, repeated on each resume: ``{"sessionId", "projectHash", "startTime", "lastUpdated"}``;
* ``type:"user"`` records: the prompt (text parts), or tool responses (``functionResponse``
  parts); the first one, written only inside a ``$set``, is the CLI's ``<session_context>``
  (the working folder is read from it when ``projects.json`` / ``.project_root`` do not say);
* ``type:"gemini"`` records: the reply text, ``thoughts``, ``model`` and ``toolCalls`` with
  their inline ``result`` and ``status`` — each written twice under one ``id`` (the second adds
  the calls), so records are merged by id;
* ``type:"error"`` records, if a version writes them (not seen: unverified);
* ``{"$set": …}`` patches; ``$set.messages`` replaces the history — after an API failure it
  rolls the failed prompt back.

**The failure itself is not in the chat file**: a rate limit, quota or overload leaves the prompt
unanswered (or rolled back). Gemini writes the error to
``$TMPDIR/gemini-client-error-<where>-<time>.json`` (``error.message`` and the request's
``context``); the store looks there for a report written after the unanswered prompt whose context
holds that prompt, and classifies its message. Without one, a rolled-back prompt is a failure of
unknown cause and an unanswered one is an open turn.

Not recorded: the approval mode, skills and MCP servers (only tool names), an explicit turn end
(a reply with text and no tool calls ends the turn). Older releases wrote one JSON document
(``sessionId``, ``messages``) rewritten in place: read whole (unverified beyond the wallet's
reader).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.agent_homes import GeminiHome
from relay.core.events import AgentError, AssistantText, SessionStarted, ToolCall, ToolResult, TurnCompleted
from relay.core.jsonvalue import as_dict, as_list, as_text
from relay.detect.stores.base import StoreItem, StoreListing, read_regular
from relay.detect.stores.transcript import (
    LINE_LIMIT,
    MAX_OUTPUT,
    MAX_PROMPT,
    MAX_TEXT,
    TranscriptRead,
    add_item,
    add_unique,
    at_ms,
    clip,
    clip_value,
    failure_events,
    head,
    is_dir,
    mtime_of,
    records,
    scan,
)
from relay.wallet.transcripts import iso_ms

RUNTIME = "gemini"
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]+)"')
#: a shell call's exit status, only in its output text (not in stream-json's tool_result)
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)$", re.MULTILINE)
_REPORT_TIME = re.compile(r"-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3})Z\.json$")
_WORKSPACE = re.compile(r"Workspace Directories:\*\*\s*\n\s*-\s*(\S.*)|"
                        r"working in the directory:?\s*(\S.*)")
#: how long after the unanswered prompt an error report may have been written (retries)
_REPORT_WINDOW_MS = 30 * 60 * 1000
_MAX_REPORT = 16 * 1024 * 1024


class GeminiStore:
    """Gemini CLI's chats under one ``~/.gemini`` (or ``$GEMINI_CLI_HOME``)."""

    runtime = RUNTIME

    def __init__(self, *, line_limit: int = LINE_LIMIT,
                 error_report_dirs: Sequence[Path] | None = None) -> None:
        """
        Args:
            line_limit: Longer lines are skipped and counted.
            error_report_dirs: Where Gemini CLI writes ``gemini-client-error-*.json``
                (its ``$TMPDIR``; default: this machine's temporary folder).
        """
        self._limit = line_limit
        self._reports = (list(error_report_dirs) if error_report_dirs is not None
                         else [Path(tempfile.gettempdir())])

    def list(self, root: Path, entry: str) -> StoreListing:
        """Every chat; its session id is read from the file's first 64 KiB."""
        listing = StoreListing()
        for project in scan(GeminiHome.found_in(root).tmp, listing):
            if not is_dir(project):
                continue
            for item in scan(Path(project.path) / "chats", listing):
                if item.name.startswith("session-") and item.name.endswith((".jsonl", ".json")):
                    path = Path(item.path)
                    match = _SESSION_ID.search(head(path))
                    session = match.group(1).decode("utf-8", "replace") if match else path.stem
                    add_item(listing, RUNTIME, session, entry, path)
        return listing

    def read(self, item: StoreItem) -> TranscriptRead:
        reading = _Reading(item)
        for obj in _objects(item.path, reading.read.problems, self._limit):
            reading.record(obj)
        reading.settle(self._report_for(reading))
        return reading.finish(_project_cwd(item.path))

    def _report_for(self, reading: _Reading) -> tuple[str, datetime] | None:
        """The error report of the session's unanswered last prompt: (message, when)."""
        prompt = reading.unanswered()
        if prompt is None:
            return None
        text, since = prompt
        for when, path in sorted(_reports(self._reports)):
            if since - 1000 <= when <= since + _REPORT_WINDOW_MS:
                message = _report_message(path, text)
                if message is not None:
                    return message, at_ms(when)
        return None


@dataclass(slots=True)
class _Seen:
    """What was already turned into events of one gemini record (written twice)."""

    text: bool = False
    thoughts: int = 0
    calls: set[str] = field(default_factory=set)


class _Reading:
    """The state of reading one chat, record by record."""

    def __init__(self, item: StoreItem) -> None:
        self.read = TranscriptRead(item=item)
        self._at = mtime_of(item)
        self._open = False
        self._seen: dict[str, _Seen] = {}
        self._results: set[str] = set()
        self._ending: tuple[str, str | None, str] | None = None  # id, model, text
        #: the last prompt: id, text, when (ms)
        self._prompt: tuple[str | None, str, int] | None = None
        self._answered = False
        self._rolled_back = False
        self._context_cwd: str | None = None
        self._started: datetime | None = None

    def record(self, obj: dict[str, Any]) -> None:
        self._clock(obj.get("timestamp") or obj.get("startTime"))
        patch = obj.get("$set")
        if isinstance(patch, dict):
            self._patch(patch)
            return
        kind, rid = obj.get("type"), as_text(obj.get("id"))
        if self._ending is not None and kind in ("user", "gemini", "error") \
                and rid != self._ending[0]:
            self._end_turn()
        if kind == "user":
            self._user(rid, obj.get("content"))
        elif kind == "gemini":
            self._gemini(rid or f"anon{len(self._seen)}", obj)
        elif kind == "error":
            text = _text_of(obj.get("content")) or "Gemini reported an error."
            self.read.events.extend(failure_events(RUNTIME, text, at=self._at))
            self._open, self._answered = False, True

    def _clock(self, value: Any) -> None:
        ms = iso_ms(value)
        if ms is None:
            return
        self._at = at_ms(ms)
        self._started = self._started or self._at
        self.read.started_ms = self.read.started_ms or ms
        self.read.last_activity_ms = max(ms, self.read.last_activity_ms or ms)

    def _patch(self, patch: dict[str, Any]) -> None:
        self._clock(patch.get("lastUpdated"))
        messages = patch.get("messages")
        if not isinstance(messages, list):
            return
        ids = {as_text(m.get("id")) for m in messages if isinstance(m, dict)}
        for message in messages:
            if isinstance(message, dict) and message.get("type") == "user":
                self._context(_text_of(message.get("content")) or "")
        if self._prompt is not None and not self._answered and self._prompt[0] not in ids:
            self._rolled_back = True

    def _context(self, text: str) -> None:
        if text.startswith("<session_context>") and self._context_cwd is None:
            match = _WORKSPACE.search(text)
            if match:
                self._context_cwd = (match.group(1) or match.group(2)).strip()

    # -- records -------------------------------------------------------------------------------

    def _user(self, rid: str | None, content: Any) -> None:
        responses = [as_dict(p.get("functionResponse")) for p in as_list(content)
                     if isinstance(p, dict) and "functionResponse" in p]
        for response in responses:
            call_id = as_text(response.get("id"))
            if call_id and call_id not in self._results:
                self._result(call_id, response, None)
        if responses:
            self._open = True
            return
        text = (_text_of(content) or "").strip()
        if not text or text.startswith("<session_context>"):
            self._context(text)
            return
        self._open, self._answered, self._rolled_back = True, False, False
        self._prompt = (rid, text, int(self._at.timestamp() * 1000))
        if not self.read.initial_prompt:
            self.read.initial_prompt = clip(text, MAX_PROMPT)

    def _gemini(self, rid: str, rec: dict[str, Any]) -> None:
        seen = self._seen.setdefault(rid, _Seen())
        model = as_text(rec.get("model"))
        add_unique(self.read.models, model)
        self._answered = True
        thoughts = [t for t in as_list(rec.get("thoughts")) if isinstance(t, dict)]
        for thought in thoughts[seen.thoughts:]:
            words = ": ".join(w for w in (as_text(thought.get("subject")),
                                          as_text(thought.get("description"))) if w)
            if words:
                self._emit_text(words, reasoning=True)
        seen.thoughts = max(seen.thoughts, len(thoughts))
        text = (_text_of(rec.get("content")) or "").strip()
        if text and not seen.text:
            seen.text = True
            self._emit_text(text, reasoning=False, message_id=rid)
        calls = [c for c in as_list(rec.get("toolCalls")) if isinstance(c, dict)]
        for call in calls:
            self._call(call, seen)
        if calls:
            self._open, self._ending = True, None
        elif text:
            self._open, self._ending = False, (rid, model, text)
        else:  # written before its text or calls: the reply goes on
            self._open = True

    def _emit_text(self, text: str, *, reasoning: bool, message_id: str | None = None) -> None:
        self.read.events.append(AssistantText(runtime=RUNTIME, ts=self._at, replay=True,
                                              text=clip(text, MAX_TEXT), reasoning=reasoning,
                                              message_id=message_id))

    def _call(self, call: dict[str, Any], seen: _Seen) -> None:
        call_id = as_text(call.get("id"))
        if call_id is None or call_id in seen.calls:
            return
        seen.calls.add(call_id)
        self.read.events.append(ToolCall(
            runtime=RUNTIME, ts=self._at, replay=True, call_id=call_id,
            name=as_text(call.get("name")) or "unknown", input=clip_value(as_dict(call.get("args")))))
        results = [as_dict(as_dict(r).get("functionResponse")) for r in as_list(call.get("result"))]
        if results or call.get("status") in ("success", "error", "cancelled"):
            self._result(call_id, results[0] if results else {}, as_text(call.get("status")))

    def _result(self, call_id: str, response: dict[str, Any], status: str | None) -> None:
        self._results.add(call_id)
        body = as_dict(response.get("response"))
        error = body.get("error")
        output = as_text(body.get("output")) or as_text(error) or ""
        failed = status in ("error", "cancelled") if status else (True if error else None)
        match = _EXIT_CODE.search(output[:2000])
        code = int(match.group(1)) if match else None
        if code is not None:
            failed = bool(failed) or code != 0
        self.read.events.append(ToolResult(runtime=RUNTIME, ts=self._at, replay=True,
                                           call_id=call_id, output=clip(output, MAX_OUTPUT),
                                           is_error=failed, exit_code=code))

    def _end_turn(self) -> None:
        if self._ending is not None:
            _, model, text = self._ending
            self._ending = None
            self.read.events.append(TurnCompleted(runtime=RUNTIME, ts=self._at, replay=True,
                                                  model=model, result_text=text))

    # -- the end -------------------------------------------------------------------------------

    def unanswered(self) -> tuple[str, int] | None:
        """(text, when) of the last prompt if it got no reply (or was rolled back)."""
        if self._prompt is None or self._answered:
            return None
        return self._prompt[1], self._prompt[2]

    def settle(self, report: tuple[str, datetime] | None) -> None:
        """Close an unanswered prompt with its failure, when one is known."""
        self._end_turn()
        if report is not None:
            self.read.events.extend(failure_events(RUNTIME, report[0], at=report[1]))
            self._open = False
        elif self._rolled_back:
            self.read.events.append(AgentError(
                runtime=RUNTIME, ts=self._at, replay=True, category="unknown",
                message="The last prompt failed and Gemini rolled it back "
                        "(the chat file records no reason)."))
            self._open = False

    def finish(self, project_cwd: str | None) -> TranscriptRead:
        read = self.read
        read.cwd = project_cwd or self._context_cwd
        read.open_turn = self._open
        if read.events or read.initial_prompt:
            read.events.insert(0, SessionStarted(
                runtime=RUNTIME, ts=self._started or self._at, replay=True,
                agent_session_id=read.item.agent_session_id,
                model=read.models[0] if read.models else None, cwd=read.cwd))
        return read


def _objects(path: Path, problems: list[str], limit: int) -> Iterator[dict[str, Any]]:
    """The records of a chat: JSONL lines, or an older whole document's header and messages."""
    if path.suffix == ".jsonl":
        yield from records(path, problems, limit)
        return
    try:
        if path.stat().st_size > limit:
            problems.append(f"{path.name} is over the size limit: skipped")
            return
        document = jsonvalue.loads(read_regular(path, limit), fast=True)
    except (OSError, ValueError) as exc:
        problems.append(f"cannot read {path.name}: {exc}")
        return
    document = as_dict(document)
    yield {k: v for k, v in document.items() if k != "messages"}
    yield from (m for m in as_list(document.get("messages")) if isinstance(m, dict))


def _text_of(content: Any) -> str | None:
    """A record's text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    parts = [as_text(p.get("text")) for p in as_list(content) if isinstance(p, dict)]
    text = "\n".join(p for p in parts if p)
    return text or None


def _project_cwd(chat: Path) -> str | None:
    """The working folder of a chat's project: ``projects.json``, else ``.project_root``."""
    project = chat.parent.parent
    try:
        projects = GeminiHome(project.parent.parent).projects_file
        table = as_dict(jsonvalue.loads(read_regular(projects, _MAX_REPORT), fast=True))
    except (OSError, ValueError):
        table = {}
    for cwd, name in as_dict(table.get("projects")).items():
        if name == project.name:
            return str(cwd)
    try:
        marker = read_regular(project / ".project_root", 64 * 1024).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return marker or None


def _reports(folders: Sequence[Path]) -> Iterator[tuple[int, Path]]:
    """(when in ms, path) of each Gemini error report in ``folders``."""
    for folder in folders:
        try:
            paths = list(folder.glob("gemini-client-error-*.json"))
        except OSError:
            continue
        for path in paths:
            match = _REPORT_TIME.search(path.name)
            if match:
                when = datetime.strptime(match.group(1) + "+0000", "%Y-%m-%dT%H-%M-%S-%f%z")
                yield int(when.timestamp() * 1000), path


def _report_message(path: Path, prompt: str) -> str | None:
    """The report's error message if its request carried ``prompt``."""
    try:
        if path.stat().st_size > _MAX_REPORT:
            return None
        report = as_dict(jsonvalue.loads(read_regular(path, _MAX_REPORT), fast=True))
    except (OSError, ValueError):
        return None
    texts = {(as_text(p.get("text")) or "").strip()
             for m in as_list(report.get("context")) if isinstance(m, dict) and m.get("role") == "user"
             for p in as_list(m.get("parts")) if isinstance(p, dict)}
    if prompt not in texts:
        return None
    return as_text(as_dict(report.get("error")).get("message"))


STORE = GeminiStore()
