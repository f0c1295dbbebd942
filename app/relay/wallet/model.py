"""Value types shared by every part of the wallet and by its views.

Every figure a user sees carries its **source** and its **age**: Relay's wallet must say how
sure it is. Sources, best first:

``official``  the provider said so (Claude's rate_limit_event / statusline rate_limits,
              Codex's token_count rate_limits, an API's rate-limit headers)
``recorded``  Relay's own sessions counted it (the runs and turn_completed events)
``estimate``  read from the CLI's transcripts, or computed (limits learned from history,
              costs from the price table)
``unknown``   nothing to go on; views show "—", never 0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Source = Literal["official", "recorded", "estimate", "unknown"]
Confidence = Literal["high", "medium", "low", "none"]
#: the limit windows Relay tracks; providers' own names map onto these
WindowKind = Literal["five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet", "other"]

FIVE_HOURS_MS = 5 * 3600 * 1000
SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token counts of one or many model calls (all known: transcripts always say)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        """Every token the call consumed — ccusage's ``totalTokens`` (reasoning is inside output)."""
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.output + other.output,
                      self.cache_read + other.cache_read, self.cache_write + other.cache_write,
                      self.reasoning + other.reasoning)


@dataclass(frozen=True, slots=True)
class UsageEntry:
    """One de-duplicated model call read from a transcript, with where it was read.

    The index keeps these numbers and the pointer (file, byte offset), never the text.
    """

    ts_ms: int
    model: str | None
    tokens: Tokens
    #: the cost the CLI itself wrote (Pi does), else None → estimated from the price table
    cost_usd: float | None = None
    #: what makes it unique across files (Claude: message.id + requestId); None: the offset does
    dedupe_key: str | None = None
    #: the agent's own session/thread id, and the folder it worked in
    session_id: str | None = None
    project: str | None = None
    #: byte offset of the line in its file
    offset: int = 0


@dataclass(frozen=True, slots=True)
class LimitSnapshot:
    """An official limit reading for one account (``entry``) and window."""

    entry: str
    window: WindowKind
    observed_ms: int
    #: 0–100 when the provider says how much is used (Codex, statusline); None when it does not
    used_percent: float | None = None
    resets_at_ms: int | None = None
    window_minutes: int | None = None
    #: allowed / allowed_warning / rejected (Claude's rate_limit_event), None when not given
    status: str | None = None
    #: where it came from, shown to the user: "claude rate_limit_event", "codex token_count"…
    origin: str = ""


@dataclass(frozen=True, slots=True)
class Figure:
    """A number with its source and the time it was observed (age = now − observed)."""

    value: float | None
    source: Source = "unknown"
    observed_ms: int | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class WindowView:
    """One limit window of one account, as the views show it."""

    kind: WindowKind
    #: 0–1 of the window's limit used now
    used: Figure
    #: tokens counted in the window (transcripts ∪ Relay's sessions)
    tokens: Figure
    #: 0–1 projected at the window's reset if the burn goes on
    projected: Figure
    resets_at: Figure
    #: when the window runs out at the current burn (None: not before its reset)
    exhausts_at_ms: int | None
    confidence: Confidence
    why: str = ""


@dataclass(frozen=True, slots=True)
class BudgetState:
    scope: str          # "day", "week", "session:<id>", "task:<run id>"
    limit_usd: float
    spent_usd: float
    state: Literal["ok", "warn", "over"]


@dataclass(frozen=True, slots=True)
class AccountView:
    """Everything the Wallet dock and ``relay-cli wallet`` show for one account."""

    entry: str
    provider: str
    label: str | None
    auth_kind: str
    config_dir: str | None
    preferred: bool
    paused: bool
    #: a registered account (else a CLI's default login or an unregistered chain entry)
    registered: bool = True
    windows: list[WindowView] = field(default_factory=list)
    #: tokens per minute over the recent burn (recorded ∪ estimate)
    burn_tpm: Figure = Figure(None)
    cost_today: Figure = Figure(None)
    cost_week: Figure = Figure(None)
    budgets: list[BudgetState] = field(default_factory=list)
    #: an open circuit breaker (until when, why), or None
    breaker_until_ms: int | None = None
    breaker_reason: str | None = None
    #: counted problems of the last index refresh for this account's files
    warnings: int = 0


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """What the wallet tells a session: before a run, "stop" (no new work), "handoff" (skip
    this entry: a paused account) or "avoid" (skip it while another entry can take the work);
    during a run, "handoff" (pause at the next safe point and hand on), "stop" or "warn"."""

    action: Literal["handoff", "avoid", "stop", "warn"]
    reason: str


@dataclass(frozen=True, slots=True)
class WindowHistory:
    """One limit window's course since its start, for the Wallet's plots."""

    kind: WindowKind
    start_ms: int | None
    resets_at_ms: int | None
    #: "share": 0–1 of the limit (official readings, or tokens over a learned limit);
    #: "tokens": tokens counted in the window (no limit known: no limit line either)
    unit: Literal["share", "tokens"]
    #: (ts_ms, value), oldest first
    points: list[tuple[int, float]] = field(default_factory=list)
    source: Source = "unknown"


@dataclass(frozen=True, slots=True)
class DayCost:
    """What one local day cost on an account."""

    day: str  # ISO date
    cost: Figure


@dataclass(frozen=True, slots=True)
class AccountHistory:
    """What the Wallet's plots of one account show, beside its :class:`AccountView`."""

    entry: str
    now_ms: int
    windows: list[WindowHistory] = field(default_factory=list)
    #: (bucket start ms, tokens per minute) over the last five hours, oldest first
    burn: list[tuple[int, float]] = field(default_factory=list)
    #: the last days, oldest first (today last)
    days: list[DayCost] = field(default_factory=list)
    #: the day budget that applies: the account's own, else all of Relay's work's; None: none
    day_budget_usd: float | None = None
    day_budget_scope: str = ""
