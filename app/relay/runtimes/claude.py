"""The Claude Code CLI (``claude -p --input-format stream-json --output-format stream-json``).

Facts this adapter relies on (Claude Code 2.1.197, see
``tests/fixtures/claude/NOTES.md``):

* ``stream-json`` output with ``-p`` requires ``--verbose``;
* every run takes its input as ``--input-format stream-json`` (``docs/claude-talk.md``,
  :mod:`relay.runtimes.claude_input`): the prompt is the first stdin line and stdin stays
  open; at each ``result`` the adapter asks ``request.next_input()`` for the user's next
  message (None, or no callback: stdin is closed, the CLI exits 0, the run ends);
  :meth:`ClaudeAdapter.steer` writes a user line at once, :meth:`ClaudeAdapter.interrupt`
  the interrupt control request. (The 3-second "no stdin data" wait of a prompt argument
  with an open pipe does not exist in this mode: nothing is read as text.)
* ``--resume S --fork-session [--resume-session-at U]`` forks a conversation, cut after
  the transcript entry ``U`` (:meth:`ClaudeAdapter.fork_anchor`);
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

import asyncio
import contextlib
import dataclasses
import os
import signal
import uuid
from collections.abc import AsyncGenerator, Awaitable, Mapping
from pathlib import Path
from typing import ClassVar

from relay.core.capabilities import Cap
from relay.core.errors import AgentProcessError, ContractError, PolicyRefusedError, RelayError
from relay.core.events import AgentEvent
from relay.core.models import PermissionPolicy
from relay.core.procs import AgentProcess, StdinMode
from relay.runtimes import claude_input
from relay.runtimes.base import CliAdapter, RunRequest, RuntimeAdapter, StreamParser
from relay.runtimes.claude_permission import PermissionBroker, wants_bridge, with_questions
from relay.runtimes.claude_stream import ClaudeStreamParser
from relay.runtimes.parse_worker import Parsed

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
    stdin_mode: ClassVar[str] = StdinMode.PIPE
    #: the adapter reads nothing of its parser's state while it runs
    parse_in_worker: ClassVar[bool] = True

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self.session_id: str | None = None
        #: Claude's permission prompts, while a run asks through the bridge
        self._broker: PermissionBroker | None = None
        self._bridge_flags: list[str] = []
        self._parser: ClaudeStreamParser | None = None
        self._stdin_open = False
        #: waiting for ``request.next_input()``: the agent's silence is expected
        self._awaiting_input = False
        self._stopped = asyncio.Event()

    def batches(self, request: RunRequest) -> AsyncGenerator[list[Parsed], None]:
        """In batches (a busy stream parsed by a worker process), unless the permission
        bridge merges Claude's questions into the stream: then one event at a time."""
        if wants_bridge(request):
            return RuntimeAdapter.batches(self, request)
        return super().batches(request)

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
                                              self._stop_stalled,
                                              waiting=lambda: self._awaiting_input):
                yield event
        finally:
            self._bridge_flags = []
            await broker.close()

    # -- talking: stream-json input (docs/claude-talk.md) ---------------------

    async def started(self, proc: AgentProcess, request: RunRequest) -> None:
        """The prompt is the first stdin line; stdin stays open for more."""
        self._stdin_open = True
        await self._write(proc, claude_input.user_line(request.prompt))

    async def after_events(self, proc: AgentProcess, request: RunRequest,
                           events: list[AgentEvent]) -> None:
        """At a turn's ``result``: the user's next message, or EOF (the CLI then exits)."""
        if not self._stdin_open or not any(e.kind == "turn_completed" for e in events):
            return
        text: str | None = None
        if request.next_input is not None and not self._stop_requested:
            self._awaiting_input = True
            try:
                text = await self._unless_stopped(request.next_input())
            finally:
                self._awaiting_input = False
        if text is None or self._stop_requested:
            await self._close_stdin(proc)
        else:
            await self._write(proc, claude_input.user_line(text))

    async def _unless_stopped(self, asked: Awaitable[str | None]) -> str | None:
        """``asked``'s answer, or None as soon as the run is stopped meanwhile."""
        answer = asyncio.ensure_future(asked)
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({answer, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not answer.done():
                answer.cancel()
        return answer.result() if answer.done() and not answer.cancelled() else None

    async def steer(self, text: str) -> None:
        """A user message now: Claude takes it at the turn's next API request (inside the
        turn during tool use, else as the next turn right after this one's result)."""
        self.capabilities.require(Cap.STEER)
        proc = self._running()
        await self._write(proc, claude_input.user_line(text))

    async def interrupt(self) -> None:
        """Stop the current turn: the interrupt control request (the process stays and
        ``next_input`` decides what follows); once stdin is closed, SIGINT."""
        self.capabilities.require(Cap.INTERRUPT)
        proc = self._running(stdin=False)
        if self._awaiting_input:
            return  # between turns: nothing runs; next_input decides what follows
        self.parser_call("interrupting")  # the parser may run in a worker
        if self._stdin_open:
            await self._write(proc, claude_input.interrupt_line())
        elif proc.pid is not None:
            os.killpg(proc.pid, signal.SIGINT)

    @classmethod
    def fork_anchor(cls, agent_session_id: str, turns: int, cwd: Path,
                    env: Mapping[str, str]) -> str | None:
        """The transcript uuid after the first ``turns`` user turns (``--resume-session-at``)."""
        return claude_input.fork_anchor(agent_session_id, turns, cwd, env)

    def _running(self, *, stdin: bool = True) -> AgentProcess:
        proc = self._process
        if proc is None or proc.pid is None or self._stop_requested or (
                stdin and not self._stdin_open):
            raise RelayError("Claude Code is not running a turn here, so nothing was sent.",
                             "Send the message as a follow-up instead (it resumes the "
                             "conversation).")
        return proc

    async def _write(self, proc: AgentProcess, data: bytes) -> None:
        try:
            await proc.write_stdin(data)
        except (AgentProcessError, OSError) as exc:  # it exited meanwhile
            self._stdin_open = False
            raise RelayError(f"Claude Code no longer takes input: {exc}",
                             "Send the message as a follow-up instead.") from exc

    async def _close_stdin(self, proc: AgentProcess) -> None:
        self._stdin_open = False
        with contextlib.suppress(AgentProcessError, OSError):  # it exited already
            await proc.write_stdin(b"", close=True)

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
        self._stopped.set()  # no longer waiting for the user's next message
        if self._broker is not None:  # answered first, so Claude can unwind
            await self._broker.deny_all()
        await super().stop(grace)

    def preflight(self, request: RunRequest) -> None:
        """Refuse what the CLI would refuse, before spawning it (and give a fork in a new
        worktree its parent's transcript, :func:`claude_input.bring_transcript`).

        Raises:
            ContractError: ``brief_file`` is set but is not a readable file.
            PolicyRefusedError: full permissions as root without ``IS_SANDBOX=1``.
        """
        if request.resume_id and request.fork:  # where --resume looks for the parent
            claude_input.bring_transcript(request.resume_id, request.cwd, self.build_env(request))
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
        """``claude -p --input-format stream-json --output-format stream-json --verbose …``
        (the prompt goes to stdin: :meth:`started`)."""
        argv = [self.executable(), "-p", "--input-format", "stream-json",
                "--output-format", "stream-json", "--verbose",
                "--permission-mode", PERMISSION_MODES[request.permission]]
        if request.permission is PermissionPolicy.WORKSPACE:
            argv += WORKSPACE_TOOLS
        if request.model:
            argv += ["--model", request.model]
        if request.resume_id and request.fork:
            self.session_id = None  # the copy's new id comes with the init line
            argv += ["--resume", request.resume_id, "--fork-session"]
            if request.resume_at:
                argv += ["--resume-session-at", request.resume_at]
        elif request.resume_id:
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
        self._parser = ClaudeStreamParser()
        return self._parser


def brief_path(request: RunRequest) -> Path | None:
    """``request.brief_file`` as an absolute path (a relative one is taken from the cwd)."""
    if request.brief_file is None:
        return None
    return Path(request.cwd) / request.brief_file


def _running_as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


