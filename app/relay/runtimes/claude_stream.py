"""Claude Code's ``--output-format stream-json`` lines → Relay events.

Recorded behaviour (Claude Code 2.1.197, ``tests/fixtures/claude/NOTES.md``)
that shapes this parser:

* ``assistant`` lines carry one content block each and a ``message_start``
  usage snapshot (``output_tokens: 1``), so usage is taken only from ``result``;
* API errors are a synthetic assistant message (``model: "<synthetic>"``)
  followed by a ``result`` with ``subtype: "success"`` and ``is_error: true``;
* ``result.usage`` is this turn's, but ``total_cost_usd`` is cumulative for the
  process — with stream-json input there is one result per turn, so cost is
  reported as the difference to the previous result;
* a run killed while waiting for the API prints no ``result`` at all (SIGINT
  even exits 0), so completion needs both a successful result and exit 0;
* with stream-json input each user message gives its own ``init`` … ``result``; an
  interrupted turn (the interrupt control request) ends with a ``result``
  ``error_during_execution``, ``terminal_reason: "aborted_…"``: no failure — the turn was
  stopped; when it is the process's last turn the run ends ``interrupted``.

Key order is not stable between CLI versions; everything is looked up by key.
"""

from __future__ import annotations

import dataclasses
import re
import signal
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any, ClassVar

from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    ErrorCategory,
    LimitHit,
    Notice,
    PermissionDenied,
    QuotaUpdate,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
    Usage,
)
from relay.core.jsonvalue import as_dict, as_float, as_int, as_list, as_str
from relay.core.procs import ProcessResult
from relay.core.signals import Signal, classify, error_category, failure_events, from_epoch, reset_from_text
from relay.runtimes.base import StreamParser, ended_from_exit

RUNTIME = "claude"
SYNTHETIC_MODEL = "<synthetic>"

_EXIT_CODE_TEXT = re.compile(r"\AExit code (\d+)\b")
# Exit statuses of a shell-style "killed by signal" (128 + n): the CLI handles
# SIGTERM itself and exits 143, which is an interruption, not a failure.
_SIGNAL_EXITS = {128 + s: s for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ClaudeStreamParser(StreamParser):
    """Stateful translator for one Claude Code process's stdout.

    Args:
        now: Clock used only to interpret "resets 12:05pm (UTC)" texts.
        tz: The zone Claude Code formats reset times in when the text names
            none (``None``: this machine's local zone).
    """

    runtime: ClassVar[str] = RUNTIME

    def __init__(self, now: Callable[[], datetime] | None = None,
                 tz: tzinfo | None = None) -> None:
        self._now = now or _utcnow  # (a function, not a lambda: the parser is pickled)
        self._tz = tz
        self._session_id: str | None = None
        self._model: str | None = None
        self._tool_names: dict[str, str] = {}
        self._tool_errors: dict[str, str] = {}
        self._cost_seen = 0.0
        self._results = 0
        self._last_ok = False
        self._failure: str | None = None
        self._result_text: str | None = None
        self._rejected: Signal | None = None
        self._limit_reported = False
        self._synthetic: tuple[str | None, str] | None = None
        #: an interrupt was asked for; the next result is its end, not a failure
        self._interrupting = False
        self._interrupted = False

    def interrupting(self) -> None:
        """The adapter asked Claude to stop the current turn."""
        self._interrupting = True

    # -- dispatch -----------------------------------------------------------

    def feed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        """Events for one decoded stream-json line (unknown types → [])."""
        kind = obj.get("type")
        if kind == "system":
            return self._on_system(obj)
        if kind == "assistant":
            return self._on_assistant(obj)
        if kind == "user":
            return self._on_user(obj)
        if kind == "rate_limit_event":
            return self._on_rate_limit(as_dict(obj.get("rate_limit_info")))
        if kind == "result":
            return self._on_result(obj)
        return []

    def _on_system(self, obj: dict[str, Any]) -> list[AgentEvent]:
        subtype = obj.get("subtype")
        if subtype == "init":
            return self._on_init(obj)
        if subtype == "api_retry":
            return [Notice(runtime=RUNTIME, category="retry", message=_retry_message(obj))]
        if subtype == "model_fallback":
            return self._on_fallback(obj)
        return []

    def _on_init(self, obj: dict[str, Any]) -> list[AgentEvent]:
        session_id = as_str(obj.get("session_id"))
        model = as_str(obj.get("model"))
        self._model = model or self._model
        # With stream-json input every turn repeats init; one start per session.
        if session_id is not None and session_id == self._session_id:
            return []
        self._session_id = session_id
        tools = [t for t in as_list(obj.get("tools")) if isinstance(t, str)]
        return [SessionStarted(
            runtime=RUNTIME, agent_session_id=session_id, model=model,
            cwd=as_str(obj.get("cwd")), tools=tools,
            permission_mode=as_str(obj.get("permissionMode")),
            version=as_str(obj.get("claude_code_version")))]

    def _on_fallback(self, obj: dict[str, Any]) -> list[AgentEvent]:
        original = as_str(obj.get("original_model")) or "the primary model"
        fallback = as_str(obj.get("fallback_model"))
        self._model = fallback or self._model
        message = as_str(obj.get("content")) or f"Switched from {original} to {fallback}."
        return [Notice(runtime=RUNTIME, category="fallback", message=message)]

    # -- assistant / user ---------------------------------------------------

    def _on_assistant(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = as_dict(obj.get("message"))
        blocks = _content_blocks(message.get("content"))
        if message.get("model") == SYNTHETIC_MODEL:
            # An API error dressed as a reply; the result line reports it.
            text = "\n".join(as_str(b.get("text")) or "" for b in blocks).strip()
            self._synthetic = (as_str(obj.get("error")), text)
            return []
        model = as_str(message.get("model"))
        self._model = model or self._model
        parent = as_str(obj.get("parent_tool_use_id"))
        message_id = as_str(message.get("id"))
        events: list[AgentEvent] = []
        for block in blocks:
            event = self._assistant_block(block, message_id, parent)
            if event is not None:
                events.append(event)
        return events

    def _assistant_block(self, block: dict[str, Any], message_id: str | None,
                         parent: str | None) -> AgentEvent | None:
        kind = block.get("type")
        if kind in ("text", "thinking"):
            text = as_str(block.get(kind))
            if not text:  # redacted thinking carries only a signature
                return None
            return AssistantText(runtime=RUNTIME, text=text, reasoning=kind == "thinking",
                                 message_id=message_id, parent_call_id=parent)
        if kind == "tool_use":
            call_id, name = as_str(block.get("id")), as_str(block.get("name"))
            if call_id is None or name is None:
                return None
            self._tool_names[call_id] = name
            return ToolCall(runtime=RUNTIME, call_id=call_id, name=name,
                            input=as_dict(block.get("input")), parent_call_id=parent)
        return None

    def _on_user(self, obj: dict[str, Any]) -> list[AgentEvent]:
        if obj.get("isReplay"):  # our own prompt echoed back (--replay-user-messages)
            return []
        parent = as_str(obj.get("parent_tool_use_id"))
        blocks = _content_blocks(as_dict(obj.get("message")).get("content"))
        events: list[AgentEvent] = []
        for block in blocks:
            call_id = as_str(block.get("tool_use_id"))
            if block.get("type") != "tool_result" or call_id is None:
                continue  # e.g. the prompt a subagent receives
            events.append(self._tool_result(block, call_id, parent))
        return events

    def _tool_result(self, block: dict[str, Any], call_id: str,
                     parent: str | None) -> ToolResult:
        output = flatten_content(block.get("content"))
        is_error = block.get("is_error")
        flag = is_error if isinstance(is_error, bool) else None
        if flag:
            self._tool_errors[call_id] = output
        exit_code = None
        match = _EXIT_CODE_TEXT.match(output)
        if flag and match and self._tool_names.get(call_id) == "Bash":
            exit_code = int(match.group(1))
        return ToolResult(runtime=RUNTIME, call_id=call_id, output=output, is_error=flag,
                          exit_code=exit_code, parent_call_id=parent)

    # -- limits -------------------------------------------------------------

    def _on_rate_limit(self, info: dict[str, Any]) -> list[AgentEvent]:
        reading = _quota_reading(info)
        return ([reading] if reading else []) + self._limit_of(info)

    def _limit_of(self, info: dict[str, Any]) -> list[AgentEvent]:
        status = info.get("status")
        if status == "allowed_warning":
            resets_at, scope = from_epoch(info.get("resetsAt")), as_str(info.get("rateLimitType"))
            when = f"; resets {_fmt_time(resets_at)}" if resets_at else ""
            # not blocking: the account still works; a task may hand off pre-emptively
            return [LimitHit(runtime=RUNTIME, limit="usage_limit", blocking=False,
                             message=f"Close to the {scope or 'usage'} limit{when}.",
                             resets_at=resets_at, scope=scope)]
        if status != "rejected":
            return []
        # A subscriber 429 without the unified headers also says "rejected" but names
        # no limit (its text says "(not your usage limit)"): a rate limit, not blocking.
        limit = self._signal(None, structured={"rate_limit_info": info})
        self._rejected = limit
        self._limit_reported = True
        usage = limit.kind == "usage_limit"
        scope = limit.scope
        what = f"{scope} usage limit" if scope else ("Usage limit" if usage else "Rate limit")
        when = f"; resets {_fmt_time(limit.resets_at)}" if limit.resets_at else ""
        return [LimitHit(runtime=RUNTIME, limit="usage_limit" if usage else "rate_limit",
                         message=f"{what} reached{when}.", resets_at=limit.resets_at,
                         scope=scope, blocking=usage)]

    def _signal(self, text: str | None, *, http_status: int | None = None,
                structured: Mapping[str, Any] | None = None) -> Signal:
        return classify(text, http_status=http_status, structured=structured,
                        provider=RUNTIME, now=self._now(), tz=self._tz)

    # -- result -------------------------------------------------------------

    def _on_result(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self._results += 1
        self._result_text = as_str(obj.get("result"))
        events: list[AgentEvent] = [*self._denials(obj)]
        events.append(TurnCompleted(
            runtime=RUNTIME, usage=self._turn_usage(obj), model=self._model,
            num_turns=as_int(obj.get("num_turns")), result_text=self._result_text))
        subtype = as_str(obj.get("subtype")) or ""
        failed = obj.get("is_error") is True or subtype.startswith("error")
        aborted = (as_str(obj.get("terminal_reason")) or "").startswith("aborted")
        self._interrupted = failed and (aborted or self._interrupting)
        self._interrupting = False
        # The last result decides: a stream-json session goes on after a failed turn.
        self._last_ok = not failed
        self._failure = None
        if failed and not self._interrupted:
            events.extend(self._result_failure(obj, subtype))
        return events

    def _turn_usage(self, obj: dict[str, Any]) -> Usage:
        usage = as_dict(obj.get("usage"))
        total = as_float(obj.get("total_cost_usd"))
        cost = None
        if total is not None:
            cost = round(max(total - self._cost_seen, 0.0), 10)
            self._cost_seen = max(total, self._cost_seen)
        return Usage(
            input_tokens=as_int(usage.get("input_tokens")),
            output_tokens=as_int(usage.get("output_tokens")),
            cache_read_tokens=as_int(usage.get("cache_read_input_tokens")),
            cache_write_tokens=as_int(usage.get("cache_creation_input_tokens")),
            cost_usd=cost)

    def _denials(self, obj: dict[str, Any]) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        for denial in as_list(obj.get("permission_denials")):
            entry = as_dict(denial)
            call_id = as_str(entry.get("tool_use_id"))
            detail = self._tool_errors.get(call_id or "") or _summarise(entry.get("tool_input"))
            events.append(PermissionDenied(
                runtime=RUNTIME, tool=as_str(entry.get("tool_name")) or "unknown",
                call_id=call_id, detail=detail))
        return events

    def _result_failure(self, obj: dict[str, Any], subtype: str) -> list[AgentEvent]:
        message = _failure_message(obj, subtype)
        status = as_int(obj.get("api_error_status"))
        api_error = as_str(obj.get("api_error")) or as_str(obj.get("api_error_type"))
        signal = self._signal(message, http_status=status, structured=_fields(
            api_error, self._synthetic[0] if self._synthetic else None))
        category = _category(signal, subtype=subtype, status=status, api_error=api_error,
                             rejected_usage_limit=bool(
                                 self._rejected and self._rejected.kind == "usage_limit"))
        self._failure = message
        # --output-format json has no rate_limit_event: the wording is all there is.
        events = failure_events(signal, message, runtime=RUNTIME, category=category,
                                report_limit=not self._limit_reported, http_status=status)
        self._limit_reported = self._limit_reported or len(events) > 1
        return events

    # -- end of process -----------------------------------------------------

    def finish(self, result: ProcessResult) -> list[AgentEvent]:
        """Closing events; the last one is the run's only SessionEnded."""
        events: list[AgentEvent] = []
        failure = self._failure
        if self._results == 0 and not result.stopped and not result.stalled:
            error = self._missing_result_error(result)
            if error is not None:
                events.append(error)
                failure = error.message
        ended = self._ended(result, failure)
        if ended.outcome == "failed" and failure is None and not result.stalled:
            # A successful result but a failing exit: still say why it failed.
            reason = ended.reason or "Claude Code failed."
            events.append(AgentError(runtime=RUNTIME, category=classify_stderr(reason),
                                     message=reason))
        events.append(ended)
        return events

    def _missing_result_error(self, result: ProcessResult) -> AgentError | None:
        """Why a process without a result line failed (argument errors, crashes)."""
        if self._synthetic is not None:
            code, text = self._synthetic
            signal = self._signal(text, structured=_fields(None, code))
            return AgentError(runtime=RUNTIME, category=_category(signal), message=text)
        if result.signal is not None or result.exit_code in (0, None, *_SIGNAL_EXITS):
            return None  # killed or interrupted: not the agent's failure
        stderr = _last_line(result.stderr_tail)
        message = stderr or f"Claude Code exited with code {result.exit_code} without a result."
        return AgentError(runtime=RUNTIME, category=classify_stderr(stderr), message=message)

    def _ended(self, result: ProcessResult, failure: str | None) -> SessionEnded:
        code = result.exit_code
        if (self._results == 0 and failure is None and result.signal is None
                and code in _SIGNAL_EXITS):
            # The CLI turned SIGTERM into exit 143; report it as the signal it was.
            as_signal = dataclasses.replace(result, exit_code=None, signal=_SIGNAL_EXITS[code])
            ended = ended_from_exit(RUNTIME, as_signal, saw_success=False, failure=None)
            return ended.model_copy(update={"exit_code": code})
        if self._interrupted and not result.stopped and not result.stalled:
            # (the CLI exits 1 after an interrupted last turn: still no failure)
            return SessionEnded(runtime=RUNTIME, outcome="interrupted",
                                reason="the turn was interrupted", exit_code=code)
        return ended_from_exit(RUNTIME, result, saw_success=self._last_ok, failure=failure,
                               result_text=self._result_text)


# -- classification ---------------------------------------------------------
#
# What a failure text, status and error field mean is decided by
# relay.core.signals, shared by every runtime; only what is particular to
# Claude Code (result subtypes, the earlier rate_limit_event) is decided here.

_SUBTYPE_CATEGORIES: dict[str, ErrorCategory] = {
    "error_max_turns": "max_turns", "error_max_budget_usd": "budget"}


def classify_failure(*, status: int | None, text: str, subtype: str = "",
                     api_error: str | None = None, assistant_error: str | None = None,
                     rejected_usage_limit: bool = False) -> ErrorCategory:
    """The error category of a failed result (NOTES section 13).

    Args:
        status: ``api_error_status`` (the last HTTP status, ``None`` for
            connection errors, timeouts and "Repeated 529").
        text: The result text or the joined ``errors``.
        subtype: The result subtype (``error_max_turns`` …).
        api_error: ``api_error`` / ``api_error_type`` of newer CLI versions.
        assistant_error: The synthetic assistant line's ``error`` field.
        rejected_usage_limit: A rejected ``rate_limit_event`` naming a limit was seen.
    """
    signal = classify(text, http_status=status, structured=_fields(api_error, assistant_error),
                      provider=RUNTIME, now=datetime.now(UTC), tz=UTC)
    return _category(signal, subtype=subtype, status=status, api_error=api_error,
                     rejected_usage_limit=rejected_usage_limit)


def _fields(api_error: str | None, assistant_error: str | None) -> dict[str, Any]:
    return {"api_error": api_error, "assistant_error": assistant_error}


def _category(signal: Signal, *, subtype: str = "", status: int | None = None,
              api_error: str | None = None, rejected_usage_limit: bool = False) -> ErrorCategory:
    if subtype in _SUBTYPE_CATEGORIES:
        return _SUBTYPE_CATEGORIES[subtype]
    text = signal.text or ""
    if subtype == "error_during_execution" and "No conversation found" in text:
        return "resume"
    if rejected_usage_limit and (status in (429, None) or api_error == "usage_limit_reached"):
        return "usage_limit"
    return error_category(signal)


def classify_stderr(text: str) -> ErrorCategory:
    """The category of a failure the CLI reported only on stderr.

    Args:
        text: The stderr line that explains the failure.
    """
    if "No conversation found" in text or "already in use" in text:
        return "resume"
    if text.startswith("Error:") or "--dangerously-skip-permissions" in text \
            or "unknown option" in text:
        return "config"
    return "process"


def parse_reset_text(text: str, now: datetime, tz: tzinfo | None = None) -> datetime | None:
    """When a usage limit resets, from the CLI's wording (last resort).

    Delegates to :func:`relay.core.signals.reset_from_text`: "resets
    12:05pm (UTC)", "resets Dec 3, 10:05am (UTC)", "… limit reached|<epoch>" …

    Args:
        text: The error text.
        now: The current time (aware).
        tz: The zone for a time that names none (``None``: local).

    Returns:
        The reset time in UTC, or ``None`` if the text names none (or an
        unknown time zone).
    """
    return reset_from_text(text, now=now, tz=tz).resets_at


# -- small helpers ----------------------------------------------------------


def flatten_content(content: Any) -> str:
    """A tool result's content as text.

    Args:
        content: A string, or a list of content blocks (text blocks are joined
            with newlines, images become ``[image]``, anything else is dropped).
    """
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in as_list(content):
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "image":
                parts.append("[image]")
    return "\n".join(parts)


def _retry_message(obj: dict[str, Any]) -> str:
    status = as_int(obj.get("error_status"))
    error = as_str(obj.get("error"))
    cause = f"HTTP {status}" if status is not None else "no response"
    if error and error != "unknown":
        cause += f", {error.replace('_', ' ')}"
    attempt, limit = as_int(obj.get("attempt")), as_int(obj.get("max_retries"))
    counter = f"retry {attempt} of {limit}" if attempt and limit else "retrying"
    delay = as_float(obj.get("retry_delay_ms"))
    wait = f" in {delay / 1000:.1f} s" if delay is not None else ""
    return f"API request failed ({cause}); {counter}{wait}."


def _failure_message(obj: dict[str, Any], subtype: str) -> str:
    text = as_str(obj.get("result"))
    if text:
        return text
    errors = [e for e in as_list(obj.get("errors")) if isinstance(e, str)]
    if errors:
        return "; ".join(errors)
    return f"Claude Code reported an error ({subtype or 'no details'})."


def _summarise(tool_input: Any) -> str:
    data = as_dict(tool_input)
    for key in ("command", "file_path", "path", "url", "pattern"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return ""


def _fmt_time(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M UTC")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in as_list(content) if isinstance(b, dict)]


def _quota_reading(info: dict[str, Any]) -> QuotaUpdate | None:
    """The wallet's official reading of a ``rate_limit_event`` (None: it names no window).

    The stream says allowed / allowed_warning / rejected and the reset, never how much is
    used; a rejection means the window is full (100 %).
    """
    scope, status = as_str(info.get("rateLimitType")), as_str(info.get("status"))
    if scope is None:
        return None
    return QuotaUpdate(runtime=RUNTIME, window=scope if scope in _WINDOWS else "other",
                       status=status, used_percent=100.0 if status == "rejected" else None,
                       resets_at=from_epoch(info.get("resetsAt")),
                       origin="claude rate_limit_event")


_WINDOWS = frozenset({"five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet"})
