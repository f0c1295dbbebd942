"""The guard: which of a project's environments a tool call touches, and what to answer.

Per project, environments (local / test / live) each have an access level (none / read /
ask / full) and references to how they are reached — kubectl contexts, ssh hosts, database
hosts, URLs, terraform workspaces… (names, never a secret). :func:`decide` reads one tool
call and returns a :class:`Verdict` (deny, ask or warn, with the reason) or ``None``. The
guard never answers "allow": it only narrows what the agent's own permissions allow.
Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from relay.core import guard_fs
from relay.core.errors import ConfigError
from relay.core.guard_rules import Touch, touches
from relay.core.guard_shell import Command, from_argv, parse
from relay.core.redact import scrub

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
    #: folders a session may write in besides its worktree (the system's temporary folder)
    scratch: tuple[str, ...] = ()


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


# -- deciding ------------------------------------------------------------------------------

_STRENGTH = {"deny": 3, "ask": 2, "warn": 1}
#: tools whose input holds a shell command (Claude's Bash, Codex's shell/exec, ACP's execute,
#: Gemini's run_shell_command, Relay's own HTTP tool loop's run_command)
SHELL_TOOLS = frozenset({"bash", "shell", "exec", "exec_command", "local_shell", "execute",
                         "run_command", "run_shell_command", "terminal", "command"})
#: tools that write or delete the file(s) their input names
WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "notebookedit", "write_file", "edit_file",
                         "replace", "write_new_file", "delete", "move", "apply_patch"})
#: tools that fetch the URL their input names (a read)
FETCH_TOOLS = frozenset({"webfetch", "web_fetch", "fetch", "read_url"})
_LEVEL_TAIL = {
    "none": "no access, refused",
    "read": "read-only access, a change is refused",
    "ask": "needs the owner's approval",
    "full": "full access, but this changes a live environment",
}
_REF_LABEL = {"kube_context": "kube context", "ssh_host": "host", "db_host": "database host",
              "url": "URL", "terraform_workspace": "terraform workspace",
              "pulumi_stack": "pulumi stack", "aws_profile": "aws profile",
              "gcp_project": "gcp project"}
_REF_FIELDS: dict[str, tuple[str, ...]] = {
    "kube_context": ("kube_contexts",), "ssh_host": ("ssh_hosts", "hosts"),
    "db_host": ("db_hosts", "hosts"), "url": ("urls", "hosts"),
    "terraform_workspace": ("terraform_workspaces",), "pulumi_stack": ("pulumi_stacks",),
    "aws_profile": ("aws_profiles",), "gcp_project": ("gcp_projects",)}


def decide(policy: GuardPolicy, tool_name: str, tool_input: Mapping[str, Any],
           cwd: str | None) -> Verdict | None:
    """The guard's answer to one tool call: the strongest verdict of every rule, or None.

    ``tool_name`` is the agent's (Claude's ``Bash``/``Write``/``Edit``/``WebFetch``…, Codex's
    and ACP's ``shell``/``exec``/``execute``, the HTTP tool loop's ``run_command``/
    ``write_file``…); a tool with a ``command`` in its input is read as a shell command
    whatever its name. Relative paths are taken from ``cwd``, else the worktree."""
    verdicts: list[Verdict] = []
    base = cwd or policy.worktree or policy.repo
    name = tool_name.strip().lower()
    command = _command_of(tool_input)
    if command is not None or name in SHELL_TOOLS:
        commands = _commands(command)
        verdicts += _flagged(guard_fs.command_verdicts(policy, commands, base))
        for cmd in commands:
            verdicts += _env_verdicts(policy, touches(cmd))
    if name in WRITE_TOOLS:
        for path in _paths_of(tool_input):
            verdicts += _flagged(guard_fs.write_verdicts(policy, tool_name, path, base,
                                                         delete=name in ("delete", "move")))
    url = tool_input.get("url")
    if name in FETCH_TOOLS and isinstance(url, str):
        verdicts += _env_verdicts(policy, [Touch("env.http", "url", url, False, tool_name)])
    if not verdicts:
        return None
    best = max(verdicts, key=lambda v: _STRENGTH[v.decision])
    return Verdict(best.decision, scrub(best.reason), best.rule, best.environment)


def _flagged(flags: list[guard_fs.Flag]) -> list[Verdict]:
    return [Verdict(d, reason, rule) for d, reason, rule in flags]  # type: ignore[arg-type]


def _command_of(tool_input: Mapping[str, Any]) -> str | list[str] | None:
    for key in ("command", "cmd", "argv"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(w, str) for w in value):
            return [str(w) for w in value]
    return None


def _commands(command: str | list[str] | None) -> list[Command]:
    if command is None:
        return []
    return parse(command) if isinstance(command, str) else from_argv(command)


def _paths_of(tool_input: Mapping[str, Any]) -> list[str]:
    paths = [tool_input.get(k) for k in ("file_path", "notebook_path", "path", "destination",
                                         "new_path")]
    for loc in tool_input.get("locations") or ():
        if isinstance(loc, Mapping):
            paths.append(loc.get("path"))
    for p in tool_input.get("paths") or ():
        paths.append(p)
    return [p for p in paths if isinstance(p, str) and p.strip()]


def _env_verdicts(policy: GuardPolicy, found: list[Touch]) -> list[Verdict]:
    out: list[Verdict] = []
    for env in policy.environments:
        hits = [t for t in found if _reaches(env.refs, t)]
        if not hits:
            continue
        hit = next((t for t in hits if t.mutating), hits[0])
        decision: Decision | None = {"none": "deny", "ask": "ask"}.get(env.level)  # type: ignore[assignment]
        if env.level == "read" and hit.mutating:
            decision = "deny"
        if env.level == "full" and hit.mutating and env.kind == "live":
            decision = "warn"
        if decision is None:
            continue
        reason = (f"{hit.what} {'changes' if hit.mutating else 'reads'} "
                  f"{_REF_LABEL.get(hit.kind, hit.kind)} {hit.value} of environment "
                  f"\"{env.name}\" ({env.kind}, level {env.level}): {_LEVEL_TAIL[env.level]}.")
        out.append(Verdict(decision, reason, hit.rule, env.name))
    return out


def _reaches(refs: EnvRefs, touch: Touch) -> bool:
    for field_name in _REF_FIELDS.get(touch.kind, ()):
        for ref in getattr(refs, field_name):
            if _same(touch.kind, field_name, ref, touch.value):
                return True
    return False


def _same(kind: str, field_name: str, ref: str, value: str) -> bool:
    ref, value = ref.strip(), value.strip()
    if not ref or not value:
        return False
    if kind == "url":
        return _url_match(ref, value) if field_name == "urls" else _host_match(
            ref, _host(value))
    if kind in ("ssh_host", "db_host"):
        if "@" in ref:  # user@host: the whole destination
            return ref.lower() == value.lower()
        return _host_match(ref, value.rsplit("@", 1)[-1])
    if kind == "kube_context":  # a context name, or a kubeconfig file named after it
        if ref == value:
            return True
        base = value.rsplit("/", 1)[-1]
        return ("/" in value and (base == ref or base.rsplit(".", 1)[0] == ref)) or (
            "/" in ref and ref == value)
    if kind == "pulumi_stack":  # "prod" matches "acme/web/prod" and back
        return ref == value or (("/" in ref) != ("/" in value) and (
            ref.rsplit("/", 1)[-1] == value.rsplit("/", 1)[-1]))
    return ref == value


def _host(text: str) -> str:
    if "://" not in text:
        text = "//" + text
    try:
        return (urlsplit(text).hostname or "").rstrip(".")
    except ValueError:
        return ""


def _host_match(ref: str, host: str) -> bool:
    """``ref`` names ``host`` (``host``, ``host:port``, a URL, or ``.example.com`` for every
    subdomain); a name is compared whole, never as a prefix."""
    ref_host = _host(ref) if ("://" in ref or ":" in ref) else ref.rstrip(".")
    host = host.split(":", 1)[0] if host.count(":") == 1 else host
    ref_host, host = ref_host.lower(), host.lower().rstrip(".")
    if ref.startswith("."):
        return host.endswith(ref_host) or host == ref_host[1:]
    return bool(ref_host) and host == ref_host


def _url_match(ref: str, url: str) -> bool:
    """``url`` is ``ref`` or below it: same host (and port, when ``ref`` has one), then a
    path prefix that ends at a segment boundary."""
    try:
        r, u = urlsplit(ref if "://" in ref else "https://" + ref), urlsplit(url)
        if (r.hostname or "").lower() != (u.hostname or "").lower() or not r.hostname:
            return False
        if r.port is not None and r.port != u.port:
            return False
    except ValueError:
        return False
    prefix = r.path.rstrip("/")
    return u.path == prefix or u.path.startswith(prefix + "/") or not prefix


class PolicyGuard:
    """A :class:`Guard` over one fixed :class:`GuardPolicy`."""

    def __init__(self, policy: GuardPolicy) -> None:
        self.policy = policy

    def check(self, tool_name: str, tool_input: Mapping[str, Any],
              cwd: str | None) -> Verdict | None:
        return decide(self.policy, tool_name, tool_input, cwd)


def call_summary(tool_name: str, tool_input: Mapping[str, Any], limit: int = 200) -> str:
    """A scrubbed, one-line summary of a tool call for a :class:`GuardDecision` event."""
    command = _command_of(tool_input)
    if isinstance(command, list):
        command = " ".join(command)
    detail = command or next((str(tool_input[k]) for k in ("file_path", "notebook_path", "path",
                                                            "url") if k in tool_input), "")
    line = " ".join(f"{tool_name}: {detail}".split())
    line = scrub(line)
    return line if len(line) <= limit else line[:limit - 1] + "…"


# -- environments as JSON (the board's store and API) -------------------------------------

_REF_NAMES = tuple(f.name for f in fields(EnvRefs))


def check_refs(refs: EnvRefs) -> EnvRefs:
    """``refs`` when every value is a reference; a :class:`ConfigError` for one that looks
    like a secret (the scrubber would redact it) or is not a short, single-line name."""
    for name in _REF_NAMES:
        for value in getattr(refs, name):
            if not isinstance(value, str) or not value.strip() or len(value) > 500 \
                    or any(c in value for c in "\n\r\t"):
                raise ConfigError(f"The {name} reference {value!r} is not a name.",
                                  "Give a single-line name, host or URL (at most 500 "
                                  "characters).")
            if scrub(value) != value:
                raise ConfigError(f"The {name} reference {scrub(value)} holds a secret.",
                                  "Environments keep references only (a context name, a host, "
                                  "a URL without credentials): keep the secret in the vault or "
                                  "the tool's own configuration.")
    return refs


def env_refs_from_json(data: Mapping[str, Any] | str | None) -> EnvRefs:
    """:class:`EnvRefs` from its JSON (an object of lists of strings; unknown keys refused)."""
    if data is None or data == "":
        return EnvRefs()
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise ConfigError("An environment's references are not valid JSON.",
                              "Give an object such as {\"kube_contexts\": [\"prod\"]}.") from exc
    if not isinstance(data, Mapping):
        raise ConfigError("An environment's references must be a JSON object.",
                          f"Known keys: {', '.join(_REF_NAMES)}.")
    unknown = sorted(set(data) - set(_REF_NAMES))
    if unknown:
        raise ConfigError(f"Unknown environment reference kind(s): {', '.join(unknown)}.",
                          f"Known: {', '.join(_REF_NAMES)}.")
    values: dict[str, tuple[str, ...]] = {}
    for key, items in data.items():
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
            raise ConfigError(f"The {key} references must be a list of strings.")
        values[key] = tuple(dict.fromkeys(i.strip() for i in items))
    return check_refs(EnvRefs(**values))


def env_refs_to_json(refs: EnvRefs) -> dict[str, list[str]]:
    """The JSON of ``refs``: only the kinds that have a value."""
    return {name: list(getattr(refs, name)) for name in _REF_NAMES if getattr(refs, name)}


def environment_from_json(data: Mapping[str, Any]) -> Environment:
    name, kind, level = data.get("name"), data.get("kind"), data.get("level")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("An environment needs a name.", "For example \"prod\".")
    if kind not in ENV_KINDS:
        raise ConfigError(f"Unknown environment kind {kind!r}.", f"One of {', '.join(ENV_KINDS)}.")
    if level not in LEVELS:
        raise ConfigError(f"Unknown access level {level!r}.", f"One of {', '.join(LEVELS)}.")
    return Environment(name.strip(), kind, level, env_refs_from_json(data.get("refs")),
                       str(data.get("notes") or ""))


def environment_to_json(env: Environment) -> dict[str, Any]:
    return {"name": env.name, "kind": env.kind, "level": env.level,
            "refs": env_refs_to_json(env.refs), "notes": env.notes}
