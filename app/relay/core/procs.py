"""Agent subprocesses: argument arrays, own session, bounded output, whole-tree stop.

An :class:`AgentProcess` starts one executable in its own process group
(``start_new_session``), yields stdout line by line (each line bounded in
length; over-long lines are truncated and flagged), keeps a bounded tail of
stderr for diagnosis, detects silence with an inactivity timeout, and stops
the whole process tree: a polite signal to the group, a grace period, then
SIGKILL to every descendant psutil can still find.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from relay.core.errors import AgentProcessError, AgentStalledError, CliNotFoundError

MAX_LINE_BYTES = 8 * 1024 * 1024
STDERR_TAIL_BYTES = 64 * 1024
_READ_CHUNK = 64 * 1024


class StdinMode:
    """How the agent's stdin is wired: closed (/dev/null) or a pipe we write to."""

    DEVNULL = "devnull"
    PIPE = "pipe"


@dataclass(frozen=True, slots=True)
class Line:
    """One stdout line, without its newline; ``truncated`` if it was cut."""

    text: str
    truncated: bool = False


@dataclass
class ProcessResult:
    """How the process ended."""

    exit_code: int | None
    signal: int | None
    stderr_tail: str
    stalled: bool = False
    stopped: bool = False



def find_executable(runtime: str, default_name: str, install_hint: str,
                    env: Mapping[str, str] | None = None) -> str:
    """Locate a runtime's executable: ``RELAY_<RUNTIME>_BIN`` first, then PATH.

    Raises:
        CliNotFoundError: naming the CLI and how to install it.
    """
    env = os.environ if env is None else env
    var = f"RELAY_{runtime.upper()}_BIN"
    override = env.get(var)
    if override:
        found = shutil.which(override, path=env.get("PATH"))
        if found:
            return found
        raise CliNotFoundError(
            f"{var} points at {override!r}, which is not an executable file.",
            f"Fix {var} or unset it to use `{default_name}` from PATH.",
        )
    found = shutil.which(default_name, path=env.get("PATH"))
    if found is None:
        raise CliNotFoundError(
            f"The {runtime} CLI (`{default_name}`) is not installed or not on PATH.",
            f"{install_hint} — or set {var} to its path.",
        )
    return found


@dataclass
class AgentProcess:
    """One running agent executable. Use :meth:`start`, iterate :meth:`lines`, :meth:`wait`."""

    argv: Sequence[str]
    cwd: Path
    env: Mapping[str, str]
    stdin: str = StdinMode.DEVNULL
    inactivity_timeout: float | None = None
    max_line_bytes: int = MAX_LINE_BYTES
    _proc: asyncio.subprocess.Process | None = field(default=None, init=False)
    _stderr: deque[bytes] = field(default_factory=deque, init=False)
    _stderr_size: int = field(default=0, init=False)
    _stderr_task: asyncio.Task[None] | None = field(default=None, init=False)
    _stalled: bool = field(default=False, init=False)
    _stopped: bool = field(default=False, init=False)

    async def start(self) -> None:
        """Spawn the process. Raises :class:`AgentProcessError` if it cannot start."""
        if not self.argv:
            raise AgentProcessError("No command to run.")
        stdin = asyncio.subprocess.PIPE if self.stdin == StdinMode.PIPE else asyncio.subprocess.DEVNULL
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv, cwd=str(self.cwd), env=dict(self.env), stdin=stdin,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True, limit=_READ_CHUNK,
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
        self._stderr_task = asyncio.create_task(self._drain_stderr())

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
        proc = self._require()
        assert proc.stdout is not None
        reader = proc.stdout
        limit = self.max_line_bytes
        pending = bytearray()  # the start of a line that spans reads (≤ limit bytes)
        dropping = False  # the pending line went over the limit
        while chunk := await self._read_chunk(reader):
            parts = chunk.split(b"\n")
            for i, part in enumerate(parts[:-1]):
                if i == 0 and (pending or dropping):
                    cut = dropping or len(pending) + len(part) > limit
                    pending += part[: max(limit - len(pending), 0)]
                    yield Line(pending.decode("utf-8", "replace"), cut)
                    pending, dropping = bytearray(), False
                else:
                    yield Line(part[:limit].decode("utf-8", "replace"), len(part) > limit)
            tail = parts[-1]
            if not dropping and tail:
                room = limit - len(pending)
                pending += tail[:room]
                dropping = len(tail) > room
        if pending or dropping:
            yield Line(pending.decode("utf-8", "replace"), dropping)

    async def _read_chunk(self, reader: asyncio.StreamReader) -> bytes:
        if self.inactivity_timeout is None:
            return await reader.read(_READ_CHUNK)
        try:
            return await asyncio.wait_for(reader.read(_READ_CHUNK), self.inactivity_timeout)
        except TimeoutError as exc:
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

    async def wait(self) -> ProcessResult:
        """Wait for exit and return how it ended."""
        proc = self._require()
        code = await proc.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task
        return ProcessResult(
            exit_code=code if code >= 0 else None,
            signal=-code if code < 0 else None,
            stderr_tail=self.stderr_tail(),
            stalled=self._stalled,
            stopped=self._stopped,
        )

    async def stop(self, grace: float = 5.0, sig: int = signal.SIGTERM) -> None:
        """Stop the whole process tree: ``sig`` to the group, then SIGKILL after ``grace``."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        self._stopped = True
        tree = _descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), grace)
        for p in [*tree, *_descendants(proc.pid)]:
            with contextlib.suppress(psutil.Error):
                p.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.returncode is None:
            await proc.wait()


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []
