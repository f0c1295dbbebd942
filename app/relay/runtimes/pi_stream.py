"""Pi coding agent ``pi --mode json`` output → Relay events.

Observed with pi 0.73.1 (``tests/fixtures/pi/NOTES.md``, ``docs/json.md`` of the package):

* line 1 is the session header ``{"type":"session","id","cwd"}`` (repeated unchanged when a
  session is resumed); then ``agent_start`` / ``turn_start`` / ``message_start`` /
  ``message_update`` / ``message_end`` / ``tool_execution_*`` / ``turn_end`` / ``agent_end``,
  plus ``auto_retry_start`` / ``auto_retry_end``, ``compaction_*`` and ``queue_update``;
* every assistant message carries its own usage **and cost** (``usage.cost.total``, computed
  by Pi from the model's prices); there is no run total, so each ``turn_end`` (one model call)
  becomes one :class:`TurnCompleted` with its message's usage;
* ``message_update`` embeds ``partial`` objects that may already hold text that arrives
  later (a shared, mutated object), so text is taken from ``message_end`` only;
* **Pi exits 0 after failed retries.** A failure is visible only in the events: an assistant
  message with ``stopReason:"error"`` + ``errorMessage`` that no retry follows, or
  ``auto_retry_end`` with ``success:false`` and ``finalError``. Pi does not tell rate limits,
  usage limits, quotas and overload apart (``"429 <message>"``, ``"503 <message>"``), so the
  text is classified by :mod:`relay.core.signals` (which reads the leading status);
* a stream cut short is reported by Pi as a normal answer (``e3``): an answer with zero
  usage gets a warning notice, the run still completes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from relay.core import signals
from relay.core.events import (
    AgentEvent,
    AssistantText,
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
from relay.core.signals import classify
from relay.runtimes.base import StreamParser, ended_from_exit

RUNTIME = "pi"
#: Pi 0.73.1's built-in tools (``--tools`` picks among them)
PI_TOOLS = frozenset({"read", "bash", "edit", "write", "grep", "find", "ls"})

_EXIT_CODE = re.compile(r"Command exited with code (\d+)\s*\Z")
_MAX_REASON = 2000


def pi_usage(raw: Any) -> Usage:
    """One assistant message's ``usage`` (with its ``cost``) as :class:`Usage`.

    Pi's ``input`` already excludes cached tokens (``cacheRead``); ``cost.total`` is in USD.
    """
    if not isinstance(raw, Mapping):
        return Usage()
    cost = raw.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    return Usage(
        input_tokens=as_int(raw.get("input")),
        output_tokens=as_int(raw.get("output")),
        cache_read_tokens=as_int(raw.get("cacheRead")),
        cache_write_tokens=as_int(raw.get("cacheWrite")),
        reasoning_tokens=None,  # Pi does not report them separately
        cost_usd=float(total) if isinstance(total, int | float) and not isinstance(total, bool)
        else None,
    )


def _text(content: Any, kind: str = "text") -> str:
    """The ``text`` (or ``thinking``) blocks of a message's content, joined."""
    if isinstance(content, str):
        return content if kind == "text" else ""
    if not isinstance(content, list):
        return ""
    return "".join(str(block.get(kind) or "") for block in content
                   if isinstance(block, Mapping) and block.get("type") == kind)


def _result_text(result: Any) -> str:
    if isinstance(result, Mapping):
        return _text(result.get("content"))
    return "" if result is None else str(result)


def failure_events(message: str, *, now: datetime, runtime: str = RUNTIME) -> list[AgentEvent]:
    """LimitHit (when the failure is a limit) and the fatal AgentError for one failure text."""
    return signals.failure_events(classify(message, provider=runtime, now=now, tz=UTC), message,
                          runtime=runtime)


class PiStreamParser(StreamParser):
    """Turns ``pi --mode json`` lines into Relay events (pure; one instance per run).

    Args:
        model: The model Relay asked for (Pi's own ``model`` field wins once seen).
        cwd: The working directory, reported in SessionStarted when the header lacks it.
        permission_mode: How Relay's policy was mapped (the tool allowlist), for SessionStarted.
        tools: The tools enabled for the run, for SessionStarted.
        now: Clock for classifying failures (injectable for tests).
    """

    runtime: ClassVar[str] = RUNTIME

    def __init__(self, *, model: str | None = None, cwd: str | None = None,
                 permission_mode: str | None = None, tools: list[str] | None = None,
                 now: Callable[[], datetime] = utcnow) -> None:
        self._model, self._cwd = model, cwd
        self._permission_mode, self._tools = permission_mode, list(tools or [])
        self._now = now
        self.session_id: str | None = None
        self._started = False
        self._turn_message: Mapping[str, Any] | None = None
        self._messages = 0
        self._last_answer: str | None = None
        self._saw_answer = False
        self._pending_error: str | None = None  # a failed attempt not (yet) retried
        self._failure: str | None = None
        self._aborted = False
        self.total = Usage()

    @property
    def result_text(self) -> str | None:
        """The last answer (assistant text of a message that stopped normally)."""
        return self._last_answer

    # -- feeding ----------------------------------------------------------

    def feed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        kind = obj.get("type")
        handler = self._HANDLERS.get(str(kind))
        return handler(self, obj) if handler is not None else []

    def _on_session(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        if self._started:
            return []
        self._started = True
        sid = obj.get("id")
        self.session_id = str(sid) if sid else None
        return [SessionStarted(runtime=self.runtime, agent_session_id=self.session_id,
                               model=self._model, cwd=str(obj.get("cwd") or self._cwd or "") or None,
                               tools=self._tools, permission_mode=self._permission_mode)]

    def _on_message_end(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        message = obj.get("message")
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            return []
        self._turn_message = message
        self._messages += 1
        if message.get("model"):
            self._model = str(message["model"])
        stop = message.get("stopReason")
        if stop == "error":
            self._pending_error = str(message.get("errorMessage") or "Pi reported an error.")
            return []
        self._pending_error = None
        if stop == "aborted":
            self._aborted = True
        events: list[AgentEvent] = []
        message_id = str(message.get("responseId") or f"pi-msg-{self._messages}")
        thinking = _text(message.get("content"), "thinking")
        if thinking:
            events.append(AssistantText(runtime=self.runtime, text=thinking, reasoning=True,
                                        message_id=message_id))
        text = _text(message.get("content"))
        if text:
            events.append(AssistantText(runtime=self.runtime, text=text, message_id=message_id))
        if stop in ("stop", "length"):
            self._saw_answer = True
            self._last_answer = text or self._last_answer
            usage = message.get("usage")
            if isinstance(usage, Mapping) and not usage.get("totalTokens"):
                events.append(Notice(runtime=self.runtime, category="warning", message=(
                    "Pi reported an answer without any token usage; the provider's stream may "
                    "have been cut short, so the answer can be incomplete.")))
        return events

    def _on_turn_end(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        message = obj.get("message")
        if not isinstance(message, Mapping):
            message = self._turn_message
        self._turn_message = None
        if not isinstance(message, Mapping) or message.get("role") != "assistant" \
                or message.get("stopReason") == "error":
            return []
        usage = pi_usage(message.get("usage"))
        self.total = self.total + usage
        final = message.get("stopReason") in ("stop", "length")
        return [TurnCompleted(runtime=self.runtime, usage=usage, model=self._model,
                              result_text=_text(message.get("content")) or None if final else None)]

    def _on_tool_start(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        args = obj.get("args")
        return [ToolCall(runtime=self.runtime, call_id=str(obj.get("toolCallId") or "?"),
                         name=str(obj.get("toolName") or "unknown"),
                         input=dict(args) if isinstance(args, Mapping) else {"args": args})]

    def _on_tool_end(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        output = _result_text(obj.get("result"))
        is_error = obj.get("isError")
        exit_code: int | None = None
        if obj.get("toolName") == "bash":
            match = _EXIT_CODE.search(output)
            exit_code = int(match.group(1)) if match else (0 if is_error is False else None)
        call_id = str(obj.get("toolCallId") or "?")
        events: list[AgentEvent] = [ToolResult(
            runtime=self.runtime, call_id=call_id, output=output,
            is_error=is_error if isinstance(is_error, bool) else None, exit_code=exit_code)]
        name = str(obj.get("toolName") or "")
        if is_error is True and name in PI_TOOLS and name not in self._tools \
                and output.strip() == f"Tool {name} not found":
            # the allowlist (read_only) left it out: Pi's only refusal (g_tools_allowlist)
            events.append(PermissionDenied(runtime=self.runtime, tool=name, call_id=call_id,
                                           detail=f"{output.strip()} (tools: "
                                                  f"{', '.join(self._tools)})"))
        return events

    def _on_retry_start(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        self._pending_error = None
        message = str(obj.get("errorMessage") or "a provider error")
        attempt, most = obj.get("attempt"), obj.get("maxAttempts")
        delay = obj.get("delayMs")
        wait = f" in {delay / 1000:g} s" if isinstance(delay, int | float) else ""
        return [Notice(runtime=self.runtime, category="retry",
                       message=f"{message} — Pi retries{wait} (attempt {attempt} of {most}).")]

    def _on_retry_end(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        if obj.get("success") is not False or self._failure is not None:
            return []
        message = str(obj.get("finalError") or self._pending_error or "Pi gave up after retrying.")
        self._pending_error = None
        self._failure = message
        return failure_events(message, now=self._now(), runtime=self.runtime)

    def _on_compaction_end(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        if obj.get("errorMessage"):
            return [Notice(runtime=self.runtime, category="warning",
                           message=f"Pi could not compact the context: {obj['errorMessage']}")]
        return [Notice(runtime=self.runtime, category="info",
                       message=f"Pi compacted the context ({obj.get('reason') or 'threshold'}).")]

    _HANDLERS: ClassVar[dict[str, Callable[[PiStreamParser, Mapping[str, Any]],
                                           list[AgentEvent]]]] = {
        "session": _on_session,
        "message_end": _on_message_end,
        "turn_end": _on_turn_end,
        "tool_execution_start": _on_tool_start,
        "tool_execution_end": _on_tool_end,
        "auto_retry_start": _on_retry_start,
        "auto_retry_end": _on_retry_end,
        "compaction_end": _on_compaction_end,
    }

    # -- finishing --------------------------------------------------------

    def finish(self, result: ProcessResult) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        stopped = result.stopped or result.stalled
        if self._pending_error is not None and self._failure is None and not stopped:
            # The last attempt failed and nothing retried it (retries off, or not retryable).
            self._failure = self._pending_error
            events += failure_events(self._failure, now=self._now(), runtime=self.runtime)
        stderr = _stderr_message(result.stderr_tail)
        failed_exit = (not stopped and result.signal is None
                       and result.exit_code not in (0, None))
        if failed_exit and self._failure is None:
            self._failure = stderr or f"pi exited with code {result.exit_code}."
            events += failure_events(self._failure, now=self._now(), runtime=self.runtime)
        if self._aborted and self._failure is None and not stopped:
            events.append(SessionEnded(runtime=self.runtime, outcome="interrupted",
                                       reason="the run was aborted", exit_code=result.exit_code,
                                       result_text=self._last_answer))
            return events
        events.append(ended_from_exit(self.runtime, result, saw_success=self._saw_answer,
                                      failure=self._failure, result_text=self._last_answer))
        return events


def _stderr_message(stderr: str) -> str | None:
    text = stderr.strip()
    return text[-_MAX_REASON:] if text else None
