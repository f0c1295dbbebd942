"""Codex CLI ``codex exec --json`` output → Relay events.

Observed with codex-cli 0.171.0 (``tests/fixtures/codex/NOTES.md``):

* ``thread.started`` carries the thread id (what ``exec resume`` takes);
* ``item.started`` / ``item.updated`` / ``item.completed`` carry agent messages,
  reasoning, shell commands, patches, MCP calls, web searches, to-do lists and
  non-fatal ``error`` items. Item ids (``item_0``…) restart in every process, so
  call ids are prefixed with a per-run key to stay unique within a session;
* an ``error`` line is not a failure on its own: ``Reconnecting... n/N`` is a
  retry notice, and a real failure is an ``error`` line followed by
  ``turn.failed`` with the same message (then exit 1);
* ``turn.completed.usage`` is **cumulative over the thread** on resumed threads,
  so the parser subtracts the thread's earlier total to report per-turn usage;
* startup failures (unknown resume id, untrusted directory, bad config.toml)
  print nothing on stdout — only stderr and exit 1.

Failure messages are classified by text because ``--json`` carries no
machine-readable error code (the rollout's ``codex_error_info`` does, but the
parser does no I/O); the wording rules and reset-time parsing live in
:mod:`relay.core.signals`. Codex writes typographic apostrophes
(``You’ve``); both forms are accepted.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any, ClassVar

from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    ErrorCategory,
    LimitKind,
    Notice,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
    Usage,
    utcnow,
)
from relay.core.jsonvalue import as_int
from relay.core.procs import ProcessResult
from relay.core.signals import Signal, classify, error_category, failure_events, limit_kind, reset_from_text
from relay.runtimes.base import StreamParser, ended_from_exit

RUNTIME = "codex"

# ---------------------------------------------------------------------------
# Failure classification
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Classified:
    """What a codex error message means for Relay."""

    category: ErrorCategory
    limit: LimitKind | None = None
    http_status: int | None = None


# Startup/configuration problems: not a provider signal, so not signals' business.
_CONFIG = re.compile(r"Missing environment variable|Model metadata for .* not found")
# Kinds a configuration message would otherwise fall into (codex's old rule order).
_BELOW_CONFIG = frozenset({"network", "invalid_request", "timeout", "unknown"})


def classify_failure(message: str) -> Classified:
    """Classify a codex ``error`` / ``turn.failed`` message (NOTES checklist item 4)."""
    return _classified(classify(message, provider=RUNTIME, now=utcnow(), tz=UTC))


def _classified(signal: Signal) -> Classified:
    if signal.kind in _BELOW_CONFIG and _CONFIG.search(signal.text or ""):
        return Classified("config", None, signal.http_status)
    return Classified(error_category(signal), limit_kind(signal), signal.http_status)


def parse_reset_time(message: str, now: datetime, tz: tzinfo | None = None) -> datetime | None:
    """When a limit resets, from the wording codex uses; ``None`` if it does not say.

    "try again at 1:08 PM" (the current local day), "try again at Dec 3rd,
    2026 10:08 AM", "try again in 1.5s" — see :func:`relay.core.signals.reset_from_text`.

    Args:
        message: The failure message.
        now: The current time (aware); anchors same-day clock times and relative spans.
        tz: The codex process's timezone, in which it formats clock times
            (``None``: this process's local timezone).

    Returns:
        The reset time as an aware UTC datetime, or ``None`` ("Try again later.").
    """
    return reset_from_text(message, now=now, tz=tz).resets_at


# ---------------------------------------------------------------------------
# Usage
# ---------------------------------------------------------------------------


def codex_usage(raw: Mapping[str, Any]) -> Usage:
    """Map a codex usage object (``turn.completed`` or rollout) to :class:`Usage`."""
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")),
        output_tokens=as_int(raw.get("output_tokens")),
        cache_read_tokens=as_int(raw.get("cached_input_tokens")),
        cache_write_tokens=as_int(raw.get("cache_write_input_tokens")),
        reasoning_tokens=as_int(raw.get("reasoning_output_tokens")),
        cost_usd=None,  # codex reports no cost
    )


# ---------------------------------------------------------------------------
# stderr
# ---------------------------------------------------------------------------

_STDERR_NOISE = (
    re.compile(r"^Reading additional input from stdin"),
    re.compile(r"^WARNING: proceeding, even though we could not create PATH aliases"),
    re.compile(r"^warning: Codex could not find bubblewrap", re.IGNORECASE),
)
_LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\S+\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)\s+(?P<target>\S+?):?\s+(?P<msg>.*)$"
)
_DENIAL = re.compile(r"rejected by user approval settings|approval policy is Never|"
                     r"blocked by .*sandbox", re.IGNORECASE)
_STDERR_RULES: tuple[tuple[re.Pattern[str], ErrorCategory], ...] = (
    (re.compile(r"no rollout found for thread id|thread/resume", re.IGNORECASE), "resume"),
    (re.compile(r"Not inside a trusted directory|config\.toml|Missing environment variable|"
                r"unexpected argument|invalid value", re.IGNORECASE), "config"),
    (re.compile(r"not logged in|login|unauthorized|401", re.IGNORECASE), "auth"),
)
_MAX_REASON = 2000


def stderr_message(stderr: str) -> str | None:
    """The error codex printed on stderr, without the stdin notice, warnings and log lines."""
    lines = [line.rstrip() for line in stderr.splitlines()]
    kept = [line for line in lines if line.strip() and not _LOG_LINE.match(line)
            and not any(noise.match(line) for noise in _STDERR_NOISE)]
    text = "\n".join(kept).strip()
    return text[:_MAX_REASON] if text else None


def stderr_category(message: str) -> ErrorCategory:
    """The error category of a startup failure printed on stderr."""
    for pattern, category in _STDERR_RULES:
        if pattern.search(message):
            return category
    return "process"


def tool_router_events(stderr: str, runtime: str = RUNTIME) -> list[AgentEvent]:
    """Denied or failed tool calls, which codex reports only as stderr log lines.

    In ``--json`` mode a call the sandbox or approval policy blocks produces no item
    event at all; ``ERROR codex_core::tools::router: error=…`` on stderr is the trace.
    """
    events: list[AgentEvent] = []
    for line in stderr.splitlines():
        match = _LOG_LINE.match(line.strip())
        if not match or match.group("level") != "ERROR" or "tools" not in match.group("target"):
            continue
        detail = match.group("msg").removeprefix("error=")
        if _DENIAL.search(detail):
            tool = "apply_patch" if "patch" in detail.lower() else "shell"
            events.append(PermissionDenied(runtime=runtime, tool=tool, detail=detail))
        else:
            events.append(Notice(runtime=runtime, category="warning",
                                 message=f"A tool call failed: {detail}"))
    return events


# ---------------------------------------------------------------------------
# Items
# ---------------------------------------------------------------------------

_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")
_CHANGE_LETTER = {"add": "A", "update": "M", "delete": "D"}


def _tool_call_parts(item: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = item.get("type")
    if kind == "command_execution":
        return "shell", {"command": str(item.get("command") or "")}
    if kind == "file_change":
        return "file_change", {"changes": list(item.get("changes") or [])}
    if kind == "mcp_tool_call":
        server, tool = str(item.get("server") or "?"), str(item.get("tool") or "?")
        return f"mcp__{server}__{tool}", {"server": server, "tool": tool,
                                          "arguments": item.get("arguments")}
    return "web_search", {"query": str(item.get("query") or "")}


def _status_error(item: Mapping[str, Any]) -> bool | None:
    status = item.get("status")
    if status == "completed":
        return False
    if status in ("failed", "declined"):
        return True
    return None


def _tool_output(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind == "command_execution":
        return str(item.get("aggregated_output") or "")
    if kind == "file_change":
        return "\n".join(
            f"{_CHANGE_LETTER.get(str(change.get('kind')), '?')} {change.get('path', '')}"
            for change in item.get("changes") or [] if isinstance(change, Mapping))
    if kind == "mcp_tool_call":
        return _mcp_output(item)
    return ""


def _mcp_output(item: Mapping[str, Any]) -> str:
    error = item.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        return str(error["message"])
    result = item.get("result")
    blocks = result.get("content") if isinstance(result, Mapping) else None
    texts = [str(block.get("text", "")) for block in blocks or []
             if isinstance(block, Mapping) and block.get("type") == "text"]
    return "\n".join(texts)


def _todo_text(item: Mapping[str, Any]) -> str:
    lines = [f"[{'x' if entry.get('completed') else ' '}] {entry.get('text', '')}"
             for entry in item.get("items") or [] if isinstance(entry, Mapping)]
    return "Plan:\n" + "\n".join(lines)


# ---------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------


class CodexStreamParser(StreamParser):
    """Turns ``codex exec --json`` lines into Relay events (pure; one instance per run).

    Args:
        previous_total: The thread's cumulative usage before this process (from
            earlier runs or the rollout); ``turn.completed`` reports cumulative
            usage on resumed threads and the parser emits the difference.
        run_key: Prefix that makes call ids unique across the runs of a session
            (item ids restart at ``item_0`` in every process). Random by default.
        model: The model Relay asked for, reported in SessionStarted/TurnCompleted.
        cwd: The working directory, reported in SessionStarted.
        permission_mode: The sandbox mode, reported in SessionStarted.
        now: Clock for parsing reset times (injectable for tests).
        tz: The codex process's timezone (``None``: local), for reset times.
    """

    runtime: ClassVar[str] = RUNTIME

    def __init__(self, *, previous_total: Usage | None = None, run_key: str | None = None,
                 model: str | None = None, cwd: str | None = None,
                 permission_mode: str | None = None,
                 now: Callable[[], datetime] = utcnow, tz: tzinfo | None = None) -> None:
        self._baseline = previous_total
        self._run_key = run_key or uuid.uuid4().hex[:12]
        self._model, self._cwd, self._permission_mode = model, cwd, permission_mode
        self._now, self._tz = now, tz
        self.thread_id: str | None = None
        self._total: Usage | None = None
        self._open_calls: set[str] = set()
        self._todo_shown: dict[str, str] = {}
        self._last_message: str | None = None
        self._pending_error: str | None = None
        self._failure: str | None = None
        self._turn_started = False
        self._turn_completed = False

    @property
    def thread_total(self) -> Usage | None:
        """The thread's cumulative usage as last reported (what to store for the next run)."""
        return self._total if self._total is not None else self._baseline

    @property
    def result_text(self) -> str | None:
        """The last agent message — codex's final answer."""
        return self._last_message

    def call_id(self, item_id: str) -> str:
        """A session-unique id for one of this process's items."""
        return f"{self._run_key}:{item_id}"

    # -- feeding ----------------------------------------------------------

    def feed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        kind = obj.get("type")
        if kind == "turn.failed":
            return self._on_turn_failed(obj)
        events = self._flush_pending_error()
        if kind == "error":
            events += self._on_error(obj)
        elif kind == "thread.started":
            events += self._on_thread_started(obj)
        elif kind == "turn.started":
            self._turn_started = True
        elif kind == "turn.completed":
            events += self._on_turn_completed(obj)
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = obj.get("item")
            if isinstance(item, dict):
                events += self._on_item(kind.removeprefix("item."), item)
        return events

    def _on_thread_started(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        thread_id = obj.get("thread_id")
        self.thread_id = str(thread_id) if thread_id else None
        return [SessionStarted(runtime=self.runtime, agent_session_id=self.thread_id,
                               model=self._model, cwd=self._cwd,
                               permission_mode=self._permission_mode)]

    def _on_error(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        message = str(obj.get("message") or "")
        if message.startswith("Reconnecting..."):
            return [Notice(runtime=self.runtime, category="retry", message=message)]
        # Held back: if turn.failed follows, this is the failure and is reported once.
        self._pending_error = message
        return []

    def _flush_pending_error(self) -> list[AgentEvent]:
        """An ``error`` line that turned out not to end the turn: report it as non-fatal."""
        if self._pending_error is None:
            return []
        message, self._pending_error = self._pending_error, None
        return [self._agent_error(message, fatal=False)]

    def _on_turn_failed(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        error = obj.get("error")
        message = error.get("message") if isinstance(error, Mapping) else None
        message = str(message or self._pending_error or "The turn failed.")
        self._pending_error = None
        self._failure = message
        return self._failure_events(message)

    def _failure_events(self, message: str) -> list[AgentEvent]:
        signal = self._signal(message)
        classified = _classified(signal)
        return failure_events(signal, message, runtime=self.runtime, category=classified.category,
                              http_status=classified.http_status)

    def _agent_error(self, message: str, *, fatal: bool) -> AgentError:
        classified = _classified(self._signal(message))
        return AgentError(runtime=self.runtime, category=classified.category, message=message,
                          http_status=classified.http_status, fatal=fatal)

    def _signal(self, message: str) -> Signal:
        return classify(message, provider=self.runtime, now=self._now(), tz=self._tz)

    def _on_turn_completed(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        self._turn_completed = True
        raw = obj.get("usage")
        total = codex_usage(raw if isinstance(raw, Mapping) else {})
        earlier = self.thread_total
        turn = total.minus(earlier) if earlier is not None else total
        if not total.is_unknown:
            self._total = total
        return [TurnCompleted(runtime=self.runtime, usage=turn, model=self._model,
                              result_text=self._last_message)]

    def _on_item(self, phase: str, item: Mapping[str, Any]) -> list[AgentEvent]:
        kind = item.get("type")
        item_id = self.call_id(str(item.get("id") or f"anon{len(self._open_calls)}"))
        if kind in _TOOL_ITEMS:
            return self._on_tool_item(phase, item_id, item)
        if kind == "todo_list":
            return self._on_todo(item_id, item)
        if phase != "completed":
            return []
        if kind == "agent_message":
            self._last_message = str(item.get("text") or "")
            return [AssistantText(runtime=self.runtime, text=self._last_message,
                                  message_id=item_id)]
        if kind in ("reasoning", "plan"):
            return [AssistantText(runtime=self.runtime, text=str(item.get("text") or ""),
                                  reasoning=kind == "reasoning", message_id=item_id)]
        if kind == "error":
            return [self._agent_error(str(item.get("message") or ""), fatal=False)]
        return []

    def _on_tool_item(self, phase: str, call_id: str, item: Mapping[str, Any]) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        if call_id not in self._open_calls:
            self._open_calls.add(call_id)
            name, tool_input = _tool_call_parts(item)
            events.append(ToolCall(runtime=self.runtime, call_id=call_id, name=name,
                                   input=tool_input))
        if phase == "completed":
            exit_code = item.get("exit_code")
            events.append(ToolResult(
                runtime=self.runtime, call_id=call_id, output=_tool_output(item),
                is_error=_status_error(item),
                exit_code=exit_code if isinstance(exit_code, int) else None))
        return events

    def _on_todo(self, call_id: str, item: Mapping[str, Any]) -> list[AgentEvent]:
        text = _todo_text(item)
        if self._todo_shown.get(call_id) == text:
            return []
        self._todo_shown[call_id] = text
        return [Notice(runtime=self.runtime, category="info", message=text)]

    # -- finishing --------------------------------------------------------

    def finish(self, result: ProcessResult) -> list[AgentEvent]:
        events = tool_router_events(result.stderr_tail, self.runtime)
        events += self._settle_pending_error(result)
        clean = dataclasses.replace(result, stderr_tail=stderr_message(result.stderr_tail) or "")
        if self._ended_abnormally(result):
            message = stderr_message(result.stderr_tail)
            if message is not None:
                self._failure = message
                events.append(AgentError(runtime=self.runtime, message=message,
                                         category=stderr_category(message)))
            elif self._turn_started:
                events.append(self._interrupted(result))
                return events
            else:
                self._failure = f"codex exited with code {result.exit_code} and printed nothing."
                events.append(AgentError(runtime=self.runtime, category="process",
                                         message=self._failure))
        events.append(ended_from_exit(self.runtime, clean, saw_success=self._turn_completed,
                                      failure=self._failure, result_text=self._last_message))
        return events

    def _settle_pending_error(self, result: ProcessResult) -> list[AgentEvent]:
        """A trailing ``error`` without ``turn.failed``: the failure if the process failed."""
        if self._pending_error is None:
            return []
        if self._failure is None and not self._turn_completed and _failed_exit(result):
            message, self._pending_error = self._pending_error, None
            self._failure = message
            return self._failure_events(message)
        return self._flush_pending_error()

    def _ended_abnormally(self, result: ProcessResult) -> bool:
        """Exited non-zero on its own, with neither ``turn.completed`` nor ``turn.failed``."""
        return self._failure is None and not self._turn_completed and _failed_exit(result)

    def _interrupted(self, result: ProcessResult) -> SessionEnded:
        # Codex answers SIGINT by aborting the turn and exiting 1 without turn.failed (e8).
        return SessionEnded(runtime=self.runtime, outcome="interrupted",
                            reason="codex was interrupted mid-turn (exit 1 without turn.failed)",
                            exit_code=result.exit_code, result_text=self._last_message)


def _failed_exit(result: ProcessResult) -> bool:
    """Exited by itself with a non-zero code (not stopped by Relay, stalled or signalled)."""
    return (not result.stopped and not result.stalled and result.signal is None
            and result.exit_code not in (0, None))
