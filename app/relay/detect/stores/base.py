"""What a session store is: a cheap listing, and a full read into Relay's events.

Every store turns a runtime's own record of a session into the closed event model of
:mod:`relay.core.events` (assistant text, tool calls and results, limits, errors, turn ends),
so one lifter (:mod:`relay.detect.lift`) derives intent and state for all of them, and the
handoff contract's builders can be reused for adoption.

Stores never raise on bad input: a file being written, truncated or corrupt lines, a huge tool
result, a locked SQLite file, an unreadable folder — what could not be read goes into
``problems`` (or :attr:`StoreListing.problems`) with the reason, and the scan goes on.

Every file a store reads is opened by :func:`relay.core.fsutil.open_regular` (or
:func:`read_regular`): a regular file only — a FIFO, a device (a ``*.jsonl`` symlink to
``/dev/zero``) or a socket is a problem, not a read that never ends — and no more than
:data:`MAX_FILE_BYTES` of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from relay.core import fsutil
from relay.core.events import AgentEvent
from relay.core.fsutil import open_regular


@dataclass(frozen=True, slots=True)
class StoreItem:
    """One session as listed (no content read yet): enough to tell whether it changed."""

    runtime: str
    agent_session_id: str
    #: the account (provider:label) or bare provider whose folder it was found in
    entry: str
    path: Path
    size: int
    mtime_ns: int


@dataclass(slots=True)
class StoreRead:
    """One session read in full."""

    item: StoreItem
    events: list[AgentEvent] = field(default_factory=list)
    #: the folder the agent worked in
    cwd: str | None = None
    started_ms: int | None = None
    last_activity_ms: int | None = None
    #: from the session's own metadata where the runtime records them
    skills: list[str] = field(default_factory=list)
    mcp_servers: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    #: the last record is a turn that did not finish writing (the agent is mid-turn, or died)
    open_turn: bool = False
    problems: list[str] = field(default_factory=list)
    #: read in full (False: only its head and tail, what the table shows — see
    #: :meth:`SessionStore.summary`)
    whole: bool = True


@dataclass(slots=True)
class StoreListing:
    items: list[StoreItem] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class SessionStore(Protocol):
    """A runtime's sessions under one configuration folder (or editor storage folder)."""

    runtime: str

    def list(self, root: Path, entry: str) -> StoreListing:
        """Every session under ``root`` (cheap: names, sizes, times)."""
        ...

    def read(self, item: StoreItem) -> StoreRead:
        """One session in full (never raises; problems are reported in the result)."""
        ...


def summary(store: SessionStore, item: StoreItem) -> StoreRead:
    """What the table shows of one session (its state, first prompt, cwd, times, last
    words): the store's ``summary`` — a read of the file's head and tail, ``whole`` False
    when that skipped anything — or its full read when it has none."""
    read_summary = getattr(store, "summary", None)
    return read_summary(item) if read_summary is not None else store.read(item)


#: the most Relay reads of one file in a runtime's store (a longer file is read this far)
MAX_FILE_BYTES = 4 * 1024 * 1024 * 1024


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The whole of the regular file ``path``; OSError (EFBIG) when it is over ``limit``."""
    return fsutil.read_regular(path, limit)


def iter_lines(path: Path, limit: int = 64 * 1024 * 1024,
               at: int = 0) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each complete line of a JSONL file, from the line starting at
    ``at``.

    A line longer than ``limit`` comes as ``b""`` (the caller counts it) without being held
    in memory; a partial last line (still being written) is not yielded. Only the first
    :data:`MAX_FILE_BYTES` are read.
    """
    with open_regular(path) as handle:
        handle.seek(at)
        offset = at         # file offset of the line being gathered
        pending = b""
        skipping = False    # inside a line over the limit: dropped, only its end is looked for
        for chunk in iter(lambda: handle.read(min(1 << 20, max(0, MAX_FILE_BYTES - handle.tell()))), b""):
            start = 0
            while True:
                cut = chunk.find(b"\n", start)
                if cut < 0:
                    if not skipping:
                        pending += chunk[start:]
                        if len(pending) > limit:
                            skipping, pending = True, b""
                    break
                line = b"" if skipping else pending + chunk[start:cut]
                end = handle.tell() - len(chunk) + cut + 1
                yield offset, line if len(line) <= limit else b""
                offset, pending, skipping, start = end, b"", False, cut + 1


def tail_start(handle: BinaryIO, size: int, want: int, floor: int,
               limit: int = 64 * 1024 * 1024) -> int:
    """Where the last ``want`` bytes of a file of ``size`` begin, moved on to a line start
    (never before ``floor``, a line start itself): at least one complete line follows —
    a last line longer than ``want`` is looked for further back, up to ``limit`` bytes
    (past that, ``floor``: the lines are read from there and the long one counted)."""
    span = want
    while size - span > floor:
        if span > limit + want:
            return floor
        handle.seek(size - span - 1)
        data = handle.read(span + 1)
        cut = data.find(b"\n")
        if 0 <= cut < len(data) - 1 and data.find(b"\n", cut + 1) >= 0:
            return size - span + cut
        span *= 2
    return floor
