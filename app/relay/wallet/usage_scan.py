"""Reading one transcript file region for the usage index.

A :class:`ScanJob` says which file, from which offset to which size, with which reader and
starting state; :func:`run_job` reads it (a memory map for big regions, so a file of many
gigabytes or a line of many megabytes never has to fit in memory) and returns plain tuples —
cheap to send between processes (:mod:`relay.wallet.usage_pool` runs many jobs).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from relay.wallet.model import LimitSnapshot, UsageEntry
from relay.wallet.transcripts import Parsed, State, reader_named

#: the head hash covers this many first bytes (a replaced file has another head)
HEAD_BYTES = 4096
#: regions at least this big are memory-mapped instead of read
MMAP_BYTES = 4 * 1024 * 1024

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
    reader = reader_named(job.reader)
    length = job.size - job.start
    if length <= 0:
        return Parsed([], [], job.start, job.state)
    fileno = handle.fileno()
    if length >= MMAP_BYTES:
        with mmap.mmap(fileno, 0, access=mmap.ACCESS_READ) as mapped:
            return reader.parse(mapped, job.state, job.start, min(job.size, len(mapped)), 0)
    data = os.pread(fileno, length, job.start) if hasattr(os, "pread") else _read_at(handle, job)
    return reader.parse(data, job.state, 0, len(data), job.start)


def _read_at(handle: BinaryIO, job: ScanJob) -> bytes:
    handle.seek(job.start)
    return handle.read(job.size - job.start)


def _row(e: UsageEntry) -> Row:
    t = e.tokens
    return (e.offset, e.ts_ms, e.model, t.input, t.output, t.cache_read, t.cache_write, t.reasoning,
            e.cost_usd, e.dedupe_key, e.session_id, e.project)


def _limit_row(s: LimitSnapshot) -> LimitRow:
    return (s.window, s.observed_ms, s.used_percent, s.resets_at_ms, s.window_minutes, s.status,
            s.origin)
