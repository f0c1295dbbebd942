"""Value types of detection: a live agent process, a session found on disk, its intent.

A detected session's ``id`` is ``<runtime>:<agent session id>`` — stable across scans, so
the watcher can say "new" exactly once and the CLI can adopt by it (a unique prefix of the
agent session id is enough there).

States (``DetectState``):

``working``      its process is alive and it wrote within the last minute
``needs_input``  it waits on the user: a question or a permission it asked for, unanswered
``blocked``      its last turn ended on a usage / rate limit (``resets_at_ms`` when known)
``idle``         its process is alive, its last turn finished, nothing asked
``ended``        no process; its last turn finished
``crashed``      no process; it stopped mid-turn (a call without a result, a prompt unanswered)
``unknown``      not enough could be read to say
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from relay.wallet.model import Tokens

DetectState = Literal["working", "needs_input", "blocked", "idle", "ended", "crashed", "unknown"]
PlanStatus = Literal["completed", "in_progress", "pending"]

#: runtimes whose sessions Relay can read (the editors' stores are read-only sources)
RUNTIMES = ("claude", "codex", "gemini", "pi", "cline", "copilot", "continue", "cursor")


@dataclass(frozen=True, slots=True)
class LiveProcess:
    """A running agent process."""

    pid: int
    runtime: str
    cmdline: tuple[str, ...]
    cwd: str | None
    started_ms: int
    ppid: int | None
    #: the configuration folder it runs with (CLAUDE_CONFIG_DIR, CODEX_HOME…) when readable
    config_dir: str | None = None
    #: the wallet account that folder belongs to (provider:label), else the bare provider
    entry: str | None = None
    #: the session it is working on, when the runtime lets Relay tell
    agent_session_id: str | None = None
    #: what could not be read about it (its environment as another user's, …)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlanEntry:
    text: str
    status: PlanStatus


@dataclass(slots=True)
class Intent:
    """What the agent was doing, lifted from its own record of the session."""

    initial_prompt: str = ""
    plan: list[PlanEntry] = field(default_factory=list)
    tasks_remaining: list[str] = field(default_factory=list)
    files_touched: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    mcp_servers: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    #: the agent's last words (its last assistant text), clipped
    last_message: str = ""


@dataclass(slots=True)
class DetectedSession:
    """One agent session found on this machine."""

    runtime: str
    agent_session_id: str
    #: the account it ran as (provider:label for a wallet account's folder, else the provider)
    entry: str
    #: the file (or database, folder) it was read from
    source: Path
    cwd: str | None = None
    #: the git repository holding ``cwd`` (None: not in one, or unknown)
    repo: str | None = None
    started_ms: int | None = None
    last_activity_ms: int | None = None
    state: DetectState = "unknown"
    #: why that state, in words ("last turn ended on a usage limit; resets 14:05")
    why: str = ""
    resets_at_ms: int | None = None
    intent: Intent = field(default_factory=Intent)
    #: from the wallet's usage index (never a second reader); None: not indexed
    usage: Tokens | None = None
    process: LiveProcess | None = None
    #: what could not be read and why (the scan goes on)
    problems: list[str] = field(default_factory=list)
    #: the state is what its hooks last reported (exact), not lifted from its transcript
    hooked: bool = False
    #: its whole intent is lifted (False: only what the table shows — the first prompt, the
    #: last words, the models seen — from the head and tail of its file; ``Detector.find``
    #: lifts the rest)
    lifted: bool = True

    @property
    def id(self) -> str:
        return f"{self.runtime}:{self.agent_session_id}"
