"""What each runtime can do, as data.

The table is the static knowledge Relay ships with; an adapter narrows it at
handshake (e.g. Claude's init line reveals the permission mode actually in
force). Asking for a capability below ``partial`` raises
:class:`~relay.core.errors.UnsupportedCapabilityError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from relay.core.errors import UnsupportedCapabilityError


class Level(StrEnum):
    YES = "yes"
    PARTIAL = "partial"
    NO = "no"
    UNKNOWN = "unknown"


class Cap(StrEnum):
    """Capabilities an orchestrator relies on."""

    STREAM_EVENTS = "stream_events"        # structured live events
    TOOL_EVENTS = "tool_events"            # tool calls and results in the stream
    USAGE_TOKENS = "usage_tokens"          # token counts per turn
    COST = "cost"                          # the runtime reports cost
    RESUME = "resume"                      # continue an earlier agent session
    CHOOSE_SESSION_ID = "choose_session_id"
    FORK = "fork"
    SEND_INPUT = "send_input"              # answer a NeedsInput
    SAFE_PAUSE = "safe_pause"              # stop at a turn boundary, resumable
    LIMIT_EVENTS = "limit_events"          # machine-readable limit / reset time
    PERMISSION_POLICY = "permission_policy"
    MODEL_CHOICE = "model_choice"
    TRANSCRIPTS = "transcripts"            # readable on-disk session files
    STEER = "steer"                        # a user message reaches the agent mid-turn
    INTERRUPT = "interrupt"                # stop the current turn; the session goes on


Y, P, N, U = Level.YES, Level.PARTIAL, Level.NO, Level.UNKNOWN

_C = Cap
_ACP_ROW: dict[Cap, Level] = {
    _C.STREAM_EVENTS: Y, _C.TOOL_EVENTS: Y, _C.USAGE_TOKENS: N, _C.COST: N,
    _C.RESUME: P, _C.CHOOSE_SESSION_ID: N, _C.FORK: N, _C.SEND_INPUT: Y,
    _C.SAFE_PAUSE: P, _C.LIMIT_EVENTS: N, _C.PERMISSION_POLICY: P,
    _C.MODEL_CHOICE: P, _C.TRANSCRIPTS: U,
    # session/cancel ends the prompt turn; the session stays loaded
    _C.STEER: N, _C.INTERRUPT: P,
}
_HTTP_ROW: dict[Cap, Level] = {
    _C.STREAM_EVENTS: Y, _C.TOOL_EVENTS: Y, _C.USAGE_TOKENS: Y, _C.COST: P,
    _C.RESUME: Y, _C.CHOOSE_SESSION_ID: N, _C.FORK: N, _C.SEND_INPUT: P,
    _C.SAFE_PAUSE: Y, _C.LIMIT_EVENTS: Y, _C.PERMISSION_POLICY: Y,
    _C.MODEL_CHOICE: Y, _C.TRANSCRIPTS: P,
    _C.STEER: N, _C.INTERRUPT: P,
}
_TABLE: dict[str, dict[Cap, Level]] = {
    "claude": {
        _C.STREAM_EVENTS: Y, _C.TOOL_EVENTS: Y, _C.USAGE_TOKENS: Y, _C.COST: Y,
        _C.RESUME: Y, _C.CHOOSE_SESSION_ID: Y, _C.FORK: Y, _C.SEND_INPUT: P,
        _C.SAFE_PAUSE: P, _C.LIMIT_EVENTS: P, _C.PERMISSION_POLICY: Y,
        _C.MODEL_CHOICE: Y, _C.TRANSCRIPTS: Y,
        # --input-format stream-json, stdin open (2.1.197, docs/claude-talk.md): a user line
        # mid-turn reaches the model in the turn's next API request (during tool use: inside
        # the turn, as "The user sent a new message while you were working"; a turn making no
        # further request takes it as the next turn, right after its result); the interrupt
        # control request ends the turn, the process stays; fork cuts at a transcript uuid
        # (--resume-session-at). tests/integration/test_claude_talk_real.py
        _C.STEER: Y, _C.INTERRUPT: Y,
    },
    "codex": {
        # Blocked tool calls produce no item event; usage is cumulative on resume.
        _C.STREAM_EVENTS: Y, _C.TOOL_EVENTS: P, _C.USAGE_TOKENS: Y, _C.COST: N,
        _C.RESUME: Y, _C.CHOOSE_SESSION_ID: N, _C.FORK: N, _C.SEND_INPUT: N,
        _C.SAFE_PAUSE: P, _C.LIMIT_EVENTS: P, _C.PERMISSION_POLICY: Y,
        _C.MODEL_CHOICE: Y, _C.TRANSCRIPTS: Y,
        # one process per turn: no input mid-turn; an interrupt ends the process and
        # the next message resumes the conversation
        _C.STEER: N, _C.INTERRUPT: P,
    },
    "gemini": {
        # Usage per run (thoughts and tool-use prompt tokens not separable), never a cost;
        # limits from the message text, a reset time only for "retry after Ns"; nothing
        # asks in headless mode; a stop mid-turn loses that turn (tests/runtimes/test_gemini*).
        _C.STREAM_EVENTS: Y, _C.TOOL_EVENTS: Y, _C.USAGE_TOKENS: Y, _C.COST: N,
        _C.RESUME: Y, _C.CHOOSE_SESSION_ID: Y, _C.FORK: N, _C.SEND_INPUT: N,
        _C.SAFE_PAUSE: P, _C.LIMIT_EVENTS: P, _C.PERMISSION_POLICY: Y,
        _C.MODEL_CHOICE: Y, _C.TRANSCRIPTS: Y,
        # one process per turn: no input mid-turn; an interrupt ends the process and
        # the next message resumes the conversation
        _C.STEER: N, _C.INTERRUPT: P,
    },
    "pi": {
        # tests/runtimes/test_pi_*.py: cost per message from Pi's prices; Pi never asks (no
        # input); stop at a turn boundary kills it (RPC abort unused); limits by wording,
        # no reset time; read_only = tool allowlist, workspace unconfined; --fork unused.
        _C.STREAM_EVENTS: Y, _C.TOOL_EVENTS: Y, _C.USAGE_TOKENS: Y, _C.COST: Y,
        _C.RESUME: Y, _C.CHOOSE_SESSION_ID: N, _C.FORK: N, _C.SEND_INPUT: N,
        _C.SAFE_PAUSE: P, _C.LIMIT_EVENTS: P, _C.PERMISSION_POLICY: P,
        _C.MODEL_CHOICE: Y, _C.TRANSCRIPTS: Y,
        # one process per turn: no input mid-turn; an interrupt ends the process and
        # the next message resumes the conversation
        _C.STEER: N, _C.INTERRUPT: P,
    },
    # The HTTP runtimes (relay.runtimes.http): Relay's own agent loop reports every tool
    # call, enforces the policy and saves the conversation (resume); cost is an estimate
    # from the price table; the only questions are the guard's (send_input partial:
    # relay.runtimes.guarded); session ids are Relay's own.
    "anthropic": _HTTP_ROW,
    "openai": _HTTP_ROW,
    "openai-chat": _HTTP_ROW,
    # tools only with models that support them (else a plain chat, with a notice); a local
    # server reports no limits
    "ollama": {**_HTTP_ROW, _C.TOOL_EVENTS: P, _C.LIMIT_EVENTS: N},
    # ACP (relay.runtimes.acp): the protocol has no usage, cost or limit fields; resume
    # is session/load, narrowed to no when the agent does not advertise loadSession; the
    # policy is a session mode or a flag where the agent has one, else its permission
    # requests come to Relay; the model is a per-agent flag or variable.
    "acp": _ACP_ROW,
    "gemini-acp": _ACP_ROW,
    "claude-acp": _ACP_ROW,
    "codex-acp": _ACP_ROW,
    "demo": {
        _C.STREAM_EVENTS: Y, _C.TOOL_EVENTS: Y, _C.USAGE_TOKENS: Y, _C.COST: Y,
        _C.RESUME: Y, _C.CHOOSE_SESSION_ID: Y, _C.FORK: N, _C.SEND_INPUT: Y,
        _C.SAFE_PAUSE: Y, _C.LIMIT_EVENTS: Y, _C.PERMISSION_POLICY: P,
        _C.MODEL_CHOICE: P, _C.TRANSCRIPTS: N,
        _C.STEER: Y, _C.INTERRUPT: Y,
    },
}

RUNTIME_NAMES: tuple[str, ...] = tuple(_TABLE)


class Capabilities:
    """A runtime's capability levels; immutable, narrowed by :meth:`narrow`."""

    def __init__(self, runtime: str, levels: Mapping[Cap, Level]) -> None:
        self.runtime = runtime
        self._levels = MappingProxyType(dict(levels))

    @classmethod
    def for_runtime(cls, runtime: str) -> Capabilities:
        levels = _TABLE.get(runtime, {})
        return cls(runtime, {cap: levels.get(cap, Level.UNKNOWN) for cap in Cap})

    def level(self, cap: Cap) -> Level:
        return self._levels.get(cap, Level.UNKNOWN)

    def supports(self, cap: Cap) -> bool:
        return self.level(cap) in (Level.YES, Level.PARTIAL)

    def require(self, cap: Cap) -> None:
        """Raise :class:`UnsupportedCapabilityError` unless ``cap`` is at least partial."""
        if not self.supports(cap):
            raise UnsupportedCapabilityError(self.runtime, cap.value, self.level(cap).value)

    def narrow(self, **observed: Level) -> Capabilities:
        """A copy where observed levels replace the table's (never widening beyond it)."""
        order = [Level.NO, Level.UNKNOWN, Level.PARTIAL, Level.YES]
        levels = dict(self._levels)
        for name, level in observed.items():
            cap = Cap(name)
            current = levels.get(cap, Level.UNKNOWN)
            keep_current = current != Level.UNKNOWN and order.index(level) > order.index(current)
            levels[cap] = current if keep_current else level
        return Capabilities(self.runtime, levels)

    def as_dict(self) -> dict[str, str]:
        return {cap.value: level.value for cap, level in self._levels.items()}
