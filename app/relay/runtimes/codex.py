"""The OpenAI Codex CLI runtime (``codex exec --json``).

What the adapter relies on (codex-cli 0.171.0, ``tests/fixtures/codex``):

* a new thread runs ``codex exec --json --sandbox MODE … -C DIR -- PROMPT``;
* a resumed thread runs ``codex exec resume --json … -c sandbox_mode="MODE" -- ID PROMPT``:
  ``exec resume`` has no ``--sandbox`` flag and does **not** inherit the sandbox
  of the original run (it falls back to read-only), so it is passed every time;
* stdin must be ``/dev/null``: codex reads a non-TTY stdin to EOF before it does
  anything, so an open pipe blocks it forever;
* SIGINT is the graceful stop: codex aborts the turn, records ``turn_aborted`` in
  its rollout and exits 1, which keeps the thread cleanly resumable. SIGTERM kills
  it without a trace. :meth:`~relay.runtimes.base.CliAdapter.interrupt` is that SIGINT:
  the run ends ``interrupted`` and ``exec resume`` continues the thread — verified on
  the real 0.171.0: the resumed request carries the earlier turns *and* the interrupted
  turn's prompt (tests/integration/test_codex_talk_real.py);
* a fork (``RunRequest.fork``) runs ``codex exec fork --json … -- PARENT_ID PROMPT``: a
  new thread (its own id in ``thread.started``) holding a copy of the parent's whole
  conversation; like ``exec resume`` it has no ``--sandbox``/``-C``. ``exec`` cannot cut
  the copy at a turn (only the experimental app-server's ``thread/fork`` takes a
  ``lastTurnId``, see docs/codex-talk.md), so :meth:`fork_anchor` is None and FORK is
  partial: a fork before the last turn gets Relay's brief;
* steering mid-turn needs ``codex app-server`` (``turn/steer``), which ``exec`` does not
  speak: STEER is no in the table. ``RELAY_CODEX_PROTOCOL=app-server`` opts in to running
  the same runtime over app-server instead (:mod:`relay.runtimes.codex_app`: STEER and
  INTERRUPT yes for that run, the process kept between turns);
* the user's environment (``CODEX_HOME``, API keys, ``TZ``…) passes through
  untouched; Relay never writes codex's ``config.toml``;
* the continuation brief (``RunRequest.brief_file``) of a **new** thread goes in as
  ``-c developer_instructions="<text>"``. Verified against the real 0.171.0 (its
  ``--help`` lists no instruction flag, only ``-c key=value``): ``developer_instructions``
  becomes the first text of the developer message that follows codex's own base
  instructions (``input[1]``), which stay in place. The alternatives were rejected:
  ``model_instructions_file`` *replaces* codex's base instructions (``input[0]``) and
  ``experimental_instructions_file`` is silently ignored. A ``-c`` value overrides the
  user's own ``developer_instructions``, so the top-level one from
  ``$CODEX_HOME/config.toml`` is kept in front of the brief (a project-level
  ``.codex/config.toml`` value is overridden). On ``exec resume`` a new
  ``developer_instructions`` value is ignored — the thread keeps the developer message
  it started with — so for a resumed thread nothing is injected and the brief must stay
  in the prompt (:meth:`CodexAdapter.brief_injection` says which).
"""

from __future__ import annotations

import os
import re
import signal
import tomllib
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from relay.core import jsonvalue
from relay.core.agent_homes import CodexHome, codex_home
from relay.core.capabilities import Cap
from relay.core.errors import ContractError
from relay.core.events import AgentEvent, Usage
from relay.core.models import PermissionPolicy
from relay.core.procs import AgentProcess, StdinMode
from relay.runtimes.base import CliAdapter, RunRequest
from relay.runtimes.codex_app import AppServerRun, app_server_capabilities, uses_app_server
from relay.runtimes.codex_stream import CodexStreamParser, codex_usage

INSTALL_HINT = "Install Codex: npm install -g @openai/codex"
BYPASS_FLAG = "--dangerously-bypass-approvals-and-sandbox"

SANDBOX_MODES: Mapping[PermissionPolicy, str] = {
    PermissionPolicy.READ_ONLY: "read-only",
    PermissionPolicy.WORKSPACE: "workspace-write",
}

#: The config key that carries the brief of a new thread (see the module docstring).
BRIEF_CONFIG_KEY = "developer_instructions"
#: The largest ``-c developer_instructions=…`` argument passed (bytes): Linux caps one
#: argument at 128 KiB, Windows a whole command line at 32 Ki characters.
MAX_BRIEF_ARG = 24_000 if os.name == "nt" else 100_000

_THREAD_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{0,127}$")


class CodexAdapter(CliAdapter):
    """Drives ``codex exec --json`` for one run.

    The thread's cumulative usage before a resumed run (codex reports cumulative
    usage on resumed threads) comes from ``request.options["previous_total"]``
    (a :class:`Usage` or a mapping of its fields) when the session runner knows it,
    else from the thread's rollout file under ``$CODEX_HOME/sessions``. After a run,
    :attr:`thread_total` is the new cumulative total to remember.
    """

    name: ClassVar[str] = "codex"
    binary: ClassVar[str] = "codex"
    install_hint: ClassVar[str] = INSTALL_HINT
    stdin_mode: ClassVar[str] = StdinMode.DEVNULL
    stop_signal: ClassVar[int] = signal.SIGINT

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self._parser: CodexStreamParser | None = None
        #: the run, when it goes over ``codex app-server`` (opted in)
        self._app: AppServerRun | None = None

    # -- contract ---------------------------------------------------------

    def preflight(self, request: RunRequest) -> None:
        """Fail before starting anything if codex is missing or the request cannot work."""
        if request.agent_session_id is not None:
            # Codex chooses its own thread ids; pretending otherwise would lose the session.
            self.capabilities.require(Cap.CHOOSE_SESSION_ID)
        if request.fork:
            self.capabilities.require(Cap.FORK)
            if request.resume_id is None or request.resume_at is not None:
                raise ContractError(
                    "Codex forks a whole thread: a fork needs the parent's thread id and no "
                    "point to cut at.",
                    "Fork at the parent's last turn, or start the fork from Relay's brief.")
        self.executable()
        self.brief_args(request)  # a missing or oversized brief fails before the start

    def build_argv(self, request: RunRequest) -> list[str]:
        exe = self.executable()
        model = ["-m", request.model] if request.model else []
        if request.resume_id is not None:
            verb = "fork" if request.fork else "resume"
            return [exe, "exec", verb, "--json", "--skip-git-repo-check", *model,
                    *resume_sandbox_args(request.permission), "--", request.resume_id,
                    request.prompt]
        # --skip-git-repo-check: Relay picks the directory itself (normally a git
        # worktree); codex's "trusted directory" guard is meant for interactive use.
        return [exe, "exec", "--json", *new_sandbox_args(request.permission),
                "--skip-git-repo-check", *model, *self.brief_args(request),
                "-C", str(request.cwd), "--", request.prompt]

    @classmethod
    def brief_injection(cls, *, resuming: bool) -> str | None:
        """How a ``brief_file`` reaches the model; ``None``: put it in the prompt instead.

        A new thread gets it as developer instructions; ``exec resume`` ignores new
        developer instructions, so a resumed thread gets nothing from the adapter.
        """
        return None if resuming else f"-c {BRIEF_CONFIG_KEY}"

    def brief_args(self, request: RunRequest) -> list[str]:
        """``-c developer_instructions=<TOML string>`` for a new thread with a brief.

        Raises:
            ContractError: the brief cannot be read, or is too large for one argument.
        """
        if request.brief_file is None or request.resume_id is not None:
            return []
        brief = Path(request.cwd) / request.brief_file
        try:
            text = brief.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ContractError(
                f"Cannot read the continuation brief {brief} ({exc.strerror or exc}), so Codex "
                "was not started.",
                "The brief is written just before a handoff; start the handoff again.") from exc
        own = user_developer_instructions(codex_home(self.build_env(request)).root)
        combined = f"{own}\n\n{text}" if own else text
        arg = f"{BRIEF_CONFIG_KEY}={toml_string(combined)}"
        if len(arg.encode("utf-8")) > MAX_BRIEF_ARG:
            raise ContractError(
                f"The continuation brief {brief} is too large to pass to Codex "
                f"({len(arg.encode('utf-8'))} bytes, at most {MAX_BRIEF_ARG}).",
                "Shorten the brief (it should be a compact summary), or put it in the prompt.")
        return ["-c", arg]

    def make_parser(self, request: RunRequest) -> CodexStreamParser:
        env = self.build_env(request)
        previous = (self._previous_total(request.resume_id, request.options, env)
                    if request.resume_id else None)
        self._parser = CodexStreamParser(
            previous_total=previous, model=request.model, cwd=str(request.cwd),
            permission_mode=permission_label(request.permission), tz=process_timezone(env))
        return self._parser

    # -- over app-server (opt-in) -------------------------------------------

    async def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        if not uses_app_server(self.build_env(request)):
            async for event in super().run(request):
                yield event
            return
        self.preflight(request)
        self.capabilities = app_server_capabilities(self.capabilities)
        self._app = AppServerRun(self, request, self.make_parser(request))
        async for event in self._app.events():
            yield event

    def attach(self, process: AgentProcess) -> None:
        """The app-server process this adapter stops (and reports the pid of)."""
        self._process = process

    @staticmethod
    def sandbox_mode(request: RunRequest) -> str:
        return permission_label(request.permission)

    async def steer(self, text: str) -> None:
        if self._app is None:
            await super().steer(text)  # exec: the capability says no
            return
        self.capabilities.require(Cap.STEER)
        await self._app.steer(text)

    async def interrupt(self) -> None:
        if self._app is None:
            await super().interrupt()
            return
        self.capabilities.require(Cap.INTERRUPT)
        await self._app.interrupt()

    async def stop(self, grace: float = 5.0) -> None:
        if self._app is not None:
            await self._app.stop()
        await super().stop(grace)

    # -- after a run ------------------------------------------------------

    @property
    def thread_id(self) -> str | None:
        """The codex thread id of the last run (what ``resume_id`` takes next time)."""
        return self._parser.thread_id if self._parser else None

    @property
    def thread_total(self) -> Usage | None:
        """The thread's cumulative usage after the last run (pass it as previous_total)."""
        return self._parser.thread_total if self._parser else None

    @staticmethod
    def _previous_total(thread_id: str, options: Mapping[str, object],
                        env: Mapping[str, str]) -> Usage | None:
        given = options.get("previous_total")
        if isinstance(given, Usage):
            return given
        if isinstance(given, Mapping):
            return Usage.model_validate(dict(given))
        rollout = find_rollout(codex_home(env).root, thread_id)
        return rollout_thread_total(rollout) if rollout is not None else None


# ---------------------------------------------------------------------------
# argv pieces
# ---------------------------------------------------------------------------


def new_sandbox_args(permission: PermissionPolicy) -> list[str]:
    """Sandbox flags for ``codex exec``."""
    if permission == PermissionPolicy.FULL:
        return [BYPASS_FLAG]
    return ["--sandbox", SANDBOX_MODES[permission]]


def resume_sandbox_args(permission: PermissionPolicy) -> list[str]:
    """Sandbox flags for ``codex exec resume`` (which has no ``--sandbox``)."""
    if permission == PermissionPolicy.FULL:
        return [BYPASS_FLAG]
    return ["-c", f'sandbox_mode="{SANDBOX_MODES[permission]}"']


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (what ``-c key=value`` parses the value as)."""
    out = ['"']
    for ch in text:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            # control characters must be escaped; a lone surrogate cannot be encoded at all
            out.append(f"\\u{ord(ch):04X}" if ord(ch) < 0xD800 else "\\uFFFD")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                 "\f": "\\f", "\r": "\\r"}


def user_developer_instructions(home: Path) -> str:
    """The top-level ``developer_instructions`` of ``<home>/config.toml`` ("" if none)."""
    try:
        with CodexHome(home).config.open("rb") as fh:
            value = tomllib.load(fh).get(BRIEF_CONFIG_KEY)
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    return value.strip() if isinstance(value, str) else ""


def permission_label(permission: PermissionPolicy) -> str:
    """How codex calls the policy (its sandbox mode)."""
    return SANDBOX_MODES.get(permission, "danger-full-access")


# ---------------------------------------------------------------------------
# Environment, version, rollouts
# ---------------------------------------------------------------------------


def process_timezone(env: Mapping[str, str]) -> ZoneInfo | None:
    """The timezone codex formats reset times in: ``TZ`` if it names a zone, else local."""
    name = env.get("TZ", "").removeprefix(":")
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def find_rollout(home: Path, thread_id: str) -> Path | None:
    """The rollout file of a thread (``sessions/YYYY/MM/DD/rollout-…-<id>.jsonl``), if any."""
    sessions = CodexHome(home).sessions
    if not _THREAD_ID.match(thread_id) or not sessions.is_dir():
        return None
    found = sorted(sessions.glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[-1] if found else None


def rollout_thread_total(path: Path) -> Usage | None:
    """The thread's cumulative usage as last recorded in its rollout; ``None`` if unknown."""
    latest: Mapping[str, Any] | None = None
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if "thread_token_usage" in line or "total_token_usage" in line:
                    latest = _total_in(line) or latest
    except OSError:
        return None
    return codex_usage(latest) if latest is not None else None


def _total_in(line: str) -> Mapping[str, Any] | None:
    try:
        record = jsonvalue.loads(line)
    except ValueError:
        return None
    payload = record.get("payload") if isinstance(record, dict) else None
    if not isinstance(payload, dict):
        return None
    if record.get("type") == "token_usage_record":
        found = payload.get("thread_token_usage")
    else:
        info = payload.get("info") if payload.get("type") == "token_count" else None
        found = info.get("total_token_usage") if isinstance(info, dict) else None
    return found if isinstance(found, dict) else None

