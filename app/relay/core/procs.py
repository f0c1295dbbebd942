"""Agent subprocesses: argument arrays, own session, bounded output, whole-tree stop.

An :class:`AgentProcess` starts one executable in its own process group
(``start_new_session``), yields stdout line by line (each line bounded in
length; over-long lines are truncated and flagged), keeps a bounded tail of
stderr for diagnosis, detects silence with an inactivity timeout, and stops
the whole process tree: a polite signal to the group, a grace period, then
SIGKILL to every descendant it can still find.

The agent's own exit ends the run, not the end of its pipes: a grandchild that
keeps stdout or stderr open (``cmd &``, a daemon that did ``setsid``) is given
:data:`EXIT_GRACE_S` after the agent exits, then killed with the rest of what the
agent left, and the pipes are closed. What the agent left is found by its
session, by a marker variable every descendant inherits (:data:`TREE_VAR`) and,
on Linux, because Relay is a child subreaper: orphans reparent to Relay, not to
init, so they can be found among Relay's own descendants and reaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import secrets
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from relay.core.errors import AgentProcessError, AgentStalledError, CliNotFoundError
from relay.core.executables import find_executable as find_executable  # its home before

if sys.platform != "win32":
    import fcntl

MAX_LINE_BYTES = 8 * 1024 * 1024
STDERR_TAIL_BYTES = 64 * 1024
_READ_CHUNK = 64 * 1024
#: how long the agent's stdout and stderr may stay open after the agent itself exited
#: (a detached grandchild holding them); then what is left of its tree is killed and
#: the pipes are closed. Per process: ``AgentProcess.exit_grace``.
EXIT_GRACE_S = 0.5
#: how long Relay waits for a killed leftover process to die before it gives up reaping it
REAP_WITHIN_S = 5.0
#: inherited by the agent and everything it starts: the trees (``:``-separated tokens,
#: outermost first) a process belongs to, so descendants that left the agent's session
#: are still found
TREE_VAR = "RELAY_PROCESS_TREE"
_PR_SET_CHILD_SUBREAPER = 36
#: the pid for which the subreaper attribute was set (a forked child must set its own)
_subreaper_pid: int | None = None


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux): orphaned descendants of the agents it
    starts reparent to it instead of to init, where Relay can find, kill and reap them.
    Idempotent; False where the OS has no such facility (the sweep then scans every
    process for the tree marker)."""
    global _subreaper_pid
    if _subreaper_pid == os.getpid():
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
    if ok:
        _subreaper_pid = os.getpid()
    return ok


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol, telling when the process exited and when its pipes ended
    (asyncio's ``Process.wait`` waits for both, so a held pipe would hold it)."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()
        self.drained = asyncio.Event()
        self._open = {1, 2}

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        self._open.discard(fd)
        if not self._open:
            self.drained.set()


class StdinMode:
    """How the agent's stdin is wired: closed (/dev/null) or a pipe we write to."""

    DEVNULL = "devnull"
    PIPE = "pipe"


@dataclass(frozen=True, slots=True)
class Line:
    """One stdout line, without its newline; ``truncated`` if it was cut."""

    text: str
    truncated: bool = False


#: a busy stream's pipe size and read size (Linux lets a user widen a pipe to 1 MiB)
WIDE_PIPE = 1 << 20


def widen_pipe(pipe: Any) -> None:
    """Make a pipe (a file object or descriptor) hold :data:`WIDE_PIPE` bytes, where the
    system allows it (Linux's ``F_SETPIPE_SZ``); fewer, larger reads and writes."""
    if sys.platform == "win32" or pipe is None:
        return
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsize is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fcntl.fcntl(pipe if isinstance(pipe, int) else pipe.fileno(), setsize, WIDE_PIPE)


class LineSplitter:
    """Cuts a byte stream into :class:`Line` s: a line longer than ``limit`` bytes is cut
    there and flagged ``truncated``, the rest of it discarded as it arrives (never
    buffered). Plain data, so a parse worker can carry on where the parent stopped."""

    __slots__ = ("dropping", "limit", "pending")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending = bytearray()  # the start of a line that spans reads (≤ limit bytes)
        self.dropping = False  # the pending line went over the limit

    def feed(self, chunk: bytes) -> list[Line]:
        """The lines ``chunk`` completes (its unfinished end is kept for the next)."""
        limit = self.limit
        out: list[Line] = []
        parts = chunk.split(b"\n")
        for i, part in enumerate(parts[:-1]):
            if i == 0 and (self.pending or self.dropping):
                cut = self.dropping or len(self.pending) + len(part) > limit
                self.pending += part[: max(limit - len(self.pending), 0)]
                out.append(Line(self.pending.decode("utf-8", "replace"), cut))
                self.pending, self.dropping = bytearray(), False
            else:
                out.append(Line(part[:limit].decode("utf-8", "replace"), len(part) > limit))
        tail = parts[-1]
        if not self.dropping and tail:
            room = limit - len(self.pending)
            self.pending += tail[:room]
            self.dropping = len(tail) > room
        return out

    def end(self) -> list[Line]:
        """The last line, when the stream did not end with a newline."""
        if not (self.pending or self.dropping):
            return []
        line = Line(self.pending.decode("utf-8", "replace"), self.dropping)
        self.pending, self.dropping = bytearray(), False
        return [line]


@dataclass
class ProcessResult:
    """How the process ended."""

    exit_code: int | None
    signal: int | None
    stderr_tail: str
    stalled: bool = False
    stopped: bool = False


@dataclass
class AgentProcess:
    """One running agent executable. Use :meth:`start`, iterate :meth:`lines`, :meth:`wait`."""

    argv: Sequence[str]
    cwd: Path
    env: Mapping[str, str]
    stdin: str = StdinMode.DEVNULL
    inactivity_timeout: float | None = None
    max_line_bytes: int = MAX_LINE_BYTES
    exit_grace: float = EXIT_GRACE_S
    _proc: asyncio.subprocess.Process | None = field(default=None, init=False)
    _protocol: _Protocol | None = field(default=None, init=False)
    _token: str = field(default_factory=lambda: secrets.token_hex(8), init=False)
    _created: float | None = field(default=None, init=False)
    _subreaper: bool = field(default=False, init=False)
    _swept: bool = field(default=False, init=False)
    _exit_watch: asyncio.Task[None] | None = field(default=None, init=False)
    _stderr: deque[bytes] = field(default_factory=deque, init=False)
    _stderr_size: int = field(default=0, init=False)
    _stderr_task: asyncio.Task[None] | None = field(default=None, init=False)
    _stalled: bool = field(default=False, init=False)
    _stopped: bool = field(default=False, init=False)
    #: how much of stdout one read takes (:meth:`widen_stdout`)
    _read_size: int = field(default=_READ_CHUNK, init=False)

    async def start(self) -> None:
        """Spawn the process. Raises :class:`AgentProcessError` if it cannot start."""
        if not self.argv:
            raise AgentProcessError("No command to run.")
        stdin = asyncio.subprocess.PIPE if self.stdin == StdinMode.PIPE else asyncio.subprocess.DEVNULL
        env = dict(self.env)
        inherited = env.get(TREE_VAR)
        env[TREE_VAR] = f"{inherited}:{self._token}" if inherited else self._token
        self._subreaper = become_subreaper()
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _Protocol(_READ_CHUNK, loop), *self.argv, cwd=str(self.cwd), env=env,
                stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise CliNotFoundError(f"Cannot run {self.argv[0]!r}: {exc.strerror}.",
                                   "Check that it is installed.") from exc
        except OSError as exc:
            raise AgentProcessError(f"Cannot start {self.argv[0]!r}: {exc}.",
                                    "Check the file's permissions and the working directory.") from exc
        except ValueError as exc:  # "embedded null byte": no operating system passes a NUL
            raise AgentProcessError(f"Cannot start {self.argv[0]!r}: its arguments or "
                                    "environment contain a NUL byte (\\0).",
                                    "Remove the NUL byte from the task or setting.") from exc
        self._protocol = protocol
        self._proc = asyncio.subprocess.Process(transport, protocol, loop)
        with contextlib.suppress(psutil.Error):
            self._created = psutil.Process(self._proc.pid).create_time()
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        self._exit_watch = asyncio.create_task(self._close_pipes_after_exit())

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def _require(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise AgentProcessError("The agent process was not started.")
        return self._proc

    async def write_stdin(self, data: bytes, close: bool = False) -> None:
        """Write to the agent's stdin (PIPE mode only)."""
        proc = self._require()
        if proc.stdin is None:
            raise AgentProcessError("This agent's stdin is closed.")
        proc.stdin.write(data)
        await proc.stdin.drain()
        if close:
            proc.stdin.close()

    async def lines(self) -> AsyncIterator[Line]:
        """Yield stdout lines until EOF; raises :class:`AgentStalledError` on silence.

        A line longer than ``max_line_bytes`` is cut there and flagged ``truncated``;
        the rest of it is discarded as it arrives (never buffered).
        """
        splitter = LineSplitter(self.max_line_bytes)
        async for chunk in self.chunks():
            for line in splitter.feed(chunk):
                yield line
        for line in splitter.end():
            yield line

    async def chunks(self) -> AsyncIterator[bytes]:
        """Yield stdout as it arrives (at most 64 KiB at a time) until EOF; raises
        :class:`AgentStalledError` on silence. :class:`LineSplitter` makes lines of it."""
        proc = self._require()
        assert proc.stdout is not None
        reader = proc.stdout
        while chunk := await self._read_chunk(reader):
            yield chunk

    def widen_stdout(self) -> None:
        """Read stdout in bigger pieces (a busy stream: fewer, larger reads); best effort."""
        proc = self._require()
        self._read_size = WIDE_PIPE
        pipe = proc._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
        if pipe is not None:
            widen_pipe(pipe.get_extra_info("pipe"))

    async def _read_chunk(self, reader: asyncio.StreamReader) -> bytes:
        size = self._read_size
        if self.inactivity_timeout is None or self._exited():
            return await reader.read(size)  # after exit: bounded by the exit grace
        try:
            return await asyncio.wait_for(reader.read(size), self.inactivity_timeout)
        except TimeoutError as exc:
            if self._exited():  # silence after the agent ended is no stall
                return await reader.read(size)
            self._stalled = True
            raise AgentStalledError(
                f"The agent printed nothing for {self.inactivity_timeout:g} s.",
                "It may be stuck; raise the inactivity timeout if it is just slow.",
            ) from exc

    async def _drain_stderr(self) -> None:
        proc = self._require()
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(_READ_CHUNK):
            self._stderr.append(chunk)
            self._stderr_size += len(chunk)
            # Drop whole chunks only while what remains still covers the tail.
            while (len(self._stderr) > 1
                   and self._stderr_size - len(self._stderr[0]) >= STDERR_TAIL_BYTES):
                self._stderr_size -= len(self._stderr.popleft())

    def stderr_tail(self) -> str:
        data = b"".join(self._stderr)[-STDERR_TAIL_BYTES:]
        return data.decode("utf-8", "replace")

    def _exited(self) -> bool:
        return self._protocol is not None and self._protocol.exited.is_set()

    async def _close_pipes_after_exit(self) -> None:
        """Once the agent exited, give its pipes :attr:`exit_grace` to end; then kill what
        it left (whoever still holds them) and close them, which ends the readers."""
        protocol = self._protocol
        proc = self._proc
        assert protocol is not None
        assert proc is not None
        await protocol.exited.wait()
        try:
            await asyncio.wait_for(protocol.drained.wait(), self.exit_grace)
        except TimeoutError:
            _kill(self._leftovers())
            transport = proc._transport  # type: ignore[attr-defined]  # the pipes' owner
            for fd in (1, 2):
                pipe = transport.get_pipe_transport(fd)
                if pipe is not None:
                    pipe.close()

    async def wait(self) -> ProcessResult:
        """Wait for the agent's exit and the end of its output (at most :attr:`exit_grace`
        after the exit), stop what it left behind, and return how it ended."""
        proc = self._require()
        assert self._protocol is not None
        assert self._exit_watch is not None
        await self._protocol.exited.wait()
        await asyncio.shield(self._exit_watch)
        await self._protocol.drained.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task
        await self._sweep()
        code = proc.returncode
        assert code is not None
        return ProcessResult(
            exit_code=code if code >= 0 else None,
            signal=-code if code < 0 else None,
            stderr_tail=self.stderr_tail(),
            stalled=self._stalled,
            stopped=self._stopped,
        )

    async def stop(self, grace: float = 5.0, sig: int = signal.SIGTERM) -> None:
        """Stop the whole process tree: ``sig`` to the group and to every descendant (also
        those that left it), then SIGKILL after ``grace``. After the agent's own exit:
        kill what it left behind."""
        proc = self._proc
        if proc is None or self._protocol is None:
            return
        if self._exited():
            await self._sweep()
            return
        self._stopped = True
        tree = self._leftovers()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        for p in tree:
            with contextlib.suppress(psutil.Error):
                p.send_signal(sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._protocol.exited.wait(), grace)
        _kill([*tree, *self._leftovers()])
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        await self._protocol.exited.wait()
        await self._sweep()

    # -- what the agent leaves behind ------------------------------------------------

    def _session_is_ours(self) -> bool:
        """Whether the session id equal to the agent's pid still means the agent's session
        (the pid is not taken by a process that is not the agent)."""
        if self._proc is None:
            return False
        try:
            return bool(psutil.Process(self._proc.pid).create_time() == self._created)
        except psutil.NoSuchProcess:
            return True  # the agent is gone; a live member keeps its session id from reuse
        except psutil.Error:
            return False

    def _belongs(self, p: psutil.Process, by_session: bool) -> bool:
        assert self._proc is not None
        if by_session:
            with contextlib.suppress(OSError):
                if os.getsid(p.pid) == self._proc.pid:
                    return True
        try:
            tokens = str(p.environ().get(TREE_VAR, "")).split(":")
        except psutil.Error:
            return False
        return self._token in tokens

    def _leftovers(self) -> list[psutil.Process]:
        """The agent's descendants and every process of its tree that left it: in its
        session, or carrying its marker, and their descendants (never the agent itself)."""
        proc = self._proc
        if proc is None:
            return []
        found: dict[int, psutil.Process] = {p.pid: p for p in _descendants(proc.pid)}
        by_session = self._session_is_ours()
        me = os.getpid()
        if self._subreaper:  # every orphan of the tree is one of Relay's descendants
            candidates: list[psutil.Process] = _descendants(me)
        else:
            candidates = list(psutil.process_iter())
        for p in candidates:
            if p.pid in found or p.pid in (proc.pid, me) or not self._belongs(p, by_session):
                continue
            found[p.pid] = p
            for child in _descendants(p.pid):
                found.setdefault(child.pid, child)
        found.pop(proc.pid, None)
        found.pop(me, None)
        return list(found.values())

    async def _sweep(self) -> None:
        """Kill what is left of the agent's tree and reap those that reparented to Relay.
        Repeated while a round finds something (a leftover may fork as it is killed)."""
        if self._swept:
            return
        for _ in range(3):
            left = self._leftovers()
            if not left:
                break
            _kill(left)
            await _reap(left)
        self._swept = True


def _kill(procs: Sequence[psutil.Process]) -> None:
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _reap(procs: Sequence[psutil.Process]) -> None:
    """Wait (bounded) for killed processes to die; reap those that are Relay's children
    (orphans that reparented to it). Exactly these pids: another's exit status is never
    taken."""
    loop = asyncio.get_running_loop()
    for p in procs:
        try:
            fd = os.pidfd_open(p.pid)
        except (OSError, AttributeError):
            fd = None
        if fd is not None:
            dead: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _settle, dead)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(dead, REAP_WITHIN_S)
            finally:
                loop.remove_reader(fd)
                os.close(fd)
    me = os.getpid()
    for p in procs:
        with contextlib.suppress(psutil.Error):
            if p.ppid() != me:
                continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(p.pid, os.WNOHANG)  # noqa: ASYNC222 - WNOHANG never blocks


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []
