"""Live agent processes: the process table (psutil) matched against per-runtime signatures.

A process is an agent when its **executable** — or the **script** an interpreter (node, bun,
deno, python, a shell) runs — is one of the agents', never when some word merely appears in
its command line: ``python -c "…claude…"``, ``bash -c 'claude …'`` and ``grep claude`` are
not agents (a shell's child that really runs the agent is matched on its own). The table,
:data:`SIGNATURES`, is data: one row per runtime.

============  ================================  =============================================
runtime       executable / script basename      or a path ending like
============  ================================  =============================================
claude        ``claude``                        ``@anthropic-ai/claude-code/cli.js``,
                                                ``claude/versions/<v>`` (native install)
codex         ``codex``                         ``@openai/codex/bin/codex.js``,
                                                ``codex-<target triple>`` (vendored binary)
gemini        ``gemini``                        ``@google/gemini-cli/dist/index.js``,
                                                ``@google/gemini-cli/bundle/gemini.js``
pi            ``pi``                            ``@mariozechner/pi-coding-agent/dist/cli.js``
aider         ``aider``, ``python -m aider``
opencode      ``opencode``
cursor-agent  ``cursor-agent``                  ``cursor-agent/versions/<v>/index.js``
vscode        ``code``, ``codium``, …           ``.vscode-server/…/bootstrap-fork``
cursor        ``cursor``                        ``.cursor-server/…/bootstrap-fork``
windsurf      ``windsurf``                      ``.windsurf-server/…/bootstrap-fork``
============  ================================  =============================================

The editors (the last three rows) count only as their **extension host** — an argument
``--type=extensionHost`` (a forked host, a remote server's) or
``--vscode-utility-kind=extensionHost`` (an Electron utility process, VS Code's current source)
— never their window, GPU, renderer or other helpers. Their agents (Cline, Copilot, Continue,
Cursor's chat) live inside that host; :data:`HOSTED` says which session runtimes one may hold.
Not checked against an installed copy here: the editor arguments (read in VS Code's source),
the npm package paths and the native-install / vendored-binary layouts; the tests run the fake
CLIs (a Python script named ``claude``, ``codex``) for real and the rest as command lines.

For each match: pid, command line, working folder, start time, parent, and — for the four CLIs
with a configuration-folder variable (:data:`relay.core.accounts.CONFIG_ENV`) — the folder it
runs with, read from its environment (the CLI's default folder when unset), and the wallet
account whose folder that is (else the bare provider). A process wrapped by another of the same
runtime (npm's codex.js starting the vendored binary, Gemini relaunching itself) is listed once,
as the outer one.

Linking to a session: Claude writes ``<config>/sessions/<pid>.json``
(``{"pid", "sessionId", "cwd", "startedAt"…}``) in newer versions — read when present and
written by this process (not a stale file of an earlier process with the same pid); else the
``--session-id`` / ``--resume`` argument. Reported upstream (anthropics/claude-code#36213): after
``/clear`` that file keeps the first id — worth checking against the newest transcript of the
cwd. Codex: the
``resume <id>`` (``exec resume <id>``) / ``--resume <id>`` argument. Others: None.

Only this user's processes are listed (``all_users=True``: everyone's, where psutil may read
them). Nothing here raises for one process: a process that exits mid-scan (NoSuchProcess, a zombie) is
skipped; one that may not be read (AccessDenied: its environment, its cwd) is listed with what
could not be read in ``problems``. Synchronous (psutil): call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from relay.core import jsonvalue
from relay.core.accounts import CONFIG_ENV
from relay.core.agent_homes import ClaudeHome, GeminiHome, config_folder
from relay.detect.model import LiveProcess

#: a Claude sessions/<pid>.json larger than this is not a pid file
_MAX_PID_FILE = 64 * 1024
#: a pid file written this long before the process started belongs to an earlier process
_PID_FILE_SLACK_MS = 5_000
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HOST_ARGS = frozenset({"--type=extensionHost", "--vscode-utility-kind=extensionHost"})


class AccountLike(Protocol):
    """What the scan reads of an account (``relay.core.accounts.Account``)."""

    @property
    def provider(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def config_dir(self) -> Path | None: ...

    @property
    def entry(self) -> str: ...


#: reads a process's environment (psutil's ``Process.environ`` unless a test says otherwise)
EnvReader = Callable[[Any], Mapping[str, str]]


def read_environ(proc: Any) -> Mapping[str, str]:
    env: Mapping[str, str] = proc.environ()
    return env


@dataclass(frozen=True, slots=True)
class Signature:
    """How one runtime's process is told from every other."""

    runtime: str
    #: basenames of the executable, or of the script an interpreter runs (extension dropped)
    names: frozenset[str] = frozenset()
    #: searched in that executable's / script's path (``/``-separated)
    paths: tuple[re.Pattern[str], ...] = ()
    #: ``python -m <module>``
    modules: frozenset[str] = frozenset()
    #: when set, one of these exact arguments must follow (an editor's extension host)
    host_args: frozenset[str] = frozenset()


def _paths(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


SIGNATURES: tuple[Signature, ...] = (
    Signature("claude", frozenset({"claude"}),
              _paths(r"/@anthropic-ai/claude-code/cli\.[cm]?js$", r"/claude/versions/[^/]+$")),
    Signature("codex", frozenset({"codex"}),
              _paths(r"/@openai/codex/bin/codex\.[cm]?js$",
                     r"/codex-(x86_64|aarch64)-[a-z0-9_-]+(\.exe)?$")),
    Signature("gemini", frozenset({"gemini"}),
              _paths(r"/@google/gemini-cli/(dist/index|bundle/gemini)\.[cm]?js$")),
    Signature("pi", frozenset({"pi"}),
              _paths(r"/@mariozechner/pi-coding-agent/dist/(cli|main)\.[cm]?js$")),
    Signature("aider", frozenset({"aider"}), modules=frozenset({"aider"})),
    Signature("opencode", frozenset({"opencode"})),
    Signature("cursor-agent", frozenset({"cursor-agent"}),
              _paths(r"/cursor-agent/versions/[^/]+/index\.[cm]?js$")),
    Signature("vscode", frozenset({"code", "code-insiders", "code-oss", "codium", "vscodium",
                                   "code helper (plugin)", "code - insiders helper (plugin)",
                                   "vscodium helper (plugin)"}),
              _paths(r"/\.vscode(-insiders|-oss)?-server/.*/bootstrap-fork(\.js)?$"),
              host_args=_HOST_ARGS),
    Signature("cursor", frozenset({"cursor", "cursor helper (plugin)"}),
              _paths(r"/\.cursor-server/.*/bootstrap-fork(\.js)?$"), host_args=_HOST_ARGS),
    Signature("windsurf", frozenset({"windsurf", "windsurf helper (plugin)"}),
              _paths(r"/\.windsurf-server/.*/bootstrap-fork(\.js)?$"), host_args=_HOST_ARGS),
)

#: per editor host, the session runtimes (``model.RUNTIMES``) whose agents it may be running
HOSTED: dict[str, tuple[str, ...]] = {
    "vscode": ("cline", "copilot", "continue"),
    "cursor": ("cursor", "cline", "continue"),
    "windsurf": ("cline", "continue"),
}

_INTERPRETER = re.compile(r"^(node|nodejs|bun|deno|python[0-9.]*|pythonw|pypy[0-9.]*"
                          r"|sh|bash|dash|zsh|ksh)$")
_STRIP = (".exe", ".cmd", ".bat", ".js", ".mjs", ".cjs", ".py")
#: options of node that take the next argument as their value
_NODE_VALUE = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader",
                         "-C", "--conditions", "--title", "--env-file", "--input-type"})
_NODE_EVAL = frozenset({"-e", "--eval", "-p", "--print", "-i", "--interactive", "-c", "--check"})
_SHELL_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def _stem(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    for suffix in _STRIP:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@dataclass(frozen=True, slots=True)
class _Target:
    """What a command line runs: an executable or script path, or a Python module."""

    path: str | None
    module: str | None
    #: index in argv of the path / module; the agent's own arguments follow it
    index: int


def _target(argv: Sequence[str]) -> _Target | None:
    interpreter = _INTERPRETER.match(_stem(argv[0]))
    if interpreter is None:
        return _Target(argv[0], None, 0)
    kind = interpreter.group(1)
    if kind.startswith(("python", "pypy")):
        return _python_target(argv)
    if kind in ("node", "nodejs", "bun", "deno"):
        return _node_target(argv, kind)
    return _shell_target(argv)


def _python_target(argv: Sequence[str]) -> _Target | None:
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-" or arg.startswith("--"):
            if arg in ("-", "--"):
                return None if arg == "-" else _at(argv, i + 1)
            i += 1
            continue
        if not arg.startswith("-"):
            return _Target(arg, None, i)
        cluster = arg[1:]
        for pos, flag in enumerate(cluster):
            if flag == "c":
                return None                       # python -c: code on the command line
            if flag == "m":
                module = cluster[pos + 1:] or (argv[i + 1] if i + 1 < len(argv) else "")
                at = i if cluster[pos + 1:] else i + 1
                return _Target(None, module.split(".", 1)[0], at) if module else None
            if flag in "WX":                      # -W arg, -X opt: a value follows
                if pos == len(cluster) - 1:
                    i += 1
                break
        i += 1
    return None


def _node_target(argv: Sequence[str], kind: str) -> _Target | None:
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in _NODE_EVAL:
            return None
        if arg == "--":
            return _at(argv, i + 1)
        if arg in _NODE_VALUE:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        if kind in ("bun", "deno") and arg in ("run", "x"):
            i += 1
            continue
        return _Target(arg, None, i)
    return None


def _shell_target(argv: Sequence[str]) -> _Target | None:
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return _at(argv, i + 1)
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return None                           # sh -c '…': a command string, not a script
        if arg in _SHELL_VALUE:
            i += 2
            continue
        if arg.startswith(("-", "+")):
            i += 1
            continue
        return _Target(arg, None, i)
    return None


def _at(argv: Sequence[str], i: int) -> _Target | None:
    return _Target(argv[i], None, i) if i < len(argv) and argv[i] != "-" else None


def match_signature(argv: Sequence[str]) -> Signature | None:
    """The signature ``argv`` (a process's command line) matches, or None."""
    if not argv or not argv[0]:
        return None
    target = _target(argv)
    if target is None:
        return None
    stem = _stem(target.path) if target.path else None
    path = target.path.replace("\\", "/") if target.path else ""
    for sig in SIGNATURES:
        if target.module is not None:
            hit = target.module in sig.modules
        else:
            hit = stem in sig.names or any(p.search(path) for p in sig.paths)
        if hit and sig.host_args and not sig.host_args.intersection(argv[target.index + 1:]):
            continue
        if hit:
            return sig
    return None


# -- accounts and configuration folders -----------------------------------------------------


def _real(path: Path) -> str:
    try:
        return os.path.normcase(str(path.expanduser().resolve()))
    except (OSError, RuntimeError):
        return os.path.normcase(str(path))


def _account_key(provider: str, folder: Path) -> tuple[str, str]:
    """How an account's folder compares with a process's: Gemini's is the ``.gemini`` folder
    (an account folder not named so is pointed at as GEMINI_CLI_HOME, see ``Account.env``)."""
    if provider == "gemini":
        folder = GeminiHome.for_folder(folder).root
    return provider, _real(folder)


def _accounts_by_folder(accounts: Iterable[AccountLike]) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for account in accounts:
        if account.config_dir is not None:
            found.setdefault(_account_key(account.provider, Path(account.config_dir)),
                             account.entry)
    return found


# -- linking a process to its session ------------------------------------------------------


def _option(argv: Sequence[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if name.startswith("--") and arg.startswith(name + "="):
                return arg[len(name) + 1:]
    return None


def _uuid(value: str | None) -> str | None:
    return value if value is not None and _UUID.fullmatch(value) else None


def claude_session_from_argv(args: Sequence[str]) -> str | None:
    """``--session-id ID``, or ``--resume ID`` (not forked into a new id)."""
    given = _uuid(_option(args, "--session-id"))
    if given:
        return given
    if "--fork-session" in args:
        return None
    return _uuid(_option(args, "--resume", "-r"))


#: codex options that take a value (``codex --help``, ``codex exec --help``)
_CODEX_VALUE = frozenset({"-m", "--model", "-c", "--config", "-C", "--cd", "-s", "--sandbox",
                          "-p", "--profile", "-i", "--image", "-a", "--ask-for-approval",
                          "-o", "--output-last-message", "--color", "--output-schema",
                          "--enable", "--disable", "--add-dir", "--local-provider"})


def codex_session_from_argv(args: Sequence[str]) -> str | None:
    """``resume ID`` / ``exec resume ID`` (not ``--last``), or ``--resume ID``."""
    flagged = _uuid(_option(args, "--resume"))
    if flagged:
        return flagged
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _CODEX_VALUE:
            i += 2
            continue
        if arg == "--last" and positionals[-1:] == ["resume"]:
            return None
        if not arg.startswith("-"):
            positionals.append(arg)
            if len(positionals) >= 2 and positionals[-2] == "resume":
                return _uuid(arg)
            if positionals not in (["exec"], ["e"], ["resume"], ["exec", "resume"],
                                   ["e", "resume"]):
                return None
        i += 1
    return None


def _claude_pid_file(folder: Path, pid: int, started_ms: int) -> tuple[str | None, str | None,
                                                                          str | None]:
    """(session id, cwd, problem) from ``<folder>/sessions/<pid>.json``."""
    path = ClaudeHome(folder).pid_file(pid)
    try:
        with path.open("rb") as fh:
            raw = fh.read(_MAX_PID_FILE + 1)
    except FileNotFoundError:
        return None, None, None
    except OSError as exc:
        return None, None, f"its session file {path} could not be read ({exc.strerror or exc})"
    try:
        data = jsonvalue.loads(raw) if len(raw) <= _MAX_PID_FILE else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, None, f"its session file {path} is not a session record"
    if data.get("pid") not in (None, pid):
        return None, None, None
    written = data.get("startedAt", data.get("startTime"))
    if isinstance(written, int | float) and not isinstance(written, bool):
        written_ms = written if written > 1e11 else written * 1000
        if written_ms < started_ms - _PID_FILE_SLACK_MS:
            return None, None, None                # an earlier process with the same pid
    sid = data.get("sessionId")
    cwd = data.get("cwd")
    return (sid if isinstance(sid, str) and sid else None,
            cwd if isinstance(cwd, str) and cwd else None, None)


# -- the scan -------------------------------------------------------------------------------


@dataclass(slots=True)
class ProcessScan:
    processes: list[LiveProcess] = field(default_factory=list)
    #: what stopped a whole process from being listed (the scan went on)
    problems: list[str] = field(default_factory=list)


def _why(exc: BaseException) -> str:
    if isinstance(exc, psutil.AccessDenied | PermissionError):
        return "permission denied"
    return str(exc) or type(exc).__name__


def scan_processes(accounts: Sequence[AccountLike] = (), *, env_reader: EnvReader = read_environ,
                   all_users: bool = False) -> ProcessScan:
    """Every running agent process (this user's, unless ``all_users``), oldest first."""
    me = os.getpid()
    uid = os.getuid() if hasattr(os, "getuid") else None
    attrs = ["pid", "cmdline"] + (["uids"] if uid is not None and not all_users else [])
    folders = _accounts_by_folder(accounts)
    scan = ProcessScan()
    found: list[LiveProcess] = []
    for proc in psutil.process_iter(attrs, ad_value=None):
        info = proc.info
        argv = info.get("cmdline")
        if info.get("pid") == me or not argv:
            continue
        sig = match_signature(argv)
        if sig is None:
            continue
        uids = info.get("uids")
        if uid is not None and not all_users and uids is not None and uids.real != uid:
            continue
        try:
            found.append(_inspect(proc, tuple(argv), sig, folders, env_reader))
        except psutil.NoSuchProcess:              # exited mid-scan (a zombie is one too)
            continue
        except (psutil.Error, OSError) as exc:
            scan.problems.append(f"{sig.runtime} process {proc.pid} could not be read ({_why(exc)})")
    scan.processes = _fold_wrapped(found)
    scan.processes.sort(key=lambda p: (p.started_ms, p.pid))
    return scan


def _inspect(proc: Any, argv: tuple[str, ...], sig: Signature,
             folders: Mapping[tuple[str, str], str], env_reader: EnvReader) -> LiveProcess:
    problems: list[str] = []
    with proc.oneshot():
        if proc.status() == psutil.STATUS_ZOMBIE:
            raise psutil.ZombieProcess(proc.pid)
        started_ms = int(proc.create_time() * 1000)
        ppid = proc.ppid()
        try:
            cwd: str | None = proc.cwd() or None
        except psutil.NoSuchProcess:
            raise
        except (psutil.Error, OSError) as exc:
            cwd = None
            problems.append(f"its working folder could not be read ({_why(exc)})")
    runtime = sig.runtime
    config_dir: Path | None = None
    entry = runtime
    if runtime in CONFIG_ENV:
        env: Mapping[str, str] | None
        try:
            env = env_reader(proc)
        except psutil.NoSuchProcess:
            raise
        except (psutil.Error, OSError) as exc:
            env = None
            problems.append(f"its environment could not be read ({_why(exc)}): "
                            f"{CONFIG_ENV[runtime]} and so its account are unknown")
        if env is not None:
            config_dir = config_folder(runtime, env, cwd=cwd)
    if config_dir is not None:
        entry = folders.get((runtime, _real(config_dir)), runtime)
    target = _target(argv)
    own_args = argv[target.index + 1:] if target is not None else ()
    session: str | None = None
    if runtime == "claude":
        if config_dir is not None:
            session, file_cwd, problem = _claude_pid_file(config_dir, proc.pid, started_ms)
            cwd = cwd or file_cwd
            if problem:
                problems.append(problem)
        session = session or claude_session_from_argv(own_args)
    elif runtime == "codex":
        session = codex_session_from_argv(own_args)
    return LiveProcess(pid=proc.pid, runtime=runtime, cmdline=argv, cwd=cwd,
                       started_ms=started_ms, ppid=ppid,
                       config_dir=_real(config_dir) if config_dir is not None else None,
                       entry=entry, agent_session_id=session, problems=tuple(problems))


def _fold_wrapped(found: list[LiveProcess]) -> list[LiveProcess]:
    """One entry per agent: a process whose parent runs the same agent (npm's codex.js and
    its vendored binary, Gemini's relaunch) is folded into the outermost one."""
    by_pid = {p.pid: p for p in found}

    def outermost(p: LiveProcess) -> LiveProcess:
        seen = {p.pid}
        while p.ppid in by_pid and by_pid[p.ppid].runtime == p.runtime and p.ppid not in seen:
            p = by_pid[p.ppid]
            seen.add(p.pid)
        return p

    kept: dict[int, LiveProcess] = {}
    inner: list[tuple[int, LiveProcess]] = []
    for p in found:
        top = outermost(p)
        if top.pid == p.pid:
            kept[p.pid] = p
        else:
            inner.append((top.pid, p))
    for top_pid, p in inner:
        top = kept[top_pid]
        kept[top_pid] = dataclasses.replace(
            top, agent_session_id=top.agent_session_id or p.agent_session_id,
            cwd=top.cwd or p.cwd)
    return list(kept.values())

