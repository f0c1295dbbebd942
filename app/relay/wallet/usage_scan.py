"""Reading transcript files for the usage index: one job per file, on every core for big scans.

A :class:`ScanJob` says which file, from which offset to which size, with which reader and
starting state; :func:`run_job` reads it (a memory map for big regions, so a file of many
gigabytes or a line of many megabytes never has to fit in memory) and returns plain tuples —
cheap to send between processes. :func:`scan` runs jobs in this process for small refreshes and
in a pool of ``spawn``-ed processes for a big (cold) scan; the parent only merges results into
SQLite, while the workers go on parsing.
"""

from __future__ import annotations

import hashlib
import mmap
import multiprocessing
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import BinaryIO

from relay.wallet.model import LimitSnapshot, UsageEntry
from relay.wallet.transcripts import Parsed, State, reader_named

#: the head hash covers this many first bytes (a replaced file has another head)
HEAD_BYTES = 4096
#: regions at least this big are memory-mapped instead of read
MMAP_BYTES = 4 * 1024 * 1024
#: below this many bytes to read, a process pool costs more than it saves
PARALLEL_BYTES = 48 * 1024 * 1024
#: a worker gets files in batches of about this many bytes (fewer round trips)
BATCH_BYTES = 16 * 1024 * 1024

#: (pos, ts_ms, model, input, output, cache_read, cache_write, reasoning, cost_usd, dedupe_key,
#: session_id, project)
Row = tuple[int, int, str | None, int, int, int, int, int, float | None, str | None, str | None,
            str | None]
#: (window, observed_ms, used_percent, resets_at_ms, window_minutes, status, origin)
LimitRow = tuple[str, int, float | None, int | None, int | None, str | None, str]
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


def scan(jobs: list[ScanJob], progress: Progress | None = None,
         workers: int | None = None) -> Iterator[ScanResult]:
    """Run ``jobs``, yielding results as they finish (not in order).

    Args:
        jobs: the file regions to read.
        progress: called with (bytes done, bytes total) after each result.
        workers: processes for a big scan (default: every core); small scans stay in-process.
    """
    total = sum(max(j.size - j.start, 0) for j in jobs)
    done = 0
    for result in _results(jobs, total, workers or os.cpu_count() or 1):
        done += max(result.job.size - result.job.start, 0)
        if progress is not None:
            progress(done, total)
        yield result


def _results(jobs: list[ScanJob], total: int, workers: int) -> Iterator[ScanResult]:
    # a frozen build needs multiprocessing.freeze_support() in its entry point to spawn workers
    if workers < 2 or len(jobs) < 2 or total < PARALLEL_BYTES or getattr(sys, "frozen", False):
        yield from map(run_job, jobs)
        return
    pending = {job.path: job for job in jobs}
    context = multiprocessing.get_context("spawn")  # fork would copy the GUI's threads
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(run_batch, batch) for batch in _batches(jobs)]
            for future in as_completed(futures):
                for result in future.result():
                    pending.pop(result.job.path, None)
                    yield result
    except (BrokenProcessPool, OSError):
        # workers that cannot start (no freeze_support, a __main__ that cannot be re-imported)
        # or that died: what they did not return is read here
        yield from map(run_job, list(pending.values()))


def _batches(jobs: list[ScanJob]) -> Iterator[list[ScanJob]]:
    """Biggest files first (the last worker to finish sets the wall time), grouped by bytes."""
    batch: list[ScanJob] = []
    size = 0
    for job in sorted(jobs, key=lambda j: j.size - j.start, reverse=True):
        batch.append(job)
        size += job.size - job.start
        if size >= BATCH_BYTES or len(batch) >= 256:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
