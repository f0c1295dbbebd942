"""Claude Code transcripts: ``<config>/projects/<encoded cwd>/<session id>.jsonl``.

What a transcript records (2.1.197, ``tests/fixtures/claude/NOTES.md`` section 9):

* on every ``user`` / ``assistant`` / ``attachment`` line: ``timestamp``, ``sessionId``, ``cwd``,
  ``gitBranch``, ``version``; user lines add ``permissionMode``;
* ``assistant`` lines: one content block each (text, thinking, tool_use) with the reply's
  ``model`` and ``stop_reason`` — the same shape as stream-json's assistant lines, so they go
  through :class:`~relay.runtimes.claude_stream.ClaudeStreamParser`;
* ``user`` lines: the prompt (a string or text blocks), or tool_result blocks (parser again);
  ``[Request interrupted by user…]`` when the user (or a signal) stopped the turn;
* API errors: assistant lines with ``model:"<synthetic>"``, ``isApiErrorMessage``, ``error``,
  ``apiErrorStatus`` and the CLI's own words ("You've hit your session limit · resets 12:05pm
  (UTC)"), classified by :mod:`relay.core.signals` at the time the line was written;
* ``attachment`` lines: ``skill_listing`` (the skills loaded into the session),
  ``max_turns_reached``, ``budget_usd``, ``plan_mode``, ``agent_listing_delta``;
* ``queue-operation``, ``last-prompt``, ``mode`` lines (only their times are used).

Not recorded: the MCP servers (only the ``mcp__server__tool`` names of calls made), the tool
list and the init data (stream output only), costs, an explicit turn end (a reply that stops
with ``end_turn`` / ``stop_sequence`` / ``max_tokens``, or a text reply with no stop reason,
ends the turn), and the process: Claude 2.1.x's ``~/.claude/sessions/<pid>.json`` is the
process scanner's business.

Subagents (``<session>/subagents/agent-*.jsonl``; ``agent-*.jsonl`` beside the sessions in 1.x)
belong to their parent session and are never listed; sidechain lines are skipped.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from relay.core.agent_homes import ClaudeHome
from relay.core.events import AgentError, AgentEvent, Notice, SessionEnded, SessionStarted, TurnCompleted
from relay.core.jsonvalue import as_dict, as_int, as_list, as_text
from relay.detect.stores.base import StoreItem, StoreListing
from relay.detect.stores.transcript import (
    HEAD_BYTES,
    LINE_LIMIT,
    MAX_OUTPUT,
    MAX_PROMPT,
    MAX_TEXT,
    TAIL_BYTES,
    TranscriptRead,
    add_item,
    add_unique,
    at_ms,
    clip,
    clip_value,
    failure_events,
    head_and_tail,
    is_dir,
    mtime_of,
    records,
    restamp,
    scan,
    skill_names,
)
from relay.runtimes.claude_stream import SYNTHETIC_MODEL, ClaudeStreamParser
from relay.wallet.transcripts import iso_ms

RUNTIME = "claude"
_TURN_ENDS = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal"})
_INTERRUPTED = "[Request interrupted by user"
#: user lines that are the CLI's own (slash commands and their output), not prompts
_NOT_PROMPTS = ("<command-", "<local-command-", "Caveat: ")


class ClaudeStore:
    """Claude Code's sessions under one configuration folder (``CLAUDE_CONFIG_DIR``)."""

    runtime = RUNTIME

    def __init__(self, *, line_limit: int = LINE_LIMIT, tz: tzinfo | None = None) -> None:
        """
        Args:
            line_limit: Longer lines are skipped and counted.
            tz: The zone Claude Code formats reset times in when its text names none
                (``None``: this machine's).
        """
        self._limit = line_limit
        self._tz = tz

    def list(self, root: Path, entry: str) -> StoreListing:
        listing = StoreListing()
        for project in scan(ClaudeHome(root).projects, listing):
            if not is_dir(project):
                continue
            for item in scan(Path(project.path), listing):
                name = item.name
                if name.endswith(".jsonl") and not name.startswith("agent-") and not is_dir(item):
                    add_item(listing, RUNTIME, name.removesuffix(".jsonl"), entry, Path(item.path))
        return listing

    def read(self, item: StoreItem) -> TranscriptRead:
        reading = _Reading(item, self._tz)
        for obj in records(item.path, reading.read.problems, self._limit):
            reading.line(obj)
        return reading.finish()

    def summary(self, item: StoreItem) -> TranscriptRead:
        """The head (to the first prompt) and the tail (the last turn) of the transcript."""
        if item.size <= HEAD_BYTES + TAIL_BYTES:
            return self.read(item)
        reading = _Reading(item, self._tz)
        whole = head_and_tail(item, reading.read.problems, self._limit, reading.line,
                              reading.known, reading.gap)
        read = reading.finish()
        read.whole = whole
        return read


class _Reading:
    """The state of reading one transcript, line by line."""

    def __init__(self, item: StoreItem, tz: tzinfo | None) -> None:
        self.read = TranscriptRead(item=item)
        self._tz = tz
        self._parser = ClaudeStreamParser(tz=tz)
        self._at = mtime_of(item)
        self._open = False
        #: a reply that ended the turn: (message id, model, its text) — the TurnCompleted is
        #: written once every block line of that reply has been read
        self._ending: tuple[str | None, str | None, str | None] | None = None
        self._meta: dict[str, str] = {}
        self._started: datetime | None = None

    # -- dispatch ------------------------------------------------------------------------------

    def line(self, obj: dict[str, Any]) -> None:
        self._clock(obj)
        if obj.get("isSidechain") is True:
            return
        kind = obj.get("type")
        message = as_dict(obj.get("message"))
        if self._ending is not None and not (
                kind == "assistant" and as_text(message.get("id")) == self._ending[0]):
            self._end_turn()
        if kind == "user":
            self._user(obj, message)
        elif kind == "assistant":
            self._assistant(obj, message)
        elif kind == "attachment":
            self._attachment(as_dict(obj.get("attachment")))
        elif kind == "system" and obj.get("subtype") == "api_error":
            self._emit([Notice(runtime=RUNTIME, category="retry", message=_retry_text(obj))])

    def known(self) -> bool:
        """What a summary needs from the head is read: the first prompt and the cwd."""
        return bool(self.read.initial_prompt) and "cwd" in self._meta

    def gap(self) -> None:
        """Lines are skipped here: the events so far (the first turn) are dropped and the
        turn is read afresh — a call whose result was skipped is not left open."""
        self.read.events.clear()
        self._parser = ClaudeStreamParser(tz=self._tz)
        self._open, self._ending = False, None

    def _clock(self, obj: dict[str, Any]) -> None:
        ms = iso_ms(obj.get("timestamp"))
        if ms is not None:
            self._at = at_ms(ms)
            self._started = self._started or self._at
            if self.read.started_ms is None:
                self.read.started_ms = ms
            self.read.last_activity_ms = ms
        for key, field in (("cwd", "cwd"), ("gitBranch", "branch"), ("version", "version"),
                           ("permissionMode", "mode")):
            value = as_text(obj.get(key))
            if value and (field == "mode" or field not in self._meta):
                self._meta[field] = value

    def _emit(self, events: list[AgentEvent]) -> None:
        self.read.events.extend(restamp(events, self._at))

    # -- lines ---------------------------------------------------------------------------------

    def _user(self, obj: dict[str, Any], message: dict[str, Any]) -> None:
        results = self._parser.feed(obj)
        if results:
            self._emit([r.model_copy(update={"output": clip(r.output, MAX_OUTPUT)})
                        if r.kind == "tool_result" else r for r in results])
            self._open = True
            return
        text = _prompt_of(message.get("content"))
        if text is None:
            return
        if text.startswith(_INTERRUPTED):
            self._emit([SessionEnded(runtime=RUNTIME, outcome="interrupted",
                                     reason="interrupted by the user")])
            self._open = False
        elif not (obj.get("isMeta") or obj.get("isCompactSummary") or text.startswith(_NOT_PROMPTS)):
            self._open = True
            if not self.read.initial_prompt:
                self.read.initial_prompt = clip(text, MAX_PROMPT)

    def _assistant(self, obj: dict[str, Any], message: dict[str, Any]) -> None:
        if obj.get("isApiErrorMessage") is True or message.get("model") == SYNTHETIC_MODEL:
            self._api_error(obj, message)
            return
        events = [_clipped(e) for e in self._parser.feed(obj)]
        self._emit(events)
        model = as_text(message.get("model"))
        add_unique(self.read.models, model)
        kinds = {b.get("type") for b in as_list(message.get("content")) if isinstance(b, dict)}
        stop = message.get("stop_reason")
        if "tool_use" in kinds or stop == "tool_use":
            self._open, self._ending = True, None
        elif stop in _TURN_ENDS or (stop is None and "text" in kinds):
            texts = [e.text for e in events if e.kind == "assistant_text" and not e.reasoning]
            earlier = self._ending[2] if self._ending else None
            self._ending = (as_text(message.get("id")), model, texts[-1] if texts else earlier)
            self._open = False
        else:  # thinking without a stop reason: the reply goes on
            self._open = True

    def _api_error(self, obj: dict[str, Any], message: dict[str, Any]) -> None:
        blocks = [b for b in as_list(message.get("content")) if isinstance(b, dict)]
        text = "\n".join(as_text(b.get("text")) or "" for b in blocks).strip()
        error = as_text(obj.get("error"))
        self.read.events.extend(failure_events(
            RUNTIME, text or f"API error ({error or 'no details'})", at=self._at,
            http_status=as_int(obj.get("apiErrorStatus")),
            structured={"assistant_error": error}, tz=self._tz))
        self._open, self._ending = False, None

    def _attachment(self, attachment: dict[str, Any]) -> None:
        kind = attachment.get("type")
        if kind == "skill_listing":
            for name in skill_names(as_text(attachment.get("content")) or ""):
                add_unique(self.read.skills, name)
        elif kind == "max_turns_reached":
            limit = as_int(attachment.get("maxTurns"))
            self._emit([AgentError(runtime=RUNTIME, category="max_turns",
                                   message=f"Stopped at the turn limit ({limit or '?'} turns).")])
            self._open = False

    def _end_turn(self) -> None:
        if self._ending is None:
            return
        _, model, text = self._ending
        self._ending = None
        self._emit([TurnCompleted(runtime=RUNTIME, model=model, result_text=text)])

    # -- the end -------------------------------------------------------------------------------

    def finish(self) -> TranscriptRead:
        self._end_turn()
        read = self.read
        read.cwd = self._meta.get("cwd")
        read.git_branch = self._meta.get("branch")
        read.open_turn = self._open
        if read.events or read.initial_prompt:
            started = SessionStarted(
                runtime=RUNTIME, ts=self._started or self._at, replay=True,
                agent_session_id=read.item.agent_session_id,
                model=read.models[0] if read.models else None, cwd=read.cwd,
                permission_mode=self._meta.get("mode"), version=self._meta.get("version"))
            read.events.insert(0, started)
        return read


def _prompt_of(content: Any) -> str | None:
    """The text of a prompt: a string, or its text blocks joined."""
    if isinstance(content, str):
        text = content
    else:
        parts = [as_text(b.get("text")) or "" for b in as_list(content)
                 if isinstance(b, dict) and b.get("type") == "text"]
        text = "\n".join(p for p in parts if p)
    return text.strip() or None


def _clipped(event: AgentEvent) -> AgentEvent:
    if event.kind == "tool_call":
        return event.model_copy(update={"input": clip_value(event.input)})
    if event.kind == "assistant_text" and len(event.text) > MAX_TEXT:
        return event.model_copy(update={"text": clip(event.text, MAX_TEXT)})
    return event


def _retry_text(obj: dict[str, Any]) -> str:
    attempt, most = as_int(obj.get("retryAttempt")), as_int(obj.get("maxRetries"))
    counter = f"; retry {attempt} of {most}" if attempt and most else ""
    return f"API request failed{counter}."


STORE = ClaudeStore()
