"""Reading one transcript file region for the usage index.

A :class:`ScanJob` says which file, from which offset to which size, with which reader and
starting state; :func:`run_job` reads it in bounded pieces (a file of many gigabytes or a line
of many megabytes never has to fit in memory) and returns plain tuples — cheap to send between
processes (:mod:`relay.wallet.usage_pool` runs many jobs).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from relay.wallet import transcripts
from relay.wallet.model import LimitSnapshot, UsageEntry
from relay.wallet.transcripts import Parsed, ReaderSpec, State, reader_named

#: the head hash covers this many first bytes (a replaced file has another head)
HEAD_BYTES = 4096
#: a region is read in pieces of about this many bytes, so memory stays bounded
CHUNK_BYTES = 16 * 1024 * 1024

#: (pos, ts_ms, model, input, output, cache_read, cache_write, reasoning, cost_usd, dedupe_key,
#: session_id, project)
Row = tuple[int, int, str | None, int, int, int, int, int, float | None, str | None, str | None,
            str | None]
#: (window, observed_ms, used_percent, resets_at_ms, window_minutes, status, origin)
LimitRow = tuple[str, int, float | None, int | None, int | None, str | None, str]
#: ``progress(done, total)``
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ScanJob:
    """Read ``path`` from ``start`` up to ``size`` with the reader called ``reader``."""

    path: str
    reader: str
    start: int
    size: int
    state: State = field(default_factory=dict)


@dataclass(slots=True)
class ScanResult:
    """What one job read: rows to store, where it stopped, and the file's head."""

    job: ScanJob
    end: int = 0
    rows: list[Row] = field(default_factory=list)
    limits: list[LimitRow] = field(default_factory=list)
    state: State = field(default_factory=dict)
    warnings: Counter[str] = field(default_factory=Counter)
    head_len: int = 0
    head_hash: str = ""
    bytes_read: int = 0
    #: the file could not be read (the old rows stay as they were)
    error: str | None = None


def head_hash(data: bytes) -> str:
    """A short hash of a file's first bytes."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def run_job(job: ScanJob) -> ScanResult:
    """Read one file region and parse it; an OS error becomes ``ScanResult.error``."""
    result = ScanResult(job, end=job.start, state=job.state)
    try:
        with open(job.path, "rb") as handle:
            head = handle.read(min(HEAD_BYTES, job.size))
            result.head_len, result.head_hash = len(head), head_hash(head)
            parsed = _parse(handle, job)
    except (OSError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    result.end, result.state, result.warnings = parsed.end, parsed.state, parsed.warnings
    result.bytes_read = max(job.size - job.start, 0)
    result.rows = [_row(e) for e in parsed.entries]
    result.limits = [_limit_row(s) for s in parsed.snapshots]
    return result


def run_batch(jobs: list[ScanJob]) -> list[ScanResult]:
    """:func:`run_job` over several jobs (what a worker process is sent)."""
    return [run_job(job) for job in jobs]


def _parse(handle: BinaryIO, job: ScanJob) -> Parsed:
    """The job's region, read in pieces of :data:`CHUNK_BYTES` that end at a newline.

    Plain reads, not a memory map: a transcript truncated while mapped would kill the process
    with SIGBUS, and the in-process fall-back runs in the GUI's.
    """
    reader = reader_named(job.reader)
    if reader.whole_file:
        return _parse_whole(handle, job, reader)
    out = Parsed([], [], job.start, job.state)
    pos = job.start
    while pos < job.size:
        data = _read_at(handle, pos, min(job.size - pos, CHUNK_BYTES))
        _absorb(out, reader.parse(data, out.state, 0, len(data), pos))
        if out.end > pos:
            pos = out.end
        elif pos + len(data) >= job.size or not data:
            break   # the last line is still being written
        else:
            pos = _long_line(handle, job, pos, reader, out)
    return out


def _long_line(handle: BinaryIO, job: ScanJob, pos: int, reader: ReaderSpec, out: Parsed) -> int:
    """A line longer than a chunk at ``pos``: parsed when under the cap, else skipped and counted."""
    newline = _find_newline(handle, pos + CHUNK_BYTES, job.size)
    if newline < 0:
        return job.size   # still being written: out.end stays at its start
    if newline - pos > transcripts.MAX_LINE_BYTES:
        out.warnings[transcripts.TOO_LONG] += 1
        out.end = newline + 1
        return out.end
    data = _read_at(handle, pos, newline + 1 - pos)
    _absorb(out, reader.parse(data, out.state, 0, len(data), pos))
    return newline + 1


def _find_newline(handle: BinaryIO, start: int, stop: int) -> int:
    """File offset of the first newline in [start, stop), or -1."""
    while start < stop:
        data = _read_at(handle, start, min(stop - start, CHUNK_BYTES))
        if not data:
            return -1
        at = data.find(b"\n")
        if at >= 0:
            return start + at
        start += len(data)
    return -1


def _parse_whole(handle: BinaryIO, job: ScanJob, reader: ReaderSpec) -> Parsed:
    if job.size - job.start > transcripts.MAX_LINE_BYTES:
        return Parsed([], [], job.start, job.state, Counter({transcripts.TOO_LONG: 1}))
    data = _read_at(handle, job.start, job.size - job.start)
    return reader.parse(data, job.state, 0, len(data), job.start)


def _absorb(out: Parsed, part: Parsed) -> None:
    out.entries.extend(part.entries)
    out.snapshots.extend(part.snapshots)
    out.warnings.update(part.warnings)
    out.state, out.end = part.state, part.end


def _read_at(handle: BinaryIO, offset: int, size: int) -> bytes:
    if hasattr(os, "pread"):
        return os.pread(handle.fileno(), size, offset)
    handle.seek(offset)   # Windows has no pread
    return handle.read(size)


def _row(e: UsageEntry) -> Row:
    t = e.tokens
    return (e.offset, e.ts_ms, e.model, t.input, t.output, t.cache_read, t.cache_write, t.reasoning,
            e.cost_usd, e.dedupe_key, e.session_id, e.project)


def _limit_row(s: LimitSnapshot) -> LimitRow:
    return (s.window, s.observed_ms, s.used_percent, s.resets_at_ms, s.window_minutes, s.status,
            s.origin)
