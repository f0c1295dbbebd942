"""Relay's hooks and MCP server in a Claude Code configuration folder: plan, apply, check, remove.

Pure file work (no Qt, no engine): ``relay-cli setup claude`` and, through the engine's
:class:`~relay.board.integrations.Integrations` and the API, the window's Integrations page
use it.

**Hooks** go into ``<config>/settings.json`` → ``hooks.<Event>``: one group per event of
:data:`HOOK_EVENTS` holding one command hook in exec form (``command`` + ``args``: Claude Code
2.1.197 spawns it directly, no shell, so no path needs quoting) that runs the hook client
(:mod:`relay.cli.hook_client`) with the data folder — never a token. An entry is Relay's when
its command line contains one of :data:`MARKERS`; everything else in the file is the
user's and is left as it is (:mod:`relay.board.settings_file` keeps its layout).

**Permissions**: Claude Code calls an MCP tool only when it is allowed (print mode refuses it
otherwise, "you haven't granted it yet"). Relay adds one ``permissions.allow`` rule per board
tool (:data:`ALLOW_RULES`, ``mcp__relay__board_projects``, …) — never ``mcp__relay`` as a whole:
Relay's other tools start sessions and stay behind Claude's prompt. A rule is Relay's by its
name (``mcp__relay__board_…``); the user's own rules stay where they are.

**The MCP server** is registered at user scope the way ``claude mcp add-json --scope user``
does it (measured with 2.1.197): ``mcpServers.relay`` in the global state file — ``<config>/
.claude.json`` when Claude runs with ``CLAUDE_CONFIG_DIR`` (every Relay account does),
``~/.claude.json`` for the default ``~/.claude``, ``<config>/.config.json`` where that legacy
file exists — as ``{"type": "http", "url": "<host>/mcp", "headersHelper": "<hook client
--headers>"}``. Claude runs the helper (through a shell) each time it connects, and it prints
the bearer header from the data folder's ``api-token``. User-scope servers need no workspace
trust for their helper (project and local scope do).

Apply backs each file up first and writes only what changes (a second apply writes nothing);
remove takes out Relay's entries only, and where the rest is exactly what a backup holds it
writes the backup's bytes back (:meth:`SettingsFile.restorable`). Check only reads.
"""

from __future__ import annotations

import copy
import functools
import os
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from relay.board.model import TOOL_NAMES
from relay.board.settings_file import SettingsFile
from relay.core.agent_homes import CLAUDE_ENV, claude_home, user_home
from relay.core.errors import AccountError, SetupError
from relay.core.hostfile import DEFAULT_PORT, PORT_ENV

if TYPE_CHECKING:
    from relay.core.accounts import Account

#: the hook events Relay listens to (every one Claude Code 2.1.197 has that the board reads)
HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
    "Notification", "PermissionRequest", "Stop", "StopFailure", "SessionEnd")
#: seconds Claude Code gives one hook run (the client itself gives up after 0.8 s)
HOOK_TIMEOUT_S = 5
#: the user-scope MCP server's name
MCP_NAME = "relay"
HOOK_MODULE = "relay.cli.hook_client"
#: the permission rules Relay adds: the board's tools, one rule each
ALLOW_RULES: tuple[str, ...] = tuple(f"mcp__{MCP_NAME}__{name}" for name in TOOL_NAMES)
#: what makes an allow rule Relay's (a board tool of the server named relay)
_RULE_PREFIX = f"mcp__{MCP_NAME}__board_"
#: the plan's and the check's name of the allow rules
ALLOW_WHAT = "allow board tools"
#: what makes a hook command Relay's
MARKERS: tuple[str, ...] = (HOOK_MODULE, "relay-cli hook", "relay-cli.exe hook")
#: what makes an MCP server named relay Relay's own (this one, or the stdio ``relay-cli mcp``)
_SERVER_MARKERS: tuple[str, ...] = (*MARKERS, "relay-cli", "relay.cli")

Action = Literal["add", "change", "keep", "remove", "absent", "conflict"]
#: "info": nothing to fix, only to know (the MCP server's URL while no host runs)
CheckState = Literal["ok", "info", "missing", "stale", "conflict"]


def default_url(env: Mapping[str, str] | None = None) -> str:
    """The URL a host of this machine listens on by default (``RELAY_PORT``, else 4748)."""
    raw = (os.environ if env is None else env).get(PORT_ENV, "").strip()
    port = int(raw) if raw.isdigit() and 0 < int(raw) <= 65535 else DEFAULT_PORT
    return f"http://127.0.0.1:{port}"


# -- where ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeTarget:
    """A Claude Code configuration folder and the global state file beside it."""

    config_dir: Path
    #: where user-scope MCP servers are (``.claude.json``)
    state_file: Path
    #: "default", an account entry (``claude:work``) or the folder given
    label: str

    @property
    def settings(self) -> Path:
        return self.config_dir / "settings.json"


def _state_file(config_dir: Path, explicit: bool, home: Path) -> Path:
    legacy = config_dir / ".config.json"
    if legacy.exists():
        return legacy
    return config_dir / ".claude.json" if explicit else home / ".claude.json"


def default_target(env: Mapping[str, str] | None = None, *,
                   home: Path | None = None) -> ClaudeTarget:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` (with ``~/.claude.json``)."""
    env = os.environ if env is None else env
    home = home or user_home(env)
    root = claude_home(env, home=home).root
    return ClaudeTarget(root, _state_file(root, bool(env.get(CLAUDE_ENV)), home), "default")


def folder_target(folder: Path, *, label: str | None = None,
                  env: Mapping[str, str] | None = None,
                  home: Path | None = None) -> ClaudeTarget:
    """A folder Claude Code runs with as ``CLAUDE_CONFIG_DIR`` — except the default
    ``~/.claude`` when the variable is unset, whose state is ``~/.claude.json``."""
    env = os.environ if env is None else env
    home = home or user_home(env)
    folder = folder.expanduser().absolute()
    default = default_target(env, home=home)
    if not env.get(CLAUDE_ENV) and _same_path(folder, default.config_dir):
        return ClaudeTarget(folder, default.state_file, label or str(folder))
    return ClaudeTarget(folder, _state_file(folder, True, home), label or str(folder))


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a.absolute() == b.absolute()


def claude_accounts(accounts: Iterable[Account]) -> list[Account]:
    return [a for a in accounts if a.provider == "claude"]


def account_target(account: Account, *, env: Mapping[str, str] | None = None,
                   home: Path | None = None) -> ClaudeTarget:
    """The folder a Claude account runs with (its own, else the default one)."""
    if account.config_dir is None:
        target = default_target(env, home=home)
        return ClaudeTarget(target.config_dir, target.state_file, account.entry)
    return ClaudeTarget(Path(account.config_dir), _state_file(Path(account.config_dir), True,
                                                              home or user_home(env)),
                        account.entry)


def find_account(accounts: Iterable[Account], name: str) -> Account:
    """The Claude account ``name`` (``work`` or ``claude:work``)."""
    label = name.removeprefix("claude:")
    found = [a for a in claude_accounts(accounts) if a.label == label]
    if not found:
        known = ", ".join(a.entry for a in claude_accounts(accounts)) or "none"
        raise AccountError(f"No Claude account {name!r} in the wallet (registered: {known}).",
                           "List them with `relay-cli accounts list`.")
    return found[0]


def unique_targets(targets: Iterable[ClaudeTarget]) -> list[ClaudeTarget]:
    """One target per configuration folder (two accounts may share one)."""
    seen: set[Path] = set()
    out = []
    for target in targets:
        key = target.config_dir.absolute()
        if key not in seen:
            seen.add(key)
            out.append(target)
    return out


# -- what ------------------------------------------------------------------------------------


def _frozen_cli(executable: str) -> str:
    name = "relay-cli.exe" if sys.platform.startswith("win") else "relay-cli"
    return str(Path(executable).with_name(name))


@functools.cache
def _module_args(executable: str) -> tuple[str, ...]:
    """``-m relay.cli.hook_client`` when ``executable -I`` imports this very Relay (an
    installed one); else code that puts this source tree on the path first (``-I`` ignores
    ``PYTHONPATH``), as the permission bridge does."""
    root = Path(__file__).resolve().parents[1]  # the relay package
    probe = "import relay, sys; sys.stdout.write(relay.__file__)"
    try:
        done = subprocess.run([executable, "-I", "-c", probe], capture_output=True, text=True,
                              timeout=15, check=False)
        if done.returncode == 0 and Path(done.stdout).resolve().parent == root:
            return ("-m", HOOK_MODULE)
    except (OSError, subprocess.SubprocessError):
        pass
    code = (f"import sys; sys.path.insert(0, {str(root.parent)!r}); "
            f"from {HOOK_MODULE} import main; sys.exit(main())")
    return ("-c", code)


@dataclass(frozen=True)
class Wiring:
    """What Relay writes for one data folder and host URL."""

    data_dir: Path
    url: str
    #: the hook client's argument list (``hook_argv[0]`` is the executable)
    hook_argv: tuple[str, ...]

    @classmethod
    def make(cls, data_dir: Path, url: str | None = None, *, frozen: bool | None = None,
             executable: str | None = None) -> Wiring:
        frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
        executable = executable or sys.executable
        data = str(Path(data_dir).absolute())
        if frozen:
            argv: tuple[str, ...] = (_frozen_cli(executable), "hook", "claude")
        else:
            argv = (executable, "-I", *_module_args(executable))
        return cls(Path(data), (url or default_url()).rstrip("/"), (*argv, "--data-dir", data))

    def hook(self) -> dict[str, Any]:
        return {"type": "command", "command": self.hook_argv[0], "args": list(self.hook_argv[1:]),
                "timeout": HOOK_TIMEOUT_S}

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    @property
    def headers_helper(self) -> str:
        """The helper as a shell command line (Claude runs it with ``shell: true``)."""
        argv = [*self.hook_argv, "--headers"]
        if sys.platform.startswith("win"):
            return subprocess.list2cmdline(argv)
        return shlex.join(argv)

    def server(self) -> dict[str, Any]:
        return {"type": "http", "url": self.mcp_url, "headersHelper": self.headers_helper}


def _command_line(entry: Any) -> str:
    if not isinstance(entry, dict):
        return ""
    parts = [entry.get("command"), *(entry.get("args") or [])] if isinstance(
        entry.get("args") or [], list) else [entry.get("command")]
    return " ".join(p for p in parts if isinstance(p, str))


def is_relay_hook(hook: Any) -> bool:
    """Whether a hook entry is Relay's (its command line holds a marker)."""
    line = _command_line(hook)
    return any(marker in line for marker in MARKERS)


def is_relay_rule(rule: Any) -> bool:
    """Whether a ``permissions.allow`` rule is Relay's (it names a board tool)."""
    return isinstance(rule, str) and rule.startswith(_RULE_PREFIX)


def is_relay_server(server: Any) -> bool:
    if not isinstance(server, dict):
        return False
    line = " ".join([_command_line(server), str(server.get("headersHelper", ""))])
    return any(marker in line for marker in _SERVER_MARKERS)


# -- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanItem:
    """One entry Relay adds, changes, keeps or removes."""

    what: str          # "hook SessionStart" | "mcp server relay"
    file: str
    action: Action
    detail: str = ""


@dataclass(frozen=True)
class Plan:
    target: ClaudeTarget
    remove: bool
    items: list[PlanItem]

    @property
    def changes(self) -> bool:
        return any(i.action in ("add", "change", "remove") for i in self.items)


@dataclass(frozen=True)
class Applied:
    plan: Plan
    #: the files written and the backups taken first (absolute paths)
    written: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)


def _hooks_of(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = settings.get("hooks")
    if hooks is None:
        return {}
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise SetupError(f"{path}: \"hooks\" is not an object of lists, as Claude Code "
                         "expects.", "Fix it (see Claude Code's hooks documentation), then run "
                         "the setup again; nothing was changed.")
    return hooks


def _relay_spots(groups: list[Any]) -> list[tuple[int, int]]:
    spots: list[tuple[int, int]] = []
    for g, group in enumerate(groups):
        inner = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(inner, list):
            spots.extend((g, h) for h, hook in enumerate(inner) if is_relay_hook(hook))
    return spots


def _drop(groups: list[Any], spots: list[tuple[int, int]]) -> list[Any]:
    """``groups`` without the hooks at ``spots`` (a group left empty goes too)."""
    out = []
    for g, group in enumerate(groups):
        gone = {h for gg, h in spots if gg == g}
        if not gone:
            out.append(group)
            continue
        kept = [hook for h, hook in enumerate(group["hooks"]) if h not in gone]
        if kept:
            out.append({**group, "hooks": kept})
    return out


def _merge_hooks(settings: dict[str, Any], wiring: Wiring | None, path: Path) -> list[PlanItem]:
    """Put Relay's hooks in ``settings`` (``wiring`` None: take them out); what changed."""
    hooks = _hooks_of(settings, path)
    items: list[PlanItem] = []
    wanted = wiring.hook() if wiring else None
    events = list(hooks) + [e for e in HOOK_EVENTS if e not in hooks and wiring]
    for event in events:
        groups = hooks.get(event, [])
        spots = _relay_spots(groups)
        want = wanted is not None and event in HOOK_EVENTS
        if want and len(spots) == 1:
            g, h = spots[0]
            group = groups[g]
            if group["hooks"][h] == wanted and group.get("matcher") in (None, "", "*"):
                items.append(PlanItem(f"hook {event}", str(path), "keep"))
                continue
            groups[g] = {**group, "hooks": [wanted if i == h else x
                                            for i, x in enumerate(group["hooks"])]}
            items.append(PlanItem(f"hook {event}", str(path), "change",
                                  f"was: {_command_line(group['hooks'][h])[:120]}"))
            continue
        left = _drop(groups, spots)
        if want:
            left.append({"hooks": [wanted]})
            items.append(PlanItem(f"hook {event}", str(path), "change" if spots else "add",
                                  "the hook client" if not spots else "moved to its own group"))
        elif spots:
            items.append(PlanItem(f"hook {event}", str(path), "remove"))
        else:
            continue
        if left:
            hooks[event] = left
        else:
            hooks.pop(event, None)
    if wiring is None:
        items.extend(PlanItem(f"hook {e}", str(path), "absent") for e in HOOK_EVENTS
                     if not any(i.what == f"hook {e}" for i in items))
    order = {f"hook {e}": n for n, e in enumerate(HOOK_EVENTS)}
    items.sort(key=lambda i: order.get(i.what, len(order)))
    if any(i.action in ("add", "change", "remove") for i in items):
        if hooks:
            settings["hooks"] = hooks
        else:  # Relay's were the last: no empty "hooks" left behind
            settings.pop("hooks", None)
    return items


def _allow_of(settings: dict[str, Any], path: Path) -> list[Any]:
    perms = settings.get("permissions")
    allow = perms.get("allow") if isinstance(perms, dict) else None
    if (perms is not None and not isinstance(perms, dict)) or (
            allow is not None and not isinstance(allow, list)):
        raise SetupError(f"{path}: \"permissions.allow\" is not a list in an object, as Claude "
                         "Code expects.", "Fix it (see Claude Code's settings documentation), "
                         "then run the setup again; nothing was changed.")
    return list(allow or [])


def _ours(allow: list[Any]) -> list[str]:
    return [r for r in allow if is_relay_rule(r)]


def _rules_in_place(ours: list[str]) -> bool:
    return sorted(ours) == sorted(ALLOW_RULES)


def _merge_allow(settings: dict[str, Any], wiring: Wiring | None, path: Path) -> PlanItem:
    """Put Relay's allow rules in ``settings`` (``wiring`` None: take them out)."""
    allow = _allow_of(settings, path)
    ours = _ours(allow)
    detail = f"{len(ALLOW_RULES)} rules: {', '.join(ALLOW_RULES)}"
    if wiring is None and not ours:
        return PlanItem(ALLOW_WHAT, str(path), "absent")
    if wiring is not None and _rules_in_place(ours):
        return PlanItem(ALLOW_WHAT, str(path), "keep", detail)
    left = [r for r in allow if not is_relay_rule(r)] + (list(ALLOW_RULES) if wiring else [])
    perms = dict(settings.get("permissions") or {})
    if left:
        perms["allow"] = left
    else:  # Relay's were the last: no empty list (or object) left behind
        perms.pop("allow", None)
    if perms:
        settings["permissions"] = perms
    else:
        settings.pop("permissions", None)
    action: Action = "remove" if wiring is None else "change" if ours else "add"
    return PlanItem(ALLOW_WHAT, str(path), action, detail if wiring else "")


def _merge_server(state: dict[str, Any], wiring: Wiring | None, path: Path) -> PlanItem:
    servers = state.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise SetupError(f"{path}: \"mcpServers\" is not an object.",
                         "Fix it with `claude mcp list`/`claude mcp remove`, then run the setup "
                         "again; nothing was changed.")
    servers = dict(servers or {})
    what = f"mcp server {MCP_NAME}"
    current = servers.get(MCP_NAME)
    if current is not None and not is_relay_server(current):
        return PlanItem(what, str(path), "conflict",
                        f"a server named {MCP_NAME} that is not Relay's is registered; "
                        f"remove it with `claude mcp remove {MCP_NAME} -s user`")
    if wiring is None:
        if current is None:
            return PlanItem(what, str(path), "absent")
        del servers[MCP_NAME]
        action: Action = "remove"
    elif current == wiring.server():
        return PlanItem(what, str(path), "keep", wiring.mcp_url)
    else:
        servers[MCP_NAME] = wiring.server()
        action = "add" if current is None else "change"
    if servers:
        state["mcpServers"] = servers
    else:
        state.pop("mcpServers", None)
    return PlanItem(what, str(path), action, wiring.mcp_url if wiring else "")


def _work(target: ClaudeTarget, wiring: Wiring | None) -> tuple[Plan, list[SettingsFile]]:
    """Read both files, change copies of them; the plan and the files with their new values."""
    settings = SettingsFile.read(target.settings)
    state = SettingsFile.read(target.state_file)
    settings.value = copy.deepcopy(settings.value)
    state.value = copy.deepcopy(state.value)
    items = _merge_hooks(settings.value, wiring, target.settings)
    items.append(_merge_allow(settings.value, wiring, target.settings))
    items.append(_merge_server(state.value, wiring, target.state_file))
    return Plan(target, wiring is None, items), [settings, state]


def plan(target: ClaudeTarget, wiring: Wiring, *, remove: bool = False) -> Plan:
    """What :func:`apply` (or :func:`remove`) would do; reads only."""
    return _work(target, None if remove else wiring)[0]


def _carry_out(target: ClaudeTarget, wiring: Wiring | None) -> Applied:
    the_plan, files = _work(target, wiring)
    conflict = next((i for i in the_plan.items if i.action == "conflict"), None)
    if conflict is not None and wiring is not None:
        raise SetupError(f"{conflict.file}: {conflict.detail}.",
                         "Then run the setup again; nothing was changed.")
    changed = [f for f in files if f.changed()]
    # a file apply made (no backup of it exists) and that is empty again is removed
    made = {f.path for f in changed if wiring is None and not f.value and not f.backups()}
    backups = [str(b) for f in changed if (b := f.backup()) is not None]
    written: list[SettingsFile] = []
    try:
        for f in changed:
            if f.path in made:
                f.delete()
            else:
                f.write(f.restorable() if wiring is None else None)
            written.append(f)
    except SetupError:
        for f in written:  # put back what was already written: all or nothing
            if f.original is not None:
                f.write(f.original)
        raise
    return Applied(the_plan, [str(f.path) for f in changed], backups)


def apply(target: ClaudeTarget, wiring: Wiring) -> Applied:
    """Merge Relay's hooks and MCP server into the folder's files (backups first)."""
    return _carry_out(target, wiring)


def remove(target: ClaudeTarget) -> Applied:
    """Take Relay's entries out again (backups first; the user's entries stay)."""
    return _carry_out(target, None)


# -- check ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckItem:
    what: str
    state: CheckState
    detail: str = ""

    @property
    def fine(self) -> bool:
        """Nothing to set up (``ok``, or ``info`` only to know)."""
        return self.state in ("ok", "info")


@dataclass(frozen=True)
class Check:
    target: ClaudeTarget
    items: list[CheckItem]
    #: the URL of the data folder's running host (None: no host runs)
    host_url: str | None
    #: the MCP URL Relay would register
    expected_url: str

    @property
    def ok(self) -> bool:
        return all(i.fine for i in self.items)


def check(target: ClaudeTarget, wiring: Wiring, host_url: str | None) -> Check:
    """What is and is not in place, read-only; ``host_url`` is the running host's."""
    settings = SettingsFile.read(target.settings)
    state = SettingsFile.read(target.state_file)
    hooks = _hooks_of(settings.value, target.settings)
    wanted = wiring.hook()
    items = []
    for event in HOOK_EVENTS:
        found = [hooks[event][g]["hooks"][h] for g, h in _relay_spots(hooks.get(event, []))]
        if not found:
            items.append(CheckItem(f"hook {event}", "missing"))
        elif found == [wanted]:
            items.append(CheckItem(f"hook {event}", "ok"))
        else:
            items.append(CheckItem(f"hook {event}", "stale",
                                   f"runs {_command_line(found[0])[:120]}"))
    ours = _ours(_allow_of(settings.value, target.settings))
    if not ours:
        items.append(CheckItem(ALLOW_WHAT, "missing", "not in permissions.allow"))
    elif _rules_in_place(ours):
        items.append(CheckItem(ALLOW_WHAT, "ok", f"{len(ours)} rules"))
    else:
        lacking = [r for r in ALLOW_RULES if r not in ours]
        extra = [r for r in ours if r not in ALLOW_RULES]
        items.append(CheckItem(ALLOW_WHAT, "stale", "; ".join(
            f"{label}: {', '.join(rules)}" for label, rules in
            (("lacks", lacking), ("unknown", extra), ("twice", sorted(
                {r for r in ours if ours.count(r) > 1}))) if rules)))
    servers = state.value.get("mcpServers")
    server = servers.get(MCP_NAME) if isinstance(servers, dict) else None
    what = f"mcp server {MCP_NAME}"
    if server is None:
        items.append(CheckItem(what, "missing", f"not in {target.state_file}"))
    elif not is_relay_server(server):
        items.append(CheckItem(what, "conflict", "a server of that name that is not Relay's"))
    else:
        url = server.get("url")
        live = f"{host_url.rstrip('/')}/mcp" if host_url else None
        if {**server, "url": None} != {**wiring.server(), "url": None}:
            items.append(CheckItem(what, "stale", f"registered as {url or server.get('type')}"))
        elif live is None:  # which port the next host takes cannot be known
            base = str(url).removesuffix("/mcp")
            items.append(CheckItem(what, "info", "host not running — the MCP server connects "
                                                 f"when a host runs at {base}"))
        elif url != live:
            items.append(CheckItem(what, "stale", f"{url}, but the host runs at {live}"))
        else:
            items.append(CheckItem(what, "ok", str(url)))
    return Check(target, items, host_url, wiring.mcp_url)
