"""Gemini CLI ``gemini -p … --output-format stream-json`` lines → Relay events.

Observed with Gemini CLI 0.61.0 (``tests/fixtures/gemini/NOTES.md``, the captures, and
its bundle's ``runNonInteractive``):

* ``init`` carries the session id and the model (``auto`` without ``-m``);
* ``message`` ``role:"user"`` echoes the input (ignored); ``role:"assistant"`` text arrives
  only as ``delta:true`` chunks. They are joined per segment — the text between two tool
  calls — into one :class:`AssistantText`. Thoughts are not streamed;
* **retries are invisible and partial text is not retracted**: a dropped stream that is
  retried leaves its first chunk in the output (``e3``: ``"Partial "`` + the real answer).
  The clean final answer is in the chat file; the adapter passes a reader of it
  (``final_answer``) and the last segment is corrected when it ends with that answer;
* ``tool_use`` / ``tool_result`` (``tool_id`` is unique: it embeds a timestamp). A result
  has no exit code. A tool the approval mode does not offer answers ``tool_not_registered``,
  plan mode ``policy_violation``, a call that would need a confirmation (``rm -rf``, a
  ``dir_path`` outside the worktree under ``auto_edit``) ``unhandled_exception`` "requires
  user confirmation, which is not supported in non-interactive mode", and a file tool
  aimed outside the workspace ``invalid_tool_params`` "Path not in workspace": each is
  also reported as :class:`PermissionDenied` (checked against the real 0.61.0);
* ``error`` (``severity`` ``warning`` | ``error``): loop detected, blocked by a hook, an
  invalid stream — the last is followed by ``result`` ``status:"error"`` *without* an
  ``error`` object (and exit 0);
* ``result`` ends the process's work: ``stats`` count **this process only** (not
  cumulative on resume), so they are the run's usage. On an API error the message is
  ``[API Error: …]`` with ``error.type:"unknown"`` and the **exit code is the HTTP status
  modulo 256** (429 → 173, 503 → 247, 500 → 244); it is read back as the status only for
  such a message. Other exits: 41 auth, 42 bad input (an unknown ``--resume`` id), 44
  sandbox, 52 config, 53 session turn limit, 54 fatal tool error, 55 untrusted folder,
  130 cancelled, 1 anything else. **SIGTERM or SIGINT makes it exit 0 without a result
  line** (checked against the real 0.61.0 in tests/integration): exit 0 alone is no success;
* setup failures print nothing on stdout: the reason is on stderr (with ``-o json`` an
  API error is a JSON document there, ``{"session_id", "error": {"message", "code"}}``);
  stderr also carries noise, stack traces and ``Attempt N failed … Retrying after Nms``
  lines, which become retry notices when the process ends.

Limits are classified from the message text by :mod:`relay.core.signals` (daily quota →
``quota``, "You exceeded your current quota … Suggested retry after 2s." → ``rate_limit``
with that delay, "Resource has been exhausted" → ``rate_limit``, "No capacity available" /
"overloaded" → ``overloaded``). Gemini names no reset time for API-key quotas.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any, ClassVar, Protocol

from relay.core import jsonvalue
from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    ErrorCategory,
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
from relay.core.jsonvalue import as_int, as_text
from relay.core.procs import ProcessResult
from relay.core.signals import Signal, classify, error_category, failure_events
from relay.runtimes.base import StreamParser, ended_from_exit
from relay.runtimes.gemini_files import AUTH_PIN

RUNTIME = "gemini"

#: tools an approval mode withholds (``tool_not_registered`` for them is a policy refusal)
WITHHELD_TOOLS = frozenset({
    "run_shell_command", "write_file", "replace", "web_fetch", "list_background_processes",
    "read_background_output", "write_todos", "activate_skill"})
_DENIAL_TYPES = frozenset({"tool_not_registered", "policy_violation"})
#: error types that are a refusal only with these words (the same types cover real failures)
_REFUSAL_WORDS: Mapping[str, str] = {
    "unhandled_exception": "which is not supported in non-interactive mode",
    "invalid_tool_params": "Path not in workspace",
}

#: Gemini CLI's own exit codes (``FatalError`` subclasses) and what they mean to Relay
EXIT_CATEGORIES: Mapping[int, ErrorCategory] = {
    41: "auth", 42: "request", 44: "config", 52: "config", 53: "max_turns", 54: "process",
    55: "config",
}
CANCELLED_EXIT = 130


class FinalAnswer(Protocol):
    """The clean final reply of a session (from its chat file)."""

    @property
    def last_answer(self) -> str | None: ...

    @property
    def model(self) -> str | None: ...


# ---------------------------------------------------------------------------
# Usage
# ---------------------------------------------------------------------------


def gemini_usage(stats: Mapping[str, Any] | None) -> Usage:
    """``result.stats`` (this process's totals, every model) as Relay usage.

    ``input_tokens`` counts the prompt *including* ``cached``; ``input`` is the prompt
    without it; ``output_tokens`` is the candidates only, while ``total_tokens`` also holds
    the thoughts and the tool-use prompt tokens. So: input = ``input`` (fresh prompt),
    cache reads = ``cached``, output = total − prompt (candidates + thoughts + tool-use
    prompt, billed as output but for the last, which stream-json does not separate and
    is 0 without Gemini's built-in tools), reasoning = that remainder. No cost: unknown.
    """
    if not stats:
        return Usage()
    prompt, candidates = as_int(stats.get("input_tokens")), as_int(stats.get("output_tokens"))
    cached, fresh = as_int(stats.get("cached")), as_int(stats.get("input"))
    total = as_int(stats.get("total_tokens"))
    if fresh is None and prompt is not None:
        fresh = max(prompt - (cached or 0), 0)
    output, reasoning = candidates, None
    if total is not None and prompt is not None and candidates is not None \
            and total >= prompt + candidates:
        output, reasoning = total - prompt, total - prompt - candidates
    return Usage(input_tokens=fresh, output_tokens=output, cache_read_tokens=cached,
                 reasoning_tokens=reasoning, cost_usd=None)


# ---------------------------------------------------------------------------
# Failures
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """What one Gemini failure means."""

    message: str
    category: ErrorCategory
    signal: Signal
    http_status: int | None = None

    def events(self) -> list[AgentEvent]:
        return failure_events(self.signal, self.message, runtime=RUNTIME, category=self.category,
                              http_status=self.http_status)


#: what Relay adds to Gemini's own words about a sign-in it cannot use (exit 41)
AUTH_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"GEMINI_API_KEY"),
     "Give Relay a Gemini key: relay-cli accounts add gemini LABEL --auth api_key "
     "--api-key-stdin (or export GEMINI_API_KEY)."),
    (re.compile(r"Invalid auth method selected"),
     f"Pin the sign-in in Gemini's settings.json: {AUTH_PIN}."),
)


def status_from_exit(message: str, exit_code: int | None) -> int | None:
    """The HTTP status behind an API error's exit code (status mod 256), else None.

    Only an ``[API Error: …]`` message makes the exit code a status: nothing else in
    Gemini CLI exits between 144 and 255 (400–511 mod 256).
    """
    if exit_code is None or not 144 <= exit_code <= 255:
        return None
    return exit_code + 256 if message.lstrip().startswith("[API Error") else None


def classify_failure(message: str, *, http_status: int | None = None,
                     exit_code: int | None = None, now: datetime | None = None,
                     tz: tzinfo | None = UTC) -> Failure:
    """Classify a Gemini failure message (a ``result`` error, or stderr at exit).

    The wording decides first (a 429 can be a daily quota, a per-minute limit or server
    capacity); the HTTP status only classifies a message signals does not recognise.
    A setup exit code (41, 42, 55 …) decides the category of an unrecognised message.
    """
    when = now or utcnow()
    signal = classify(message, provider=RUNTIME, now=when, tz=tz)
    if signal.kind == "unknown" and http_status is not None:
        signal = classify(message, http_status=http_status, provider=RUNTIME, now=when, tz=tz)
    category = error_category(signal)
    if category == "unknown" and exit_code is not None:
        category = EXIT_CATEGORIES.get(exit_code, category)
    if exit_code == 42 and re.search(r"\bsession\b", message, re.IGNORECASE):
        category = "resume"
    if category == "auth":
        hint = next((h for pattern, h in AUTH_HINTS if pattern.search(message)), None)
        message = f"{message}\n→ {hint}" if hint else message
    return Failure(message, category, signal, http_status or signal.http_status)


# ---------------------------------------------------------------------------
# stderr
# ---------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_NOISE = (
    re.compile(r"^Warning: (Basic terminal detected|256-color support not detected)"),
    re.compile(r"^Ripgrep is not available"),
    re.compile(r"^\[STARTUP\]"),
    re.compile(r"^YOLO mode is enabled"),
    re.compile(r"^Error executing tool "),       # a tool failure: also in stream-json
    re.compile(r"^Loaded cached credentials"),
)
_ATTEMPT = re.compile(
    r"^Attempt (?P<n>\d+) failed(?: with status (?P<status>\d{3}))?(?::\s*)?(?P<why>.*?)"
    r"(?:\.{1,2} Retrying after (?P<ms>\d+)ms|\. Retrying with backoff|\.{1,2} Max attempts reached)"
    r"[^\n]*",
    re.MULTILINE | re.DOTALL)
_STACK = re.compile(r"^\s+at |^\s*[\]}{)]|^\s+\w+: |^\s*cause: ")
_MAX_REASON = 2000
_MAX_RETRY_NOTICES = 10
_MAX_WHY = 120


def clean_stderr(stderr: str) -> str:
    """stderr without ANSI colours."""
    return _ANSI.sub("", stderr)


def stderr_error_document(stderr: str) -> tuple[str, int | None] | None:
    """``-o json``'s error document at the end of stderr: (message, HTTP status or code)."""
    text = clean_stderr(stderr)
    start = text.rfind("\n{\n")
    start = start + 1 if start >= 0 else (0 if text.startswith("{\n") else -1)
    if start < 0:
        return None
    try:
        document = jsonvalue.loads(text[start:])
    except ValueError:
        return None
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict) or not error.get("message"):
        return None
    code = error.get("code")
    return str(error["message"]), code if isinstance(code, int) else None


def stderr_message(stderr: str) -> str | None:
    """What Gemini CLI printed about a failure: the first lines that are neither noise,
    retry notices nor stack traces."""
    kept: list[str] = []
    for line in _ATTEMPT.sub("", clean_stderr(stderr)).splitlines():
        if not line.strip() or _STACK.match(line) or any(n.match(line) for n in _NOISE):
            if kept:
                break  # the message ended where its stack trace (or a blank line) began
            continue
        kept.append(line.rstrip())
    text = "\n".join(kept).strip()
    return text[:_MAX_REASON] if text else None


def retry_notices(stderr: str) -> list[Notice]:
    """Gemini's own retries (invisible on stdout), from its ``Attempt N failed`` lines."""
    notices = []
    for match in _ATTEMPT.finditer(clean_stderr(stderr)):
        why = " ".join(match.group("why").split()) or "no reason given"
        why = why if len(why) <= _MAX_WHY else why[:_MAX_WHY - 1].rstrip() + "…"
        if match.group("status"):
            why = f"HTTP {match.group('status')}"
        ms = match.group("ms")
        then = (f"retrying in {int(ms) / 1000:.1f} s" if ms else
                "retrying with backoff" if "backoff" in match.group(0) else "no attempts left")
        notices.append(Notice(runtime=RUNTIME, category="retry",
                              message=f"Gemini attempt {match.group('n')} failed ({why}); {then}."))
    return notices[:_MAX_RETRY_NOTICES]


# ---------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------


class GeminiStreamParser(StreamParser):
    """Turns ``gemini -o stream-json`` lines into Relay events (one instance per run).

    Args:
        cwd: The working directory, reported in SessionStarted.
        permission_mode: The approval mode, reported in SessionStarted.
        notes: Notices to report right after SessionStarted (what the adapter did to the
            request, e.g. a rolled-back prompt sent again).
        final_answer: Given the session id, the chat file's view of the final reply (the
            adapter reads the file; tests pass a stub). Corrects text a retry left behind.
        now: Clock for relative reset times ("Suggested retry after 2s.").
        tz: The zone the CLI formats clock times in (it names none for API keys).
    """

    runtime: ClassVar[str] = RUNTIME

    def __init__(self, *, cwd: str | None = None, permission_mode: str | None = None,
                 notes: Sequence[str] = (),
                 final_answer: Callable[[str], FinalAnswer | None] | None = None,
                 now: Callable[[], datetime] = utcnow, tz: tzinfo | None = UTC) -> None:
        self._cwd, self._permission_mode, self._notes = cwd, permission_mode, list(notes)
        self._final_answer = final_answer
        self._now, self._tz = now, tz
        self.session_id: str | None = None
        self.model: str | None = None
        self._segment: list[str] = []
        self._segments = 0
        self._tools: dict[str, str] = {}
        self._pending_error: str | None = None
        self._result_text: str | None = None
        self._saw_result = False
        self._succeeded = False
        self._failure: str | None = None

    @property
    def result_text(self) -> str | None:
        """The final answer (the last text segment of the run)."""
        return self._result_text

    # -- feeding ----------------------------------------------------------

    def feed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        kind = obj.get("type")
        if kind == "message":
            if obj.get("role") == "assistant":
                self._segment.append(str(obj.get("content") or ""))
            return []
        if kind == "init":
            return self._on_init(obj)
        if kind == "result":
            return self._on_result(obj)
        events = self._flush() + self._flush_error()
        if kind == "tool_use":
            events += self._on_tool_use(obj)
        elif kind == "tool_result":
            events += self._on_tool_result(obj)
        elif kind == "error":
            events += self._on_error(obj)
        return events

    def _on_init(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        self.session_id = as_text(obj.get("session_id"))
        self.model = as_text(obj.get("model"))
        events: list[AgentEvent] = [SessionStarted(
            runtime=RUNTIME, agent_session_id=self.session_id, model=self.model, cwd=self._cwd,
            permission_mode=self._permission_mode)]
        events += [Notice(runtime=RUNTIME, category="info", message=note) for note in self._notes]
        return events

    def _flush(self, final: str | None = None) -> list[AgentEvent]:
        """The text segment gathered so far as one AssistantText (``final``: the chat
        file's clean answer, which replaces the segment when it ends with it)."""
        if not self._segment:
            return []
        text, self._segment = "".join(self._segment), []
        if final and text != final and text.endswith(final):
            text = final  # a retried stream left its first chunks in front of the answer
        self._segments += 1
        self._result_text = text
        return [AssistantText(runtime=RUNTIME, text=text,
                              message_id=f"{self.session_id or 'gemini'}:text{self._segments}")]

    def _on_tool_use(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        call_id = as_text(obj.get("tool_id")) or f"gemini-call-{len(self._tools)}"
        name = as_text(obj.get("tool_name")) or "unknown"
        self._tools[call_id] = name
        self._result_text = None  # text before a tool call is not the final answer
        params = obj.get("parameters")
        return [ToolCall(runtime=RUNTIME, call_id=call_id, name=name,
                         input=dict(params) if isinstance(params, Mapping) else {})]

    def _on_tool_result(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        call_id = as_text(obj.get("tool_id")) or "unknown"
        status = obj.get("status")
        error = obj.get("error")
        error = error if isinstance(error, Mapping) else {}
        detail = as_text(error.get("message"))
        failed = status == "error"
        output = (detail if failed and detail else as_text(obj.get("output"))) or ""
        events: list[AgentEvent] = [ToolResult(
            runtime=RUNTIME, call_id=call_id, output=output,
            is_error=failed if status in ("error", "success") else None)]
        tool = self._tools.get(call_id, "unknown")
        kind = error.get("type")
        if failed and _refused(str(kind), tool, output):
            events.append(PermissionDenied(runtime=RUNTIME, tool=tool, call_id=call_id,
                                           detail=output))
        return events

    def _on_error(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        message = as_text(obj.get("message")) or "Gemini reported an error."
        if obj.get("severity") == "warning":
            return [Notice(runtime=RUNTIME, category="warning", message=message)]
        # Held back: an invalid stream's error is followed by a result without an error
        # object, and is then the run's failure (reported once).
        self._pending_error = message
        return []

    def _flush_error(self) -> list[AgentEvent]:
        """An ``error`` event that did not end the run: reported as non-fatal."""
        if self._pending_error is None:
            return []
        message, self._pending_error = self._pending_error, None
        return [AgentError(runtime=RUNTIME, category=self._classify(message).category,
                           message=message, fatal=False)]

    def _on_result(self, obj: Mapping[str, Any]) -> list[AgentEvent]:
        self._saw_result = True
        ok = obj.get("status") == "success"
        final = self._final() if ok else None
        events = self._flush(final.last_answer if final else None)
        error = obj.get("error")
        message = as_text(error.get("message")) if isinstance(error, Mapping) else None
        if ok or message is not None:
            events += self._flush_error()
        model = self.model if self.model not in (None, "auto") else None
        if model is None and final is not None:
            model = final.model
        stats = obj.get("stats")
        events.append(TurnCompleted(
            runtime=RUNTIME, usage=gemini_usage(stats if isinstance(stats, Mapping) else None),
            model=model or _single_model(stats), result_text=self._result_text if ok else None))
        self._succeeded = ok
        if not ok:
            # classified at exit, when the exit code adds the HTTP status
            self._failure = message or self._pending_error or "Gemini reported a failed turn."
            self._pending_error = None
        return events

    def _final(self) -> FinalAnswer | None:
        if self._final_answer is None or self.session_id is None:
            return None
        return self._final_answer(self.session_id)

    def _classify(self, message: str, *, exit_code: int | None = None,
                  http_status: int | None = None) -> Failure:
        status = http_status or status_from_exit(message, exit_code)
        return classify_failure(message, http_status=status, exit_code=exit_code,
                                now=self._now(), tz=self._tz)

    # -- finishing --------------------------------------------------------

    def finish(self, result: ProcessResult) -> list[AgentEvent]:
        events = self._flush() + self._flush_error()
        events += retry_notices(result.stderr_tail)
        by_itself = not (result.stopped or result.stalled or result.signal is not None)
        if self._failure is not None:
            # The result line said it failed; the exit code only adds the HTTP status.
            events += self._classify(self._failure, exit_code=result.exit_code).events()
        elif by_itself and result.exit_code == CANCELLED_EXIT:
            events.append(SessionEnded(runtime=RUNTIME, outcome="interrupted",
                                       reason="Gemini CLI cancelled the turn (exit 130)",
                                       exit_code=CANCELLED_EXIT, result_text=self._result_text))
            return events
        elif by_itself and result.exit_code not in (0, None):
            events += self._exit_failure(result)
        clean = dataclasses.replace(result, stderr_tail=stderr_message(result.stderr_tail) or "")
        events.append(ended_from_exit(RUNTIME, clean, saw_success=self._succeeded,
                                      failure=self._failure, result_text=self._result_text))
        return events

    def _exit_failure(self, result: ProcessResult) -> list[AgentEvent]:
        """A non-zero exit the stream did not explain: the reason is on stderr (with
        ``-o json`` an error document there), else only the exit code."""
        document = stderr_error_document(result.stderr_tail)
        if document is not None:
            message, code = document
            status = code if code is not None and 400 <= code <= 599 else None
            failure = self._classify(message, exit_code=result.exit_code, http_status=status)
        else:
            after = " after a successful turn" if self._succeeded else ""
            message = stderr_message(result.stderr_tail) or (
                f"Gemini CLI exited with code {result.exit_code}{after} and printed no reason.")
            failure = self._classify(message, exit_code=result.exit_code)
        if failure.category == "unknown":
            failure = dataclasses.replace(failure, category="process")
        self._failure = failure.message
        return failure.events()


def _single_model(stats: Any) -> str | None:
    """The model of a run whose stats name exactly one (side calls add their own)."""
    models = stats.get("models") if isinstance(stats, Mapping) else None
    return next(iter(models)) if isinstance(models, Mapping) and len(models) == 1 else None


def _refused(kind: str, tool: str, message: str) -> bool:
    """Whether a failed tool call was refused by Gemini's policy (not a tool failure)."""
    if kind in _DENIAL_TYPES:
        return kind == "policy_violation" or tool in WITHHELD_TOOLS
    words = _REFUSAL_WORDS.get(kind)
    return words is not None and words in message
