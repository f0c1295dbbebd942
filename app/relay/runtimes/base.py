"""The runtime adapter contract.

An adapter starts and drives one agent process (or API session) and turns its
native output into :mod:`relay.core.events`. Contract, after ert's drivers:

* ``run(request)`` is an async iterator of events that ends with **exactly one**
  :class:`~relay.core.events.SessionEnded` — also on cancellation, a crash, a
  stalled agent or malformed output;
* ``stop()`` ends the run (whole process tree); ``wait_safe_point()`` returns
  when the agent is between turns; ``answer_input()`` answers a NeedsInput or
  raises :class:`~relay.core.errors.UnsupportedCapabilityError`;
* ``capabilities`` is data (see :mod:`relay.core.capabilities`).

CLI runtimes subclass :class:`CliAdapter` and provide an argv builder and a
:class:`StreamParser` — a pure object that turns one decoded JSON line into
events and, at exit, decides the terminal event. Parsers hold no I/O, so they
are tested directly over every recorded capture.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from relay.core import jsonvalue
from relay.core.capabilities import Cap, Capabilities, Level
from relay.core.errors import AgentStalledError, UnsupportedCapabilityError
from relay.core.events import AgentError, AgentEvent, SessionEnded, SessionStarted
from relay.core.guard import Guard
from relay.core.models import PermissionPolicy
from relay.core.procs import AgentProcess, ProcessResult, StdinMode, find_executable
from relay.runtimes.parse_worker import Parsed, StreamParsing, worker_policy
from relay.runtimes.probe import RuntimeInfo as RuntimeInfo  # its home: the probes
from relay.runtimes.probe import cli_info


@dataclass(frozen=True)
class RunRequest:
    """Everything an adapter needs to start one agent process."""

    prompt: str
    cwd: Path
    model: str | None = None
    permission: PermissionPolicy = PermissionPolicy.WORKSPACE
    resume_id: str | None = None          # the agent's own session id to continue
    agent_session_id: str | None = None   # a new id we chose (runtimes that allow it)
    #: variables Relay sets (an account's folder, its API key): never shown by ``repr``
    extra_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: inherited variables the agent must not see (another credential that would override
    #: the account's own); ``extra_env`` is applied after them
    drop_env: frozenset[str] = frozenset()
    #: a continuation contract to inject as system-prompt text, where the runtime
    #: supports that (Claude: --append-system-prompt-file); otherwise it is in ``prompt``.
    brief_file: Path | None = None
    inactivity_timeout: float | None = 900.0
    #: runtime-specific knobs (e.g. the demo's step delay and simulated limit).
    options: Mapping[str, object] = field(default_factory=dict)
    #: the session's guard (:mod:`relay.core.guard`), asked where Relay decides a tool call
    #: itself (:mod:`relay.runtimes.guarded`); None: nothing is guarded
    guard: Guard | None = field(default=None, repr=False, compare=False)
    #: a runtime that keeps the agent process between turns (stdin open: Claude's
    #: stream-json input) asks this at each turn end for the user's next message; None
    #: (or no callback) ends the run. The runner's inbox claims the queued messages.
    next_input: Callable[[], Awaitable[str | None]] | None = field(
        default=None, repr=False, compare=False)
    #: with ``resume_id``: continue a *copy* of that conversation under a new id (a fork)
    fork: bool = False
    #: with ``fork``: the runtime's own point to cut the copied conversation at
    #: (:meth:`RuntimeAdapter.fork_anchor`); None keeps all of it
    resume_at: str | None = None


class RuntimeAdapter(ABC):
    """Base of every runtime adapter."""

    name: ClassVar[str]
    simulated: ClassVar[bool] = False

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        self.capabilities = Capabilities.for_runtime(self.name)

    @abstractmethod
    def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        """Start the agent and yield its events, ending with one SessionEnded."""

    async def batches(self, request: RunRequest) -> AsyncGenerator[list[Parsed], None]:
        """:meth:`run`'s events in batches, each event with its scrubbed JSON when a parse
        worker made it (stored as is), else None; the base: one event at a time."""
        async with contextlib.aclosing(self.run(request)) as events:
            async for event in events:
                yield [(event, None)]

    @abstractmethod
    async def stop(self, grace: float = 5.0) -> None:
        """End the run (the whole process tree)."""

    @property
    def pid(self) -> int | None:
        """The agent's process (the leader of its process group), when there is one."""
        return None

    @classmethod
    def brief_injection(cls, *, resuming: bool) -> str | None:
        """How a ``RunRequest.brief_file`` reaches the model (a flag, a config key);
        ``None``: not at all, the caller puts the brief into the prompt."""
        return None

    async def wait_safe_point(self) -> None:
        """Return when the agent is at a point where stopping loses no work."""
        self.capabilities.require(Cap.SAFE_PAUSE)

    async def answer_input(self, request_id: str, option_id: str | None = None, *,
                           text: str | None = None) -> None:
        """Answer a :class:`~relay.core.events.NeedsInput`: one of its options' ids, or
        free ``text`` for a question; neither cancels the question (the turn unwinds).
        An unknown or already answered ``request_id`` raises a RelayError."""
        self.capabilities.require(Cap.SEND_INPUT)
        raise UnsupportedCapabilityError(self.name, Cap.SEND_INPUT.value, "no")

    async def steer(self, text: str) -> None:
        """Give the running agent a user message now, mid-turn (:data:`Cap.STEER`).

        Raises:
            UnsupportedCapabilityError: the runtime cannot take input mid-turn.
            RelayError: no turn is running.
        """
        self.capabilities.require(Cap.STEER)
        raise UnsupportedCapabilityError(self.name, Cap.STEER.value, "no")

    async def interrupt(self) -> None:
        """Stop the current turn without losing the conversation (:data:`Cap.INTERRUPT`);
        the run then ends (or, for a runtime that keeps its process, asks ``next_input``).
        The base: the agent process is stopped; the next message resumes the conversation."""
        self.capabilities.require(Cap.INTERRUPT)
        await self.stop(grace=2.0)

    @classmethod
    def fork_anchor(cls, agent_session_id: str, turns: int, cwd: Path,
                    env: Mapping[str, str]) -> str | None:
        """The runtime's own point after the first ``turns`` user turns of an agent session
        (what :attr:`RunRequest.resume_at` takes), or None when it cannot cut there (the
        fork then carries the whole conversation, or Relay's brief)."""
        return None

    @abstractmethod
    def info(self) -> RuntimeInfo:
        """Executable and version, or the problem and how to fix it (never raises)."""

    def preflight(self, request: RunRequest) -> None:  # noqa: B027 - optional hook
        """Raise a RelayError if ``request`` cannot work, before anything starts."""

    def handshake(self, started: SessionStarted) -> None:
        """Narrow the capability table to what the running agent reported.

        The base rule: an agent that reported no session id cannot be resumed.
        Subclasses add what their init line reveals.
        """
        if not started.agent_session_id:
            self.capabilities = self.capabilities.narrow(
                resume=Level.NO, choose_session_id=Level.NO, fork=Level.NO)


#: a run's lines that are not JSON reported one by one; the rest are counted, not stored
MALFORMED_REPORTED = 20
#: why a run that :meth:`RuntimeAdapter.interrupt` ended is ``interrupted`` (resumable)
INTERRUPTED_REASON = "the turn was interrupted; send a message to continue"
#: how long an interrupted agent gets to end its turn before it is killed
INTERRUPT_GRACE = 5.0


def as_interrupted(event: AgentEvent, interrupted: bool) -> AgentEvent:
    """The run's SessionEnded as ``interrupted`` when Relay interrupted the turn (a stop
    that came from :meth:`RuntimeAdapter.interrupt`, not from ``stop``); else unchanged."""
    if interrupted and isinstance(event, SessionEnded) and event.outcome == "cancelled":
        return event.model_copy(update={"outcome": "interrupted", "reason": INTERRUPTED_REASON})
    return event


class StreamParser(ABC):
    """Turns one runtime's decoded stdout lines into events (pure, no I/O)."""

    runtime: ClassVar[str]
    #: the lines that were not JSON objects so far (an agent printing binary garbage gets
    #: :data:`MALFORMED_REPORTED` reports and one saying the rest are ignored)
    malformed_lines: int = 0

    @abstractmethod
    def feed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        """Events for one decoded JSON line (unknown types → [])."""

    @abstractmethod
    def finish(self, result: ProcessResult) -> list[AgentEvent]:
        """Closing events; the last one is the run's only SessionEnded."""

    def feed_text(self, line: str) -> list[AgentEvent]:
        """Decode and feed one raw line; malformed output is reported, not fatal."""
        stripped = line.strip()
        if not stripped:
            return []
        try:
            obj = jsonvalue.loads(stripped, fast=True)  # the hot path: orjson, depth-bounded
        except ValueError:
            return self.malformed(stripped)
        if not isinstance(obj, dict):
            return self.malformed(stripped)
        return self.feed(obj)

    def malformed(self, line: str) -> list[AgentEvent]:
        self.malformed_lines += 1
        if self.malformed_lines > MALFORMED_REPORTED:
            return []
        if self.malformed_lines == MALFORMED_REPORTED:
            return [AgentError(runtime=self.runtime, category="malformed", fatal=False,
                               message=f"Ignored {MALFORMED_REPORTED} lines that are not JSON "
                                       "objects; more are ignored without a report.")]
        shown = line if len(line) <= 200 else line[:200] + "…"
        return [AgentError(runtime=self.runtime, category="malformed", fatal=False,
                           message=f"Ignored a line that is not a JSON object: {shown}")]


class CliAdapter(RuntimeAdapter):
    """A runtime driven as a subprocess printing one JSON object per line.

    Subclasses name their executable (``binary``) and how to install it
    (``install_hint``); lookup (``RELAY_<RUNTIME>_BIN``, then PATH) and the
    ``--version`` probe behind :meth:`info` are shared.
    """

    stdin_mode: ClassVar[str] = StdinMode.DEVNULL
    stop_signal: ClassVar[int] = signal.SIGTERM
    binary: ClassVar[str]
    install_hint: ClassVar[str]
    #: a busy run's parsing may move to a worker process (:mod:`relay.runtimes.parse_worker`):
    #: only for adapters that never read their parser's state while it runs
    parse_in_worker: ClassVar[bool] = False

    def executable(self) -> str:
        """The executable (``RELAY_<RUNTIME>_BIN`` first, then PATH).

        Raises:
            CliNotFoundError: naming the CLI and how to install it.
        """
        return find_executable(self.name, self.binary, self.install_hint, env=self.env)

    def info(self) -> RuntimeInfo:
        """Executable and ``--version``, or what is wrong and how to fix it (never raises)."""
        return cli_info(self.name, self.binary, self.install_hint, self.env)

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self._process: AgentProcess | None = None
        self._parsing: StreamParsing | None = None
        self._stop_requested = False
        self._interrupt_requested = False
        self._between_turns = asyncio.Event()
        self._between_turns.set()

    @abstractmethod
    def build_argv(self, request: RunRequest) -> list[str]:
        """The full argument array (executable first)."""

    @abstractmethod
    def make_parser(self, request: RunRequest) -> StreamParser:
        """A fresh parser for one run."""

    def build_env(self, request: RunRequest) -> dict[str, str]:
        """The user's environment without ``drop_env``, plus what Relay sets."""
        env = {k: v for k, v in self.env.items() if k not in request.drop_env}
        env.update(request.extra_env)
        return env

    async def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        async with contextlib.aclosing(self._cli_batches(request, worker=False)) as batches:
            async for batch in batches:
                for event, _ in batch:
                    yield event

    def batches(self, request: RunRequest) -> AsyncGenerator[list[Parsed], None]:
        """The run's events in batches; a busy stream's are parsed, scrubbed and serialised
        by a worker process (:mod:`relay.runtimes.parse_worker`) when
        :attr:`parse_in_worker` (the others: :meth:`run`'s events one at a time)."""
        if not self.parse_in_worker:
            return super().batches(request)
        return self._cli_batches(request, worker=True)

    async def _cli_batches(self, request: RunRequest, *,
                           worker: bool) -> AsyncGenerator[list[Parsed], None]:
        self.preflight(request)
        parser = self.make_parser(request)
        proc = AgentProcess(self.build_argv(request), request.cwd, self.build_env(request),
                            stdin=self.stdin_mode, inactivity_timeout=request.inactivity_timeout)
        self._process = proc
        parsing = self._parsing = StreamParsing(
            parser, proc.max_line_bytes, worker_policy(self.env) if worker else None)
        await proc.start()
        if self._stop_requested:  # stop() raced with the start: honour it now
            await proc.stop(grace=1.0, sig=self.stop_signal)
        self._between_turns.clear()
        stalled: AgentStalledError | None = None
        try:
            await self.started(proc, request)
            try:
                async for batch in parsing.batches(proc):
                    for event, _ in batch:
                        self._note_turn_boundary(event)
                        if isinstance(event, SessionStarted):
                            self.handshake(event)
                    yield batch
                    await self.after_events(proc, request, [event for event, _ in batch])
            except AgentStalledError as exc:
                stalled = exc
                await proc.stop(grace=2.0, sig=self.stop_signal)
            result = await proc.wait()
            if stalled is not None:
                yield [(AgentError(runtime=self.name, category="stalled", message=str(stalled)),
                        None)]
            yield [(ended, payload if ended is event else None)
                   for event, payload in await parsing.finish(result)
                   for ended in (as_interrupted(event, self._interrupt_requested),)]
        finally:
            self._between_turns.set()
            await parsing.close()
            if proc.pid is not None:
                await proc.stop(grace=1.0, sig=self.stop_signal)

    def parser_call(self, name: str) -> None:
        """Call the running parser's method ``name`` (in process or in the worker)."""
        if self._parsing is not None:
            self._parsing.call(name)

    async def started(self, proc: AgentProcess, request: RunRequest) -> None:
        """Called once the process runs (a stdin-fed runtime writes its prompt here)."""

    async def after_events(self, proc: AgentProcess, request: RunRequest,
                           events: list[AgentEvent]) -> None:
        """Called after the events of one output line were consumed (a runtime that keeps
        its process asks ``request.next_input`` here at a turn end). Time spent here is
        not silence of the agent: the inactivity timer runs only while reading."""

    def _note_turn_boundary(self, event: AgentEvent) -> None:
        if event.kind in ("turn_completed", "session_ended"):
            self._between_turns.set()
        elif event.kind in ("session_started", "assistant_text", "tool_call"):
            self._between_turns.clear()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def stop(self, grace: float = 5.0) -> None:
        self._stop_requested = True
        if self._process is not None:
            await self._process.stop(grace=grace, sig=self.stop_signal)

    async def interrupt(self) -> None:
        """End the turn by stopping the process with :attr:`stop_signal` (one process per
        turn: the turn's unfinished work is lost, the conversation is not); the run ends
        ``interrupted`` and the next message resumes the agent's session."""
        self.capabilities.require(Cap.INTERRUPT)
        self._interrupt_requested = True
        await self.stop(grace=INTERRUPT_GRACE)

    async def wait_safe_point(self) -> None:
        await super().wait_safe_point()
        await self._between_turns.wait()


def ended_from_exit(runtime: str, result: ProcessResult, *, saw_success: bool,
                    failure: str | None, result_text: str | None = None,
                    simulated: bool = False) -> SessionEnded:
    """The terminal event for a CLI run from what the parser saw and how it exited."""
    if result.stopped:
        return SessionEnded(runtime=runtime, outcome="cancelled", reason="stopped by Relay",
                            exit_code=result.exit_code, simulated=simulated)
    if result.stalled:
        return SessionEnded(runtime=runtime, outcome="failed", reason="agent stalled",
                            exit_code=result.exit_code, simulated=simulated)
    if failure is not None:
        return SessionEnded(runtime=runtime, outcome="failed", reason=failure,
                            exit_code=result.exit_code, result_text=result_text,
                            simulated=simulated)
    if result.signal is not None:
        return SessionEnded(runtime=runtime, outcome="interrupted",
                            reason=f"killed by signal {result.signal}", simulated=simulated)
    if saw_success and result.exit_code == 0:
        return SessionEnded(runtime=runtime, outcome="completed", exit_code=0,
                            result_text=result_text, simulated=simulated)
    stderr = result.stderr_tail.strip().splitlines()
    why = stderr[-1] if stderr else "the agent ended without reporting a result"
    outcome = "failed" if result.exit_code not in (0, None) else "interrupted"
    return SessionEnded(runtime=runtime, outcome=outcome, reason=why,
                        exit_code=result.exit_code, simulated=simulated)
