"""A CLI agent's stdout → events, parsed on a second core (a worker process).

The parent reads the agent's stdout and, once a run has printed :data:`AFTER_LINES` lines
(a busy stream; a short run never pays for a process), starts a worker — unless the
machine has no core to spare (:func:`core_free`: it would only add work) —: ``python -m
relay.runtimes.parse_worker``. While it starts the parent keeps parsing; when it is ready
the parent hands it the run's parser and line splitter (pickled, mid-stream: nothing is
parsed twice or lost) and from then on forwards stdout as it arrives. The worker cuts the
lines, runs the runtime's parser, scrubs every event (:func:`scrub_event`) and serialises
it; it sends the events back in batches, which the parent validates once (one
``validate_json`` of the batch) and the store writes as they are (``WriteOp.payload``).

Backpressure and bounded memory: every hop is a pipe or a bounded buffer — the parent
forwards the next chunk only once the worker's stdin took the last one, the worker
writes a batch (at most :data:`BATCH_EVENTS` events) only when the parent reads, and the
parent reads the next batch only when the runner took the last one (whose writer queue is
bounded). A worker that cannot start leaves the parsing in process (as on a one-core
machine, a frozen build, or with ``RELAY_PARSE_WORKER=off``); one that dies mid-stream
ends the run with a clear :class:`~relay.core.errors.RelayError`, never a hang.

Frames on both pipes: one tag byte, a 4-byte big-endian length, the payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import pickle
import select
import struct
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from pydantic import TypeAdapter, ValidationError

from relay.core.errors import AgentStalledError, RelayError
from relay.core.events import AgentEvent
from relay.core.procs import WIDE_PIPE, AgentProcess, LineSplitter, ProcessResult, widen_pipe

#: an event and, from a worker, its scrubbed JSON (stored as is); None: not yet serialised
Parsed = tuple[AgentEvent, bytes | None]

#: lines a run prints before its parsing moves to a worker (``RELAY_PARSE_WORKER=always``: 0)
AFTER_LINES = 2000
#: at most this many events in one batch from the worker
BATCH_EVENTS = 1024
_HEAD = struct.Struct(">cI")
_EVENTS = TypeAdapter(list[AgentEvent])

# frames: parent → worker
_PARSER, _DATA, _CALL, _END, _FINISH = b"P", b"D", b"C", b"E", b"F"
# worker → parent
_READY, _BATCH, _ENDED, _FINAL, _ERROR = b"R", b"B", b"e", b"Z", b"X"


def _frame(tag: bytes, payload: bytes = b"") -> bytes:
    return _HEAD.pack(tag, len(payload)) + payload


def worker_policy(env: dict[str, str] | Any) -> int | None:
    """After how many lines a run's parsing moves to a worker; None: never (``off``, one
    core, or a frozen build that cannot run ``-m``)."""
    mode = str(env.get("RELAY_PARSE_WORKER", "auto")).lower()
    if mode == "off" or getattr(sys, "frozen", False):
        return None
    if mode == "always":
        return 0
    return AFTER_LINES if _cores() >= 2 else None


def _cores() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores or 1


def core_free() -> bool:
    """Whether the machine has a core to spare (its 1-minute load average, Relay included,
    under its core count): on a saturated machine a second process only adds work — the
    parent and the worker spend more CPU per line together than parsing in process."""
    try:
        return os.getloadavg()[0] < _cores()
    except OSError:  # no load average here: assume the second core is there
        return True


# -- the parent's side ----------------------------------------------------------------------


def _batch(payload: bytes) -> list[Parsed]:
    """A worker's batch: the count, each event's end offset, then the events as one JSON
    array — validated in one call, each event's bytes kept to be stored as they are."""
    (count,) = struct.unpack_from(">I", payload)
    ends = struct.unpack_from(f">{count}I", payload, 4)
    body = payload[4 + 4 * count:]
    try:
        events = _EVENTS.validate_json(body)
    except ValidationError as exc:  # a bug, said as one: the run ends with it
        raise RelayError(f"The parse worker sent events Relay cannot read: {exc}",
                         "This is a bug in Relay; the agent was stopped.") from exc
    out: list[Parsed] = []
    start = 1
    for event, end in zip(events, ends, strict=True):
        out.append((event, bytes(body[start:end])))
        start = end + 1
    return out


class ParseWorker:
    """The parent's handle on one worker process (see the module docstring)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._pump: asyncio.Task[None] | None = None
        self._stalled: AgentStalledError | None = None

    @classmethod
    async def start(cls, env: dict[str, str] | None = None) -> ParseWorker | None:
        """A ready worker, or None when one cannot start (parsing then stays in process)."""
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "relay.runtimes.parse_worker",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, env=env, limit=WIDE_PIPE)
        except (OSError, ValueError):
            return None
        worker = cls(proc)
        try:
            tag, _ = await worker._read()
        except RelayError:
            tag = b""
        if tag != _READY:
            await worker.close()
            return None
        return worker

    async def _read(self) -> tuple[bytes, bytes]:
        assert self.proc.stdout is not None
        try:
            tag, size = _HEAD.unpack(await self.proc.stdout.readexactly(_HEAD.size))
            payload = await self.proc.stdout.readexactly(size) if size else b""
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise self._died() from exc
        if tag == _ERROR:
            raise RelayError(f"The parse worker failed: {payload.decode(errors='replace')}",
                             "This is a bug in Relay; the agent was stopped.")
        return tag, payload

    def _died(self) -> RelayError:
        code = self.proc.returncode
        how = f"exit code {code}" if code is None or code >= 0 else f"signal {-code}"
        return RelayError(f"The parse worker (pid {self.proc.pid}) ended mid-stream ({how}); "
                          "the agent was stopped.", "Run the task again; if it recurs, set "
                          "RELAY_PARSE_WORKER=off to parse in Relay's own process.")

    def _send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def call(self, name: str) -> None:
        """Call the parser's method ``name`` (no arguments) at this point of the stream."""
        with contextlib.suppress(ConnectionError, RuntimeError):
            self._send(_frame(_CALL, name.encode()))

    async def take_over(self, parser: Any, splitter: LineSplitter,
                        chunks: AsyncIterator[bytes]) -> AsyncGenerator[list[Parsed], None]:
        """Hand the worker the run's parser and splitter, forward ``chunks`` to it and
        yield its batches until the agent's stdout ends (a stall is raised after them)."""
        self._send(_frame(_PARSER, pickle.dumps((parser, splitter))))
        self._pump = asyncio.create_task(self._forward(chunks), name="relay-parse-forward")
        while True:
            tag, payload = await self._read()
            if tag == _ENDED:
                break
            yield _batch(payload)
        if self._stalled is not None:
            raise self._stalled

    async def _forward(self, chunks: AsyncIterator[bytes]) -> None:
        assert self.proc.stdin is not None
        try:
            try:
                async for chunk in chunks:
                    self._send(_frame(_DATA, chunk))
                    await self.proc.stdin.drain()  # backpressure: the worker took it
            except AgentStalledError as exc:
                self._stalled = exc
            self._send(_frame(_END))
            await self.proc.stdin.drain()
        except (ConnectionError, RuntimeError):
            return  # the worker died: its reader says so

    async def finish(self, result: ProcessResult) -> list[Parsed]:
        """The parser's closing events (the agent exited)."""
        self._send(_frame(_FINISH, pickle.dumps(result)))
        tag, payload = await self._read()
        assert tag == _FINAL
        return _batch(payload)

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        with contextlib.suppress(TimeoutError):  # (killed: at once; never a hang here)
            await asyncio.wait_for(self.proc.wait(), 5.0)


class StreamParsing:
    """One run's parsing: in process, moved to a :class:`ParseWorker` once the stream is
    busy (``after`` lines; None: never)."""

    def __init__(self, parser: Any, max_line_bytes: int, after: int | None) -> None:
        self.parser = parser
        self.splitter = LineSplitter(max_line_bytes)
        self.after = after
        self.worker: ParseWorker | None = None
        self._starting: asyncio.Task[ParseWorker | None] | None = None

    def call(self, name: str) -> None:
        """Call the parser's method ``name`` where the stream is now."""
        if self.worker is not None:
            self.worker.call(name)
        else:
            getattr(self.parser, name)()

    async def batches(self, proc: AgentProcess) -> AsyncGenerator[list[Parsed], None]:
        """The events of the agent's stdout, a line's (in process) or a worker's batch at a
        time, until EOF; raises :class:`AgentStalledError` on silence."""
        chunks = proc.chunks()
        lines = 0
        if self.after == 0:  # always: the worker parses from the first line, once it is ready
            self._starting = asyncio.create_task(ParseWorker.start())
            await asyncio.wait({self._starting})
        while True:
            worker = self._worker(lines)
            if worker is not None:  # hand over between two chunks
                self.worker = worker
                proc.widen_stdout()
                async for batch in worker.take_over(self.parser, self.splitter, chunks):
                    yield batch
                return
            chunk = await anext(chunks, None)
            if chunk is None:
                break
            for line in self.splitter.feed(chunk):
                events = self.parser.feed_text(line.text)
                if events:
                    yield [(event, None) for event in events]
                lines += 1
        for line in self.splitter.end():
            events = self.parser.feed_text(line.text)
            if events:
                yield [(event, None) for event in events]

    def _worker(self, lines: int) -> ParseWorker | None:
        """The worker to hand over to now, once one was started and is ready."""
        if self.after is None:
            return None
        if self._starting is None:
            if lines >= self.after and core_free():
                self._starting = asyncio.create_task(ParseWorker.start(),
                                                     name="relay-parse-worker-start")
            return None
        if not self._starting.done():
            return None
        worker = self._starting.result()
        if worker is None:
            self.after = None  # cannot start here: stay in process
        return worker

    async def finish(self, result: ProcessResult) -> list[Parsed]:
        """The closing events; the last one is the run's only SessionEnded."""
        if self.worker is not None:
            return await self.worker.finish(result)
        return [(event, None) for event in self.parser.finish(result)]

    async def close(self) -> None:
        if self._starting is not None:
            if not self._starting.done():
                self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                worker = await self._starting
                if worker is not None and worker is not self.worker:
                    await worker.close()
        if self.worker is not None:
            await self.worker.close()


# -- the worker's side ----------------------------------------------------------------------


class _Worker:
    def __init__(self, write: Callable[[bytes], object]) -> None:
        self.write = write
        self.parser: Any = None
        self.splitter: LineSplitter | None = None
        self.items: list[bytes] = []
        from relay.core.scrub_events import scrub_event

        self.scrub = scrub_event

    def add(self, events: list[AgentEvent]) -> None:
        for event in events:
            event = self.scrub(event)
            self.items.append(event.__pydantic_serializer__.to_json(event))

    def flush(self, tag: bytes = _BATCH, force: bool = False) -> None:
        items, self.items = self.items, []
        if not items and not force:
            return
        ends, at = [], 0
        for item in items:
            at += 1 + len(item)  # "[" or "," before it
            ends.append(at)
        head = struct.pack(f">I{len(ends)}I", len(ends), *ends)
        self.write(_frame(tag, head + b"[" + b",".join(items) + b"]"))

    def handle(self, tag: bytes, payload: bytes) -> bool:
        """One frame; False once the run is over."""
        if tag == _DATA:
            assert self.splitter is not None
            for line in self.splitter.feed(payload):
                self.add(self.parser.feed_text(line.text))
                if len(self.items) >= BATCH_EVENTS:
                    self.flush()
        elif tag == _PARSER:
            self.parser, self.splitter = pickle.loads(payload)
        elif tag == _CALL:
            getattr(self.parser, payload.decode())()
        elif tag == _END:
            assert self.splitter is not None
            for line in self.splitter.end():
                self.add(self.parser.feed_text(line.text))
            self.flush()
            self.write(_frame(_ENDED))
        elif tag == _FINISH:
            self.add(self.parser.finish(pickle.loads(payload)))
            self.flush(_FINAL, force=True)
            return False
        return True


def main() -> int:
    """The worker process: frames on stdin, frames on stdout (see the module docstring)."""
    import relay.runtimes.claude_stream  # noqa: F401 - the parsers' imports, before "ready"

    out = sys.stdout.buffer
    stdin = sys.stdin.buffer.fileno()
    widen_pipe(stdin)
    widen_pipe(out)

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    gc.freeze()  # the imports are long-lived; the events are not cyclic
    worker = _Worker(write)
    write(_frame(_READY))
    buf = bytearray()
    try:
        while True:
            if len(buf) >= _HEAD.size:
                tag, size = _HEAD.unpack_from(buf)
                if len(buf) >= _HEAD.size + size:
                    payload = bytes(buf[_HEAD.size:_HEAD.size + size])
                    del buf[:_HEAD.size + size]
                    if not worker.handle(tag, payload):
                        return 0
                    continue
            if not select.select([stdin], [], [], 0)[0]:
                worker.flush()  # nothing more to parse for now: send what is ready
            data = os.read(stdin, WIDE_PIPE)
            if not data:
                return 0  # the parent went away
            buf += data
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - said to the parent, which ends the run with it
        with contextlib.suppress(OSError):
            write(_frame(_ERROR, f"{type(exc).__name__}: {exc}".encode()))
        return 1


if __name__ == "__main__":
    sys.exit(main())
