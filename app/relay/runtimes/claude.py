"""The Claude Code CLI (``claude -p --output-format stream-json --verbose``).

Facts this adapter relies on (Claude Code 2.1.197, see
``tests/fixtures/claude/NOTES.md``):

* ``stream-json`` output with ``-p`` requires ``--verbose``;
* stdin must be ``/dev/null``: with an open, silent pipe the CLI waits 3 s and
  appends whatever arrives to the prompt;
* ``--session-id`` (a fresh UUID) names a new session and its transcript,
  ``--resume <id>`` continues one under the same id;
* ``--permission-mode bypassPermissions`` is refused as root unless
  ``IS_SANDBOX=1`` — checked here before anything starts;
* ``--append-system-prompt-file <path>`` (hidden in ``--help``, but named there under
  ``--bare`` and recorded in ``j_model_and_system_prompt/run4``) appends the file's text
  to the default system prompt — the third ``system`` block of every request, before its
  ``gitStatus:`` section — for new **and** resumed sessions (verified against the real
  2.1.197: ``tests/runtimes/test_brief_injection.py``). A missing file makes the CLI exit
  1 with ``Error: Append system prompt file not found: <path>``, so it is checked before
  the start; it cannot be combined with ``--append-system-prompt``. The continuation
  brief (``RunRequest.brief_file``) goes there; the prompt stays ``request.prompt``;
* ``workspace`` is ``--permission-mode acceptEdits --allowedTools Bash``: acceptEdits
  alone lets Write/Edit and file commands in the cwd (``touch``) through, but any other
  command ("This command requires approval": ``python3 -c …``, ``pytest``) is denied in
  print mode — and "run commands in the worktree" is what the policy promises. The
  commands are not confined (``cd /tmp && touch x`` runs; Claude only resets its cwd
  afterwards), as in every runtime but Codex (verified against the real 2.1.197);
* ``--permission-prompt-tool <mcp tool>`` (hidden, "only works with --print") with
  ``--mcp-config``: instead of denying a call that needs approval, Claude asks that MCP
  tool — Relay's permission bridge, so the question becomes a NeedsInput
  (:mod:`relay.runtimes.claude_permission`);
* the user's environment (``CLAUDE_CONFIG_DIR``, ``ANTHROPIC_BASE_URL``,
  credentials …) is passed through untouched.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import ClassVar

from relay.core.capabilities import Cap
from relay.core.errors import ContractError, PolicyRefusedError, RelayError
from relay.core.events import AgentEvent
from relay.core.models import PermissionPolicy
from relay.runtimes.base import CliAdapter, RunRequest, StreamParser
from relay.runtimes.claude_permission import PermissionBroker, wants_bridge, with_questions
from relay.runtimes.claude_stream import ClaudeStreamParser

INSTALL_HINT = "Install Claude Code: npm install -g @anthropic-ai/claude-code"
#: How the continuation brief reaches the model (see the module docstring).
BRIEF_FLAG = "--append-system-prompt-file"

PERMISSION_MODES: Mapping[PermissionPolicy, str] = {
    # In -p nothing can be approved, so writes are denied and reported back.
    PermissionPolicy.READ_ONLY: "default",
    PermissionPolicy.WORKSPACE: "acceptEdits",
    PermissionPolicy.FULL: "bypassPermissions",
}
#: what ``workspace`` adds to acceptEdits: every command (see the module docstring)
WORKSPACE_TOOLS: tuple[str, ...] = ("--allowedTools", "Bash")


class ClaudeAdapter(CliAdapter):
    """Runs Claude Code non-interactively and streams its events."""

    name: ClassVar[str] = "claude"
    binary: ClassVar[str] = "claude"
    install_hint: ClassVar[str] = INSTALL_HINT

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self.session_id: str | None = None
        #: Claude's permission prompts, while a run asks through the bridge
        self._broker: PermissionBroker | None = None
        self._bridge_flags: list[str] = []

    async def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        """The run's events; where Claude would deny a tool call by itself, it asks Relay
        instead (a NeedsInput, see :mod:`relay.runtimes.claude_permission`)."""
        if not wants_bridge(request):
            async for event in super().run(request):
                yield event
            return
        broker = self._broker = PermissionBroker(self.name, request.guard, str(request.cwd))
        try:
            self._bridge_flags = broker.claude_flags(await broker.start())
            # silence while Claude waits for an answer is no stall: with_questions judges
            inner = super().run(dataclasses.replace(request, inactivity_timeout=None))
            async for event in with_questions(inner, broker, request.inactivity_timeout,
                                              self._stop_stalled):
                yield event
        finally:
            self._bridge_flags = []
            await broker.close()

    async def _stop_stalled(self) -> None:
        if self._process is not None:
            await self._process.stop(grace=2.0, sig=self.stop_signal)

    async def answer_input(self, request_id: str, option_id: str | None = None, *,
                           text: str | None = None) -> None:
        """Allow or reject a tool call Claude asked about (its permission prompt)."""
        self.capabilities.require(Cap.SEND_INPUT)
        if self._broker is None:
            raise RelayError(f"Claude is not waiting for an answer to {request_id}.",
                             "Claude asks only in the read_only and workspace permission "
                             "policies, and not on Windows.")
        await self._broker.answer(request_id, option_id, text=text)

    async def stop(self, grace: float = 5.0) -> None:
        if self._broker is not None:  # answered first, so Claude can unwind
            await self._broker.deny_all()
        await super().stop(grace)

    def preflight(self, request: RunRequest) -> None:
        """Refuse what the CLI would refuse, before spawning it.

        Raises:
            ContractError: ``brief_file`` is set but is not a readable file.
            PolicyRefusedError: full permissions as root without ``IS_SANDBOX=1``.
        """
        brief = brief_path(request)
        if brief is not None and not brief.is_file():
            raise ContractError(
                f"The continuation brief {brief} does not exist, so Claude Code was not started.",
                "The brief is written just before a handoff; start the handoff again.")
        if request.permission is not PermissionPolicy.FULL or not _running_as_root():
            return
        if self.build_env(request).get("IS_SANDBOX") == "1":
            return
        raise PolicyRefusedError(
            "Claude Code refuses full permissions (bypassPermissions) when it runs as "
            "root, so the run was not started.",
            "Run Relay as a normal user, or choose the workspace permission policy; on a "
            "disposable sandbox machine set IS_SANDBOX=1.",
        )

    def build_argv(self, request: RunRequest) -> list[str]:
        """``claude -p <prompt> --output-format stream-json --verbose …``."""
        argv = [self.executable(), "-p", _positional(request.prompt),
                "--output-format", "stream-json", "--verbose",
                "--permission-mode", PERMISSION_MODES[request.permission]]
        if request.permission is PermissionPolicy.WORKSPACE:
            argv += WORKSPACE_TOOLS
        if request.model:
            argv += ["--model", request.model]
        if request.resume_id:
            self.session_id = request.resume_id
            argv += ["--resume", request.resume_id]
        else:
            # Choosing the id up front names the transcript before the init line.
            self.session_id = request.agent_session_id or str(uuid.uuid4())
            argv += ["--session-id", self.session_id]
        brief = brief_path(request)
        if brief is not None:
            argv += [BRIEF_FLAG, str(brief)]
        return argv + self._bridge_flags

    @classmethod
    def brief_injection(cls, *, resuming: bool) -> str | None:
        """How a ``brief_file`` reaches the model: the flag, for new and resumed sessions.

        ``None`` would mean the caller must put the brief into the prompt itself.
        """
        return BRIEF_FLAG

    def make_parser(self, request: RunRequest) -> StreamParser:
        """A fresh :class:`ClaudeStreamParser`."""
        return ClaudeStreamParser()


def brief_path(request: RunRequest) -> Path | None:
    """``request.brief_file`` as an absolute path (a relative one is taken from the cwd)."""
    if request.brief_file is None:
        return None
    return Path(request.cwd) / request.brief_file


def _positional(prompt: str) -> str:
    # The CLI's option parser would read a leading "-" as an option; a leading
    # space keeps the prompt a positional argument and means nothing to the model.
    return " " + prompt if prompt.startswith("-") else prompt


def _running_as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


