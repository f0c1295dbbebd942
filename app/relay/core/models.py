"""Records the engine hands to front ends (sessions, runs) and what they ask for."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from relay.core.errors import TaskTooLargeError
from relay.core.events import DeliveredHow, MessageKind, MessageMode, MessageState, Usage
from relay.core.fields import Delay as Delay  # the field types: callers import them here too
from relay.core.fields import Seconds as Seconds
from relay.core.fields import Usd as Usd
from relay.core.states import FINAL_STATES, SessionState

#: the most a task (or a follow-up prompt) may be, in UTF-8 bytes: it is stored with the
#: session and goes into each prompt, contract and briefing; large context belongs in a
#: file in the repository, which the agent reads
MAX_TASK_BYTES = 1_000_000
#: the validation context key that says a model is read back from the store (not new input)
STORED = "stored"


def check_task(task: str, what: str = "The task") -> str:
    """``task`` when it is within :data:`MAX_TASK_BYTES`; else a TaskTooLargeError (every
    front end's task reaches Relay through this: a :class:`SessionSpec` calls it)."""
    if len(task) > MAX_TASK_BYTES // 4 and len(task.encode("utf-8", "surrogatepass")) > MAX_TASK_BYTES:
        size = len(task.encode("utf-8", "surrogatepass"))
        raise TaskTooLargeError(
            f"{what} is {size:,} bytes; a task is at most {MAX_TASK_BYTES:,} (1 MB).",
            "Put the large context in a file in the repository and name the file in the task.")
    return task


class PermissionPolicy(StrEnum):
    """What an agent may do in its worktree.

    * ``read_only`` — read and run read-only commands; no edits.
    * ``workspace`` — (default) edit files and run commands in its worktree.
    * ``full`` — no restrictions (Claude's bypass mode, Codex without sandbox).
    """

    READ_ONLY = "read_only"
    WORKSPACE = "workspace"
    FULL = "full"


LimitPolicy = Literal["auto", "handoff", "wait"]
#: who answers an agent's permission requests (relay.sessions.approvals)
ApprovalPolicy = Literal["ask", "read_only", "deny"]




class SessionMessage(BaseModel):
    """A message to a session's agent: queued, edited, cancelled or delivered."""

    id: str
    session_id: str
    text: str
    mode: MessageMode = "queue"
    kind: MessageKind = "message"
    #: who sent it: "window", "cli", "tui", "mcp", "board", "api", "review"
    source: str = "api"
    state: MessageState = "queued"
    how: DeliveredHow | None = None
    #: file or image paths the user attached (references; the agent reads them)
    attachments: list[str] = Field(default_factory=list)
    created_at: datetime
    delivered_at: datetime | None = None
    #: the run that carried it (delivered)
    run_id: str | None = None
    error: str | None = None


class TalkAbilities(BaseModel):
    """What a user can do with a session now: what the composer offers."""

    session_id: str
    runtime: str
    #: a turn is running (a message is queued unless steered or interrupting)
    busy: bool
    #: a message continues the session (a follow-up; false only when nothing can run it)
    can_send: bool
    #: capability levels of the current runtime: "yes" | "partial" | "no" | "unknown"
    steer: str
    interrupt: str
    fork: str
    #: why steer / interrupt / fork / send are not offered, one sentence each
    why_not: dict[str, str] = Field(default_factory=dict)


class ForkOrigin(BaseModel):
    """Where a forked session branched from."""

    session_id: str
    #: the parent's stream row (event id) or commit the fork was taken at
    at_event: int | None = None
    at_commit: str | None = None
    #: the snapshot commit the fork's worktree starts from
    sha: str | None = None
    #: turns of the parent's conversation the fork carries (None: all)
    turns: int | None = None
    #: the parent's agent session and runtime (the conversation to copy)
    agent_session_id: str | None = None
    runtime: str | None = None
    #: the runtime's own point to fork at (Claude: the transcript uuid of the last message
    #: kept, for --resume-session-at); None: the whole conversation
    resume_at: str | None = None
    #: "conversation" (the runtime's own fork) or "brief" (Relay's signed brief)
    how: Literal["conversation", "brief"] = "brief"


class ForkResult(BaseModel):
    """A fork started: the new session, its branch and commit, and how it carries on."""

    session_id: str
    parent_id: str
    branch: str | None = None
    sha: str | None = None
    how: Literal["conversation", "brief"]
    turns: int | None = None


class SessionSpec(BaseModel):
    """What a user asks for when starting a session."""

    model_config = ConfigDict(frozen=True)

    repo: Path
    task: str = Field(min_length=1)
    runtime: str = "demo"
    model: str | None = None
    #: the provider chain, ``runtime[:account]`` entries in order; empty means just
    #: ``runtime``. When an entry hits a limit the task is handed to the next one.
    chain: list[str] = Field(default_factory=list)
    worktree: bool = True
    #: start the worktree from the repository's current state: its uncommitted changes
    #: (tracked and untracked, not ignored) are copied in; the user's files are only read
    carry_uncommitted: bool = False
    #: the detected session (``runtime:agent-session-id``) this session adopted
    adopted_from: str | None = None
    #: start the worktree at this commit instead of the repository's HEAD (a pipeline
    #: step starts from its dependencies' results)
    base_commit: str | None = None
    #: hand off to the next chain entry when a run fails without a limit too (a pipeline
    #: node's fallback: "fallback on snag"); otherwise such a failure ends the session
    fallback_on_failure: bool = False
    #: the pipeline step this session runs (``<run-id>/<node-id>``)
    pipeline_step: str | None = None
    #: ``plan``: the session answers the pipeline planner (relay.pipelines.planner)
    purpose: Literal["task", "plan"] = "task"
    permission: PermissionPolicy = PermissionPolicy.WORKSPACE
    #: who answers the agent's permission requests: ``ask`` the user, approve the
    #: ``read_only`` ones by themselves (ask about the rest), or ``deny`` them all. The
    #: default suits unattended runs (pipelines, MCP, scripts: nobody could answer); the
    #: window and a terminal ``relay-cli run`` ask
    approvals: ApprovalPolicy = "deny"
    #: demo only: ask permission before writing (a simulated NeedsInput)
    demo_ask: bool = False
    setup_command: list[str] | None = None
    #: demo only: hit a simulated usage limit after this many turns.
    demo_limit_after: int | None = None
    #: the demo reports these official percentages of its five-hour window, one per turn
    #: (shows the wallet's pre-emptive handoff; first chain entry only)
    demo_quota: list[float] = Field(default_factory=list)
    #: acceptance commands (argument arrays) the verifier gate runs in the worktree
    #: after the agent finishes and after each resume; the session is only
    #: ``completed`` when every one exits 0.
    verify: list[list[str]] = Field(default_factory=list)
    #: what to do when an entry hits a limit (see relay.sessions.decision):
    #: ``auto`` waits for a reset that is near and hands off otherwise; ``handoff``
    #: never waits while the chain has a next entry; ``wait`` never hands off.
    on_limit: LimitPolicy = "auto"
    #: ``auto``: wait instead of handing off when the reset is at most this far away.
    wait_if_within_s: Delay = 300.0
    #: never wait longer than this for a reset (then hand off or fail).
    max_wait_s: Delay = 5 * 3600.0
    #: hand off pre-emptively, at the next safe point, when the provider warns that the
    #: account is close to its limit (a non-blocking limit event; the wallet's burn-rate
    #: forecast will raise the same request).
    preempt: bool = False
    #: stop new work once this session's cost reaches this many USD (warn at 80 %). Costs
    #: are what the CLI reported, else estimates from the price table (relay.wallet).
    budget_usd: Usd | None = None
    #: the same for each run of the session (one prompt on one entry: a task)
    task_budget_usd: Usd | None = None
    #: a fork: the session this one branched from and where (relay.engine.fork); its first
    #: run continues a copy of the parent's conversation where the runtime can
    fork_of: ForkOrigin | None = None

    @field_validator("task", "model", "setup_command", "verify", "chain")
    @classmethod
    def _carried_on_a_command_line(cls, value: object) -> object:
        """Text an agent's or a check's command line carries: no NUL byte (no operating
        system can pass one) and no lone surrogate (not text: it cannot be stored or
        encoded), refused before anything is created."""
        _passable(value)
        return value

    @field_validator("task")
    @classmethod
    def _bounded_task(cls, task: str, info: ValidationInfo) -> str:
        if isinstance(info.context, dict) and info.context.get(STORED):
            return task  # a row an older build stored: it still reads (the limit is for new work)
        return check_task(task)


def _passable(value: object) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("it contains a NUL byte (\\0), which no command line can carry; "
                             "remove it")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("it is not valid unicode text (a lone surrogate)") from None
    if isinstance(value, list):
        for item in value:
            _passable(item)


def chain_of(spec: SessionSpec) -> list[str]:
    """The effective provider chain of a session (at least its runtime)."""
    return list(spec.chain) or [spec.runtime]


def entry_runtime(entry: str) -> str:
    """``"claude:work"`` → ``"claude"``."""
    return entry.partition(":")[0]


#: the runtimes that run a simulation (the demo); each adapter's ``simulated`` flag agrees
#: (tests/runtimes/test_registry_facts.py)
SIMULATED_RUNTIMES = frozenset({"demo"})


def simulated_entry(entry: str) -> bool:
    """Whether a chain entry (``runtime[:account]``) runs a simulation (the demo): its
    accounts, limits and breakers are make-believe and belong to the session that ran them."""
    return entry_runtime(entry) in SIMULATED_RUNTIMES


class SessionRow(BaseModel):
    """A session as the store has it."""

    model_config = ConfigDict(frozen=True)

    id: str
    repo: str
    task: str
    runtime: str
    model: str | None
    state: SessionState
    permission: PermissionPolicy
    workdir: str | None
    branch: str | None
    agent_session_id: str | None
    reason: str | None
    simulated: bool
    created_at: datetime
    updated_at: datetime
    usage: Usage = Field(default_factory=Usage)
    #: ``waiting``: when Relay resumes it
    wait_until: datetime | None = None
    #: tool calls the agent asked for and was refused (its permission policy, a rejected
    #: question), over all its runs: shown with the end state, never a silent success
    refused_calls: int = 0
    #: when it was archived (left out of the lists unless asked for); None: it is not
    archived_at: datetime | None = None
    #: the chain entries (``provider[:account]``) its runs used, in order, repeats folded
    entries: list[str] = Field(default_factory=list)
    #: the entry an unfinished handoff takes it to
    handing_to: str | None = None
    #: the pipeline step it runs (``<run-id>/<node-id>``) and that run's name
    pipeline_step: str | None = None
    pipeline_name: str | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINAL_STATES


class RunRow(BaseModel):
    """One agent process attempt within a session."""

    model_config = ConfigDict(frozen=True)

    id: str
    session_id: str
    attempt: int
    runtime: str
    model: str | None
    agent_session_id: str | None = None
    started_at: datetime
    ended_at: datetime | None
    outcome: str | None
    exit_code: int | None
    usage: Usage
    refused_calls: int = 0
    #: the chain entry it ran on (``provider[:account]``); None for runs from before entries
    entry: str | None = None
