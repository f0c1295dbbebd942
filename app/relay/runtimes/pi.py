"""The Pi coding agent runtime (``pi --mode json -p``), pi 0.73.1.

What the adapter relies on (``tests/fixtures/pi/NOTES.md``, the package's ``docs/``):

* one run is ``pi --mode json [--provider P] [--model M] [--tools …] [--session ID]
  [--append-system-prompt BRIEF] -p PROMPT`` with stdin ``/dev/null``; the first stdout line
  is the session header with the session id (see :mod:`relay.runtimes.pi_stream`);
* **JSON mode, not RPC mode.** ``--mode rpc`` adds steering, ``abort`` and follow-up
  prompts to one long-lived process, but Relay runs one prompt per process and stops at turn
  boundaries it already sees in JSON mode (``turn_end``); a stopped run is resumable because
  Pi appends every completed entry to the session file. So RPC mode is not used (yet);
* **the exit code is not trusted**: Pi exits 0 after failed retries; the parser decides;
* sessions live in ``<agent dir>/sessions/--<cwd, "/" → "-">--/<time>_<id>.jsonl``; the
  agent dir is ``$PI_CODING_AGENT_DIR`` (what a Relay account sets) or ``~/.pi/agent``
  (:mod:`relay.core.agent_homes`); ``--session <id>`` continues one (same cwd); the adapter
  checks the file exists first;
* custom providers come from ``<agent dir>/models.json``; their ``apiKey`` names an
  environment variable, and **when that variable is unset Pi sends the variable's name as
  the key** (h2). The adapter checks the variable before starting and fails naming it;
* ``PI_OFFLINE=1`` (no startup network calls) and ``PI_TELEMETRY=0`` are always set;
* **Pi has no sandbox and no approval layer.** ``read_only`` becomes the tool allowlist
  ``--tools read,grep,find,ls`` (no bash, edit or write: enforced by Pi, a disallowed tool
  answers "Tool bash not found"); ``workspace`` and ``full`` both run Pi's default tools
  (read, bash, edit, write) unconfined — bash can write outside the worktree. Nothing
  enforces ``workspace`` beyond the worktree being the cwd;
* a prompt starting with ``-`` or ``@`` (Pi reads ``@path`` arguments as files to attach)
  gets a leading space, so it stays a message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from relay.core import jsonvalue
from relay.core.agent_homes import PiHome, pi_home
from relay.core.capabilities import Cap
from relay.core.errors import ConfigError, ContractError, SessionNotFoundError
from relay.core.models import PermissionPolicy
from relay.core.procs import StdinMode
from relay.runtimes.base import CliAdapter, RunRequest
from relay.runtimes.pi_stream import PiStreamParser

PI_VERSION = "0.73.1"
INSTALL_HINT = f"Install Pi: npm install -g @mariozechner/pi-coding-agent@{PI_VERSION}"

#: Pi's own read-only example (``pi --help``): no bash, no edit, no write.
READ_ONLY_TOOLS = ("read", "grep", "find", "ls")
DEFAULT_TOOLS = ("read", "bash", "edit", "write")

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SESSION_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{0,127}$")


class PiAdapter(CliAdapter):
    """Drives ``pi --mode json`` for one run.

    ``RunRequest.options``: ``provider`` (Pi's ``--provider``; else a ``provider/model``
    model, else Pi's ``defaultProvider`` setting), ``thinking`` (``--thinking`` level).
    """

    name: ClassVar[str] = "pi"
    binary: ClassVar[str] = "pi"
    install_hint: ClassVar[str] = INSTALL_HINT
    stdin_mode: ClassVar[str] = StdinMode.DEVNULL

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self._parser: PiStreamParser | None = None

    # -- contract ---------------------------------------------------------

    def preflight(self, request: RunRequest) -> None:
        """Fail before starting anything: no pi, an unset key variable, an unknown session."""
        if request.agent_session_id is not None:
            self.capabilities.require(Cap.CHOOSE_SESSION_ID)
        self.executable()
        env = self.build_env(request)
        folder = pi_home(env).root
        check_api_key(folder, self._provider(request, env), env)
        if request.resume_id is not None and \
                find_session(folder, request.cwd, request.resume_id) is None:
            raise SessionNotFoundError(
                    f"Pi has no session {request.resume_id!r} for {request.cwd} in "
                    f"{PiHome(folder).sessions}.",
                    "Pi keeps sessions per agent folder and working directory; resume with the "
                    "same account and worktree, or start a new session.")
        self._brief_args(request)

    def build_env(self, request: RunRequest) -> dict[str, str]:
        env = super().build_env(request)
        env["PI_OFFLINE"] = "1"
        env.setdefault("PI_TELEMETRY", "0")
        return env

    def build_argv(self, request: RunRequest) -> list[str]:
        exe = self.executable()
        argv = [exe, "--mode", "json"]
        provider = request.options.get("provider")
        if isinstance(provider, str) and provider:
            argv += ["--provider", provider]
        if request.model:
            argv += ["--model", request.model]
        thinking = request.options.get("thinking")
        if isinstance(thinking, str) and thinking:
            argv += ["--thinking", thinking]
        argv += tool_args(request.permission)
        if request.resume_id is not None:
            argv += ["--session", request.resume_id]
        argv += self._brief_args(request)
        return [*argv, "-p", safe_prompt(request.prompt)]

    @classmethod
    def brief_injection(cls, *, resuming: bool) -> str | None:
        """The brief goes in as ``--append-system-prompt <file>`` (Pi reads a file's contents;
        the system prompt is rebuilt by every process, so a resumed session gets it too)."""
        return "--append-system-prompt"

    def _brief_args(self, request: RunRequest) -> list[str]:
        if request.brief_file is None:
            return []
        brief = Path(request.cwd) / request.brief_file
        if not brief.is_file():
            raise ContractError(
                f"Cannot read the continuation brief {brief}, so Pi was not started.",
                "The brief is written just before a handoff; start the handoff again.")
        return ["--append-system-prompt", str(brief)]

    def make_parser(self, request: RunRequest) -> PiStreamParser:
        tools = list(READ_ONLY_TOOLS if request.permission == PermissionPolicy.READ_ONLY
                     else DEFAULT_TOOLS)
        self._parser = PiStreamParser(model=request.model, cwd=str(request.cwd),
                                      permission_mode=permission_label(request.permission),
                                      tools=tools)
        return self._parser

    @property
    def session_id(self) -> str | None:
        """Pi's session id of the last run (what ``resume_id`` takes next time)."""
        return self._parser.session_id if self._parser else None

    def _provider(self, request: RunRequest, env: Mapping[str, str]) -> str | None:
        given = request.options.get("provider")
        if isinstance(given, str) and given:
            return given
        if request.model and "/" in request.model:
            return request.model.split("/", 1)[0]
        settings = _read_json(pi_home(env).settings)
        default = settings.get("defaultProvider")
        return default if isinstance(default, str) else None


# ---------------------------------------------------------------------------
# pieces
# ---------------------------------------------------------------------------


def tool_args(permission: PermissionPolicy) -> list[str]:
    """Relay's policy as Pi's tool allowlist (Pi's only control)."""
    if permission == PermissionPolicy.READ_ONLY:
        return ["--tools", ",".join(READ_ONLY_TOOLS)]
    return []


def permission_label(permission: PermissionPolicy) -> str:
    """What is in force, in words (Pi has no permission modes of its own)."""
    if permission == PermissionPolicy.READ_ONLY:
        return "tools:" + ",".join(READ_ONLY_TOOLS)
    return "unconfined"


def safe_prompt(prompt: str) -> str:
    """A prompt Pi cannot take for a flag or an ``@file`` argument."""
    return f" {prompt}" if prompt[:1] in ("-", "@") else prompt


def find_session(folder: Path, cwd: Path, session_id: str) -> Path | None:
    """The session file of ``session_id`` (or a unique prefix of it) for ``cwd``."""
    if not _SESSION_ID.match(session_id):
        return None
    where = PiHome(folder).session_folder(cwd)
    found = sorted(where.glob(f"*_{session_id}*.jsonl")) if where.is_dir() else []
    return found[-1] if len(found) == 1 or (found and all(
        p.name.endswith(f"_{session_id}.jsonl") for p in found)) else None


def check_api_key(folder: Path, provider: str | None, env: Mapping[str, str]) -> None:
    """Raise if ``provider`` is a models.json custom provider whose key variable is unset.

    Pi would send the variable's *name* as the key (then fail with a 401, or worse, succeed
    against a server that does not check). A literal key (``sk-…``, ``ollama``) or a shell
    command (``!…``) is left alone.
    """
    if not provider:
        return
    models = PiHome(folder).models
    providers = _read_json(models).get("providers")
    spec = providers.get(provider) if isinstance(providers, Mapping) else None
    key = spec.get("apiKey") if isinstance(spec, Mapping) else None
    if not isinstance(key, str) or not _ENV_NAME.match(key):
        return
    if not env.get(key):
        raise ConfigError(
            f"Pi's provider {provider!r} takes its API key from the environment variable {key}, "
            "which is not set, so Pi was not started (it would send the name as the key).",
            f"Set {key} (or register the key with the Pi account), or put the key itself in "
            f"{models}.")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = jsonvalue.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


__all__ = ["INSTALL_HINT", "PI_VERSION", "PiAdapter", "check_api_key", "find_session",
           "safe_prompt", "tool_args"]
