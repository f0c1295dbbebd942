"""The closed set of events every runtime's output is normalised into.

Each runtime's native output (NDJSON, JSONL, SSE, JSON-RPC) becomes these
models. Anything a runtime cannot report is ``None`` — never ``0`` — so a view
shows a gap instead of a lie. Events re-read from history carry
``replay=True`` and never notify anyone. Events produced by the scripted demo
runtime carry ``simulated=True`` and every view labels them as a simulation.

An :class:`EventRecord` is an event as stored: with its monotonic id, the Relay
session and run it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

from relay.core.live import LiveState, Needs
from relay.core.states import SessionState


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


class Usage(BaseModel):
    """Token usage and cost; ``None`` means the runtime did not say."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{name: _add(getattr(self, name), getattr(other, name))
                        for name in Usage.model_fields})

    def minus(self, earlier: Usage) -> Usage:
        """The difference to an earlier cumulative reading (per-turn delta)."""
        return Usage(**{name: _sub(getattr(self, name), getattr(earlier, name))
                        for name in Usage.model_fields})

    @property
    def is_unknown(self) -> bool:
        return all(getattr(self, name) is None for name in Usage.model_fields)


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _sub(a: Any, b: Any) -> Any:
    if a is None:
        return None
    if b is None:
        return a
    return max(a - b, 0)


class _Event(BaseModel):
    #: defer_build: a model's validator is built when it is first used, not at import (a
    #: command that only names the events — relay-cli doctor, a client — never pays for
    #: the 27 schemas; docs/performance.md "relay-cli start-up")
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    ts: datetime = Field(default_factory=utcnow)
    runtime: str = ""
    simulated: bool = False
    replay: bool = False


class SessionStarted(_Event):
    """The agent process reported its session (init line / thread.started)."""

    kind: Literal["session_started"] = "session_started"
    agent_session_id: str | None = None
    model: str | None = None
    cwd: str | None = None
    tools: list[str] = Field(default_factory=list)
    permission_mode: str | None = None
    version: str | None = None


class AssistantText(_Event):
    """Text the model wrote; ``reasoning`` marks thinking / reasoning summaries."""

    kind: Literal["assistant_text"] = "assistant_text"
    text: str
    reasoning: bool = False
    message_id: str | None = None
    parent_call_id: str | None = None


class ToolCall(_Event):
    """The agent started a tool call (a command, a file edit, a subagent…)."""

    kind: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    parent_call_id: str | None = None


class ToolResult(_Event):
    """The outcome of a tool call. ``is_error`` is ``None`` when not reported."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    output: str = ""
    is_error: bool | None = None
    exit_code: int | None = None
    parent_call_id: str | None = None


class PermissionDenied(_Event):
    """A tool call the agent's permission policy refused."""

    kind: Literal["permission_denied"] = "permission_denied"
    tool: str
    call_id: str | None = None
    detail: str = ""


class TurnCompleted(_Event):
    """A turn ended; ``usage`` is this turn's usage (deltas, never cumulative)."""

    kind: Literal["turn_completed"] = "turn_completed"
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
    num_turns: int | None = None
    result_text: str | None = None


InputOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always",
                          "answer", "other"]


class InputOption(BaseModel):
    """One answer a :class:`NeedsInput` offers (ACP's permission options, a question's
    choices). ``kind`` says what it means, so a policy can pick without reading labels."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    label: str
    kind: InputOptionKind = "other"


class NeedsInput(_Event):
    """The agent waits for an answer; reply with ``RuntimeAdapter.answer_input`` (the
    adapter maps the option onto its own vocabulary: a JSON-RPC response, a tool result).

    ``about``: ``permission`` (approve a tool call) or ``question`` (free text or a
    choice). ``read_only``: the action asked about only reads (None: unknown) — the
    ``read_only`` approval policy answers those by itself.
    """

    kind: Literal["needs_input"] = "needs_input"
    request_id: str
    prompt: str
    options: list[InputOption] = Field(default_factory=list)
    about: Literal["permission", "question"] = "permission"
    tool: str | None = None
    read_only: bool | None = None


class InputWithdrawn(_Event):
    """A pending :class:`NeedsInput` no longer needs an answer."""

    kind: Literal["input_withdrawn"] = "input_withdrawn"
    request_id: str
    reason: str = ""


LimitKind = Literal["usage_limit", "rate_limit", "quota", "overloaded"]


class LimitHit(_Event):
    """The account or provider hit (or reported) a limit."""

    kind: Literal["limit_hit"] = "limit_hit"
    limit: LimitKind
    message: str
    resets_at: datetime | None = None
    scope: str | None = None
    blocking: bool = True


class QuotaUpdate(_Event):
    """An official reading of the account's limit window (not a failure).

    Claude's ``rate_limit_event`` (status and reset per window), an API's rate-limit
    headers, Codex's ``token_count.rate_limits``. The wallet keeps each reading with
    the run's account (``limit_snapshots``); ``used_percent`` is None when the
    provider names no figure (Claude's stream says only allowed / warning / rejected).
    """

    kind: Literal["quota_update"] = "quota_update"
    window: str
    status: str | None = None
    used_percent: float | None = None
    resets_at: datetime | None = None
    window_minutes: int | None = None
    origin: str = ""


class Notice(_Event):
    """Progress the user should see but that is not a failure (retries, fallbacks)."""

    kind: Literal["notice"] = "notice"
    category: Literal["retry", "fallback", "info", "warning"] = "info"
    message: str


ErrorCategory = Literal[
    "rate_limit", "usage_limit", "overloaded", "auth", "request", "network",
    "timeout", "max_turns", "budget", "resume", "config", "malformed", "process",
    "stalled", "unknown",
]


class AgentError(_Event):
    """Something went wrong; ``fatal`` errors end the run."""

    kind: Literal["error"] = "error"
    category: ErrorCategory = "unknown"
    message: str
    http_status: int | None = None
    fatal: bool = True


Outcome = Literal["completed", "failed", "cancelled", "interrupted"]


class SessionEnded(_Event):
    """Exactly one per run: how the agent process ended."""

    kind: Literal["session_ended"] = "session_ended"
    outcome: Outcome
    reason: str | None = None
    exit_code: int | None = None
    result_text: str | None = None




class StateChanged(_Event):
    """Relay's own record of a session state transition."""

    kind: Literal["state_changed"] = "state_changed"
    state: SessionState
    reason: str | None = None
    #: ``waiting``: when Relay resumes the session (a limit's reset plus a margin).
    until: datetime | None = None
    #: a final state: the tool calls the agent asked for and was refused, over all the
    #: session's runs (None: not counted, e.g. a state Relay set after a crash)
    refused_calls: int | None = None


class VerifyResult(_Event):
    """One acceptance command the verifier gate ran in the session's worktree."""

    kind: Literal["verify_result"] = "verify_result"
    command: list[str]
    passed: bool
    exit_code: int | None = None
    #: the end of its combined output (scrubbed like every event)
    output: str = ""
    duration_s: float = 0.0
    #: why it could not run at all (missing executable, timeout); ``passed`` is False
    problem: str | None = None


HandoffState = Literal[
    "pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done", "failed",
]


class HandoffStep(_Event):
    """Relay's record of one committed step of a handoff (see relay.sessions.handoff)."""

    kind: Literal["handoff_step"] = "handoff_step"
    handoff_id: str
    state: HandoffState
    from_entry: str | None = None
    to_entry: str | None = None
    reason: str | None = None
    detail: str | None = None


#: the ``events.session_id`` of board, live-state and hook-guard events: no Relay session
#: has it, so a consumer that looks a record's session up skips it (:func:`is_board_record`)
BOARD_SESSION = "board"

BoardEntity = Literal["project", "task", "report", "decision", "comment", "link", "environment"]


class BoardChanged(_Event):
    """A committed change on the board (relay.board): a project, a task, a report…"""

    kind: Literal["board_changed"] = "board_changed"
    entity: BoardEntity
    #: "created" | "updated" | "stage" | "deleted" | "delivered" | "acked" | "linked" | …
    action: str
    #: the project's slug
    project: str
    #: the task's key, e.g. "RELAY-3"
    task: str | None = None
    #: the changed fields, e.g. {"from": "dev", "to": "test"}
    fields: dict[str, JsonValue] = Field(default_factory=dict)
    #: "owner" | "agent:<session>" | "hook"
    actor: str = ""


class LiveStateChanged(_Event):
    """A hooked agent session's live state changed (relay.board.hooks)."""

    kind: Literal["live_state"] = "live_state"
    agent_session_id: str
    state: LiveState
    previous: LiveState | None = None
    detail: str = ""
    needs: Needs | None = None
    cwd: str = ""
    relay_session_id: str | None = None


class GuardDecision(_Event):
    """The guard narrowed a tool call: denied it, asked the user, or warned."""

    kind: Literal["guard_decision"] = "guard_decision"
    decision: Literal["deny", "ask", "warn"]
    reason: str
    #: the rule that matched, e.g. "env.kubectl"
    rule: str
    environment: str | None = None
    tool: str
    #: a one-line summary of the call
    summary: str
    where: Literal["hook", "http", "acp", "claude_bridge"]
    agent_session_id: str | None = None


#: how a message reaches a session's agent: ``queue`` at the next turn boundary (never by
#: killing a turn), ``now`` into the running turn (runtimes with the steer capability),
#: ``interrupt`` stop the turn at once, then send it
MessageMode = Literal["queue", "now", "interrupt"]
#: ``queued`` (editable, cancellable) → ``sending`` (claimed) → ``delivered``; or
#: ``cancelled`` by the user, or ``failed`` (its ``error`` says why)
MessageState = Literal["queued", "sending", "delivered", "cancelled", "failed"]
#: ``message`` typed by the user; ``review`` a comment on a line of the diff; ``board`` a
#: comment on the session's task on the board
MessageKind = Literal["message", "review", "board"]
#: how it was delivered: ``steer`` into the running turn; ``turn`` at a turn boundary of
#: the running agent process; ``resume`` as a new run continuing the agent's own
#: conversation; ``brief`` as a new run with Relay's signed brief (no native resume)
DeliveredHow = Literal["steer", "turn", "resume", "brief"]


class MessageChanged(_Event):
    """A message to the session's agent was queued, edited, cancelled, sent or delivered
    (relay.sessions.inbox); a delivered one is the user's turn in the stream."""

    kind: Literal["message"] = "message"
    message_id: str
    state: MessageState
    mode: MessageMode = "queue"
    message_kind: MessageKind = "message"
    #: once delivered
    how: DeliveredHow | None = None
    #: the message (scrubbed, at most 4 KiB here; the inbox keeps all of it)
    text: str = ""
    #: who sent it: "window", "cli", "tui", "mcp", "board", "api", "review"
    source: str = ""
    error: str | None = None


AgentEvent = Annotated[
    SessionStarted | AssistantText | ToolCall | ToolResult | PermissionDenied
    | TurnCompleted | NeedsInput | InputWithdrawn | LimitHit | QuotaUpdate | Notice | AgentError
    | SessionEnded | StateChanged | HandoffStep | VerifyResult
    | BoardChanged | LiveStateChanged | GuardDecision | MessageChanged,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent,
                                                    config=ConfigDict(defer_build=True))


def parse_event(payload: str | bytes) -> AgentEvent:
    """Rebuild an event from its stored JSON."""
    return EVENT_ADAPTER.validate_json(payload)


@dataclass(frozen=True, slots=True)
class EventRecord:
    """An event as persisted: monotonic id, owning session and run.

    A plain dataclass, not a pydantic model: one is built per stored event on
    the hot path, and the event inside is already validated.
    """

    id: int
    session_id: str
    run_id: str | None
    event: AgentEvent


def is_board_record(record: EventRecord) -> bool:
    """Whether a record belongs to the board's stream, not to a Relay session."""
    return record.session_id == BOARD_SESSION


def record_json(record: EventRecord) -> dict[str, Any]:
    """An event record as JSON: the one wire shape of ``relay-cli --json``, the API's pages
    and its live stream."""
    return {"id": record.id, "session_id": record.session_id, "run_id": record.run_id,
            "event": record.event.model_dump(mode="json")}


def record_from_json(data: Any) -> EventRecord:
    """Rebuild a record from :func:`record_json`'s shape (a client reading the API)."""
    return EventRecord(id=int(data["id"]), session_id=str(data["session_id"]),
                       run_id=data.get("run_id"), event=EVENT_ADAPTER.validate_python(data["event"]))
