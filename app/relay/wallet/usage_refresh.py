"""One refresh of the usage index: what changed on disk since the last one, read and stored.

For each transcript file of the sources, compared with its ``files`` row:

* new → read from 0;
* same size, mtime, inode and device → skipped without being opened;
* grown, same inode, same first bytes → read from the offset consumed so far (only the
  appended bytes; a partial last line was not consumed and is read again);
* smaller than what was consumed, first bytes changed (rewritten), inode or device changed
  (rotated, replaced), or a whole-document reader (Gemini ``.json``) → its rows are dropped
  and it is read again from 0;
* gone → its rows are dropped (copies of its calls in other files take over) — unless the
  folder it was in could not be listed this time (counted), then it is kept as it was.

A file that cannot be read keeps its earlier rows and is counted (``unreadable``). A last line
without its newline is left for the next refresh (the CLI may be writing it) — and counted
(``truncated_line``) once the file has not changed for ten minutes. Entries
timestamped more than a day ahead of the clock are kept (the windows sort by time) and
counted (``future_timestamp``).

A refresh is one write transaction, taken up front: a second process refreshing the same
index waits for it (and then finds little to do) instead of interleaving with it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson

from relay.wallet.transcripts import TranscriptSource, reader_for
from relay.wallet.usage_pool import scan
from relay.wallet.usage_scan import HEAD_BYTES, Progress, ScanJob, ScanResult, head_hash
from relay.wallet.usage_sources import UNREADABLE, Discovery, FoundFile, discover
from relay.wallet.usage_store import FileRow, UsageStore

FUTURE = "future_timestamp"
TRUNCATED = "truncated_line"
#: a last line without its newline this long after the file last changed is cut off for good
STALE_TAIL_MS = 10 * 60 * 1000
DAY_MS = 24 * 3600 * 1000


@dataclass(slots=True)
class RefreshReport:
    """What one :meth:`UsageIndex.refresh` did."""

    files_seen: int = 0
    #: new files and files that changed (read this time)
    files_changed: int = 0
    files_removed: int = 0
    #: transcript bytes read (appended bytes only, for a file read incrementally)
    bytes_read: int = 0
    #: rows counted and dropped: a file read again from 0 drops all its rows and adds them anew
    entries_added: int = 0
    entries_removed: int = 0
    #: counted problems of this refresh by kind (``unreadable``, ``corrupt_line``...)
    warnings: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0


class Refresh:
    """The steps of one refresh over one store (see the module docstring)."""

    def __init__(self, store: UsageStore, now_ms: int, workers: int | None) -> None:
        self.store = store
        self.now_ms = now_ms
        self.workers = workers
        self.report = RefreshReport()
        self.warnings: Counter[str] = Counter()
        self.removed = 0

    def run(self, sources: Sequence[TranscriptSource], progress: Progress | None) -> RefreshReport:
        started = time.perf_counter()
        found = discover(sources)
        self.report.files_seen = len(found.files)
        self.store.begin()   # before reading what is known: another refresher may just have committed
        try:
            known = self.store.files()
            before = self.store.count_entries()
            self._forget_gone(known, found)
            jobs = [job for f in found.files.values() if (job := self._plan(f, known.get(f.path)))]
            self.report.files_changed = len(jobs)
            self._read(jobs, found, known, _file_progress(progress, len(jobs)))
            for counts in found.warnings.values():
                self.warnings.update(counts)
            self.store.set_source_warnings(found.warnings)
            after = self.store.count_entries()
            self.store.commit()
        except BaseException:
            self.store.rollback()
            raise
        self.report.entries_removed = self.removed
        self.report.entries_added = after - before + self.removed
        self.report.warnings = dict(self.warnings)
        self.report.elapsed_s = time.perf_counter() - started
        return self.report

    def _forget_gone(self, known: dict[str, FileRow], found: Discovery) -> None:
        for path, row in known.items():
            if path not in found.files and not any(path.startswith(d + os.sep) for d in found.blind):
                self.removed += self.store.remove_file(row.id)
                self.report.files_removed += 1

    def _plan(self, f: FoundFile, row: FileRow | None) -> ScanJob | None:
        if row is not None and row.entry != f.source.entry:
            self.store.set_entry(row.id, f.source.entry)
        if row is not None and (f.size, f.mtime_ns, f.inode, f.device) == (
                row.size, row.mtime_ns, row.inode, row.device):
            return None   # the common case: not even opened
        spec = reader_for(f.source.runtime, f.path)
        if spec is None:
            return None
        if row is None:
            return ScanJob(f.path, spec.name, 0, f.size, dict(f.hints))
        restart = (spec.whole_file or spec.name != row.reader or f.size < row.consumed
                   or (f.inode, f.device) != (row.inode, row.device) or not _same_head(f.path, row))
        if restart:
            return ScanJob(f.path, spec.name, 0, f.size, dict(f.hints))
        return ScanJob(f.path, spec.name, row.consumed, f.size, orjson.loads(row.state))

    def _read(self, jobs: list[ScanJob], found: Discovery, known: dict[str, FileRow],
              progress: Progress | None) -> None:
        for result in scan(jobs, progress, self.workers):
            f = found.files[result.job.path]
            if result.error is not None:
                found.warn(f.source.entry, UNREADABLE)
                continue
            self._store(result, f, known.get(f.path))

    def _store(self, result: ScanResult, f: FoundFile, row: FileRow | None) -> None:
        if row is not None and result.job.start == 0:
            self.removed += self.store.drop_entries(row.id)
        file_id = self.store.save_file(FileRow(
            row.id if row else 0, f.path, f.source.entry, f.source.runtime, result.job.reader,
            f.size, f.mtime_ns, f.inode, f.device, result.end, result.head_len, result.head_hash,
            orjson.dumps(result.state)))
        self.store.add_rows(file_id, result.rows)
        self.store.add_limits(f.source.entry, result.limits)
        warnings = Counter(result.warnings)
        if result.end < f.size and self.now_ms - f.mtime_ns // 1_000_000 > STALE_TAIL_MS:
            warnings[TRUNCATED] += 1   # nobody is writing it any more: it stays cut off
        future = sum(1 for r in result.rows if r[1] > self.now_ms + DAY_MS)
        if future:
            warnings[FUTURE] += future
        self.store.add_file_warnings(file_id, warnings)
        self.warnings.update(warnings)
        self.report.bytes_read += result.bytes_read


def _same_head(path: str, row: FileRow) -> bool:
    """Whether the file still starts with the bytes it started with when last read."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(min(row.head_len, HEAD_BYTES))
    except OSError:
        return False
    return len(head) == row.head_len and head_hash(head) == row.head_hash


def _file_progress(progress: Progress | None, total: int) -> Progress | None:
    """Turn the scan's (bytes done, bytes total) into (files done, files total)."""
    if progress is None:
        return None
    done = 0

    def step(_bytes_done: int, _bytes_total: int) -> None:
        nonlocal done
        done += 1
        progress(done, total)

    return step

