"""The guard: which of a project's environments a tool call touches, and what to answer.

Per project, environments (local / test / live) each have an access level (none / read /
ask / full) and references to how they are reached — kubectl contexts, ssh hosts, database
hosts, URLs, terraform workspaces… (names, never a secret). :func:`decide` reads one tool
call and returns a :class:`Verdict` (deny, ask or warn, with the reason) or ``None``. The
guard never answers "allow": it only narrows what the agent's own permissions allow.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

EnvKind = Literal["local", "test", "live"]
Level = Literal["none", "read", "ask", "full"]
Decision = Literal["deny", "ask", "warn"]
ENV_KINDS: tuple[EnvKind, ...] = ("local", "test", "live")
LEVELS: tuple[Level, ...] = ("none", "read", "ask", "full")


@dataclass(frozen=True)
class EnvRefs:
    """How an environment is reached: references only (names, hosts, URL prefixes)."""

    kube_contexts: tuple[str, ...] = ()
    ssh_hosts: tuple[str, ...] = ()
    db_hosts: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    terraform_workspaces: tuple[str, ...] = ()
    pulumi_stacks: tuple[str, ...] = ()
    aws_profiles: tuple[str, ...] = ()
    gcp_projects: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Environment:
    name: str
    kind: EnvKind
    level: Level
    refs: EnvRefs = field(default_factory=EnvRefs)
    notes: str = ""


@dataclass(frozen=True)
class GuardPolicy:
    """A project's environments and the worktree a session may write in."""

    environments: tuple[Environment, ...] = ()
    repo: str | None = None
    worktree: str | None = None


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    #: the rule that matched, e.g. "env.kubectl", "git.force_push", "fs.outside_worktree"
    rule: str
    environment: str | None = None


class Guard(Protocol):
    """What a runtime or the session runner asks before Relay lets a tool call run."""

    def check(self, tool_name: str, tool_input: Mapping[str, Any],
              cwd: str | None) -> Verdict | None: ...
