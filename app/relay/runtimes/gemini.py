"""The Gemini CLI runtime (``gemini -p … --output-format stream-json``), Gemini CLI 0.61.0.

What the adapter relies on (``tests/fixtures/gemini/NOTES.md``, the captures, the
bundle of 0.61.0):

* one run is ``gemini -p PROMPT -o stream-json --approval-mode MODE --skip-trust
  [-m MODEL] (--session-id NEW | --resume ID)`` with stdin ``/dev/null``: a piped stdin is
  *prepended* to the prompt (``h2``). The events are read by
  :class:`~relay.runtimes.gemini_stream.GeminiStreamParser`;
* ``--skip-trust``: Relay chooses the folder (normally its own worktree); without it an
  untrusted folder exits 55 before anything runs (``g3``);
* **the approval mode is the permission policy** (docs/architecture.md has the table):
  ``read_only`` → ``default`` (headless offers read-only tools only), ``workspace`` →
  ``auto_edit`` plus ``--allowed-tools run_shell_command``, ``full`` → ``yolo`` (every
  tool, no prompts). ``auto_edit`` alone adds only ``write_file`` / ``replace`` /
  ``web_fetch``: headless mode turns every "ask the user" into "not offered", so without
  the allow rule the model is never given the shell (``g2``: ``tool_not_registered``).
  ``--allowed-tools`` (deprecated in favour of the policy engine, still honoured by
  0.61.0) adds one rule at the user tier (priority 4.3) and leaves the account's own
  ``policies/*.toml`` in force; ``--policy FILE`` would *replace* that folder, and
  Relay never writes gemini's settings. Gemini's own shell checks stay on: a
  ``dir_path`` outside the worktree, ``rm -f``/``rm -rf``, ``find -exec``, ``ln -s`` and
  git ``-c`` overrides still need a confirmation nobody can give headless, so they are
  refused (a :class:`~relay.core.events.PermissionDenied`). The command itself is not
  confined (``cd /tmp && …`` works). Nothing ever asks in headless mode;
* a new session gets an id chosen here (``--session-id``, ``f2``), so it is known before
  the init line; ``--resume <id>`` continues one in the same project folder (``f``);
* **a failed prompt is rolled back**: after an API failure gemini removes the prompt from
  the session's history, and a session left without any prompt cannot be resumed at all
  (``--resume`` exits 42). Before a resume the adapter reads the chat file: a rolled-back
  prompt is sent again in front of the new one, and a session with nothing to resume is
  started afresh with it — both said in a notice;
* **the auth type**: with ``GOOGLE_GEMINI_BASE_URL`` set and no
  ``security.auth.selectedType`` in its settings gemini derives ``gateway`` and headless
  mode refuses it (exit 41, "Invalid auth method selected."); with a type other than
  ``gemini-api-key`` selected it ignores ``GEMINI_API_KEY`` — an account's key from the
  vault would silently not be used. Relay never writes gemini's settings, so both are
  refused before the start with the fix named (:meth:`GeminiAdapter.preflight`);
* the account's folder (``GEMINI_CLI_HOME``) and key (``GEMINI_API_KEY``) arrive in
  ``RunRequest.extra_env`` (:mod:`relay.core.accounts`); other credentials are dropped;
* gemini's own retries (``general.maxAttempts`` in its settings, default 10, backoff from
  5 s to 30 s) run before Relay sees a limit; they show as retry notices at the end.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from relay.core.agent_homes import gemini_home
from relay.core.errors import ConfigError
from relay.core.models import PermissionPolicy
from relay.core.procs import StdinMode
from relay.runtimes.base import CliAdapter, RunRequest
from relay.runtimes.gemini_files import (
    API_KEY_AUTH,
    AUTH_PIN,
    GATEWAY_AUTH,
    KEYLESS_AUTH,
    ChatState,
    auth_setup,
    find_chat,
    read_chat,
)
from relay.runtimes.gemini_stream import GeminiStreamParser

GEMINI_VERSION = "0.61.0"
INSTALL_HINT = f"Install Gemini CLI: npm install -g @google/gemini-cli@{GEMINI_VERSION}"

APPROVAL_MODES: Mapping[PermissionPolicy, str] = {
    PermissionPolicy.READ_ONLY: "default",
    PermissionPolicy.WORKSPACE: "auto_edit",
    PermissionPolicy.FULL: "yolo",
}
#: what ``workspace`` adds to ``auto_edit``: the shell, which would otherwise ask (and so
#: not be offered at all headless, nor run without a question in ACP mode)
SHELL_ALLOWED: tuple[str, ...] = ("--allowed-tools", "run_shell_command")


def policy_args(permission: PermissionPolicy) -> list[str]:
    """Relay's policy as Gemini CLI flags (headless and ACP mode alike take them)."""
    extra = list(SHELL_ALLOWED) if permission is PermissionPolicy.WORKSPACE else []
    return ["--approval-mode", APPROVAL_MODES[permission], *extra]


def policy_label(permission: PermissionPolicy) -> str:
    """What is in force, for SessionStarted (the mode, and the shell when allowed)."""
    mode = APPROVAL_MODES[permission]
    return f"{mode} + run_shell_command" if permission is PermissionPolicy.WORKSPACE else mode


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """Which Gemini session one run starts or resumes, and what it tells the model."""

    session_id: str
    resume: bool
    prompt: str
    notes: tuple[str, ...] = ()

    @property
    def args(self) -> list[str]:
        return ["--resume" if self.resume else "--session-id", self.session_id]


class GeminiAdapter(CliAdapter):
    """Drives ``gemini -p … -o stream-json`` for one run."""

    name: ClassVar[str] = "gemini"
    binary: ClassVar[str] = "gemini"
    install_hint: ClassVar[str] = INSTALL_HINT
    stdin_mode: ClassVar[str] = StdinMode.DEVNULL

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self._planned: tuple[RunRequest, SessionPlan] | None = None
        self._parser: GeminiStreamParser | None = None

    # -- contract ---------------------------------------------------------

    def preflight(self, request: RunRequest) -> None:
        """Fail before starting anything if gemini is missing or would refuse the run.

        Raises:
            CliNotFoundError: gemini is not installed (naming the npm package).
            ConfigError: its settings and environment make it refuse the auth type, or
                ignore the API key Relay hands it.
        """
        self.executable()
        check_auth(self.build_env(request), request)

    def build_argv(self, request: RunRequest) -> list[str]:
        plan = self._plan(request)
        argv = [self.executable(), "-p", _prompt_arg(plan.prompt), "--output-format",
                "stream-json", *policy_args(request.permission), "--skip-trust"]
        if request.model:
            argv += ["-m", request.model]
        return argv + plan.args

    def make_parser(self, request: RunRequest) -> GeminiStreamParser:
        folder = gemini_home(self.build_env(request)).root

        def final_answer(session_id: str) -> ChatState | None:
            chat = find_chat(folder, session_id)
            return read_chat(chat) if chat is not None else None

        self._parser = GeminiStreamParser(
            cwd=str(request.cwd), permission_mode=policy_label(request.permission),
            notes=self._plan(request).notes, final_answer=final_answer)
        return self._parser

    @property
    def session_id(self) -> str | None:
        """The Gemini session id of the last run (what ``resume_id`` takes next time)."""
        if self._parser is not None and self._parser.session_id:
            return self._parser.session_id
        return self._planned[1].session_id if self._planned is not None else None

    def _plan(self, request: RunRequest) -> SessionPlan:
        """The session arguments of ``request``, decided once (the argv and the parser's
        notes must agree, and a new session's id is drawn here)."""
        if self._planned is None or self._planned[0] is not request:
            self._planned = (request, plan_session(request, gemini_home(self.build_env(request)).root))
        return self._planned[1]


def plan_session(request: RunRequest, folder: Path) -> SessionPlan:
    """``--session-id`` for a new session; ``--resume`` for an earlier one, unless Gemini
    rolled its last prompt back (sent again) or kept nothing to resume (a new session)."""
    if request.resume_id is None:
        return SessionPlan(request.agent_session_id or str(uuid.uuid4()), False, request.prompt)
    chat = find_chat(folder, request.resume_id)
    state = read_chat(chat) if chat is not None else None
    if state is None:  # not found here: gemini itself says whether it knows the id
        return SessionPlan(request.resume_id, True, request.prompt)
    prompt, notes = request.prompt, []
    if state.rolled_back is not None and state.rolled_back != request.prompt.strip():
        prompt = f"{state.rolled_back}\n\n{request.prompt}"
        notes.append("Gemini dropped the last prompt of this session when its turn failed; "
                     "Relay sends it again in front of the new one.")
    if not state.resumable:
        notes.append(f"Gemini kept nothing to resume in session {request.resume_id} (its only "
                     "prompt failed): Relay starts a new Gemini session.")
        return SessionPlan(str(uuid.uuid4()), False, prompt, tuple(notes))
    return SessionPlan(request.resume_id, True, prompt, tuple(notes))


def check_auth(env: Mapping[str, str], request: RunRequest) -> None:
    """Refuse the two auth setups in which Gemini CLI would not do what Relay means.

    Raises:
        ConfigError: ``gateway`` would be derived (headless refuses it), or an account's
            API key would be ignored because the settings select another sign-in.
    """
    setup = auth_setup(env, Path(request.cwd))
    if setup is None:
        return  # a settings file Relay cannot read: gemini itself will say what is wrong
    where = setup.settings_path
    if setup.effective == GATEWAY_AUTH and not setup.use_external:
        raise ConfigError(
            "Gemini CLI would refuse to run (exit 41, \"Invalid auth method selected.\"): "
            "GOOGLE_GEMINI_BASE_URL is set and its settings pin no auth type, so it derives "
            "'gateway', which headless mode rejects.",
            f"Pin the type in {where}: {AUTH_PIN} (Relay never writes Gemini's settings), "
            "or unset GOOGLE_GEMINI_BASE_URL.")
    if "GEMINI_API_KEY" in request.extra_env and setup.selected in KEYLESS_AUTH:
        raise ConfigError(
            f"The Gemini settings in {where} select the '{setup.selected}' sign-in, so "
            "Gemini CLI would ignore the account's API key and use that sign-in instead.",
            f"Set security.auth.selectedType to '{API_KEY_AUTH}' there, give the account a "
            "folder of its own (relay-cli accounts edit gemini LABEL --config-dir DIR), or "
            "register it as a cli_login account.")


def _prompt_arg(prompt: str) -> str:
    # yargs would read a leading "-" as an option, and headless gemini runs a prompt that
    # starts with "/" as a slash command: a leading space keeps both a plain message.
    return " " + prompt if prompt.startswith(("-", "/")) else prompt
