"""The hash-chained audit log: the handoff story, tamper-evident, in ``<data>/audit.jsonl``.

Format (seed 000): append-only JSON Lines, UTF-8, one entry per ``\\n``-terminated line::

    {"ts":"2026-06-03T15:41:03.123Z","prevHash":"000…0","hash":"a3f8…","event":"handoff_paused","data":{…}}

- ``ts``: UTC, ISO-8601 with milliseconds and ``Z`` (``YYYY-MM-DDTHH:MM:SS.mmmZ``).
- ``prevHash``: the previous line's ``hash``; the first line's is 64 zeros.
- ``hash``: 64 lowercase hex digits, defined exactly as::

      body = json.dumps({"data": data, "event": event, "ts": ts},
                        sort_keys=True, separators=(",", ":"),
                        ensure_ascii=False, allow_nan=False)
      hash = sha256((prevHash + body).encode("utf-8")).hexdigest()

  i.e. canonical JSON (keys sorted at every level, no whitespace, non-ASCII written as
  itself, UTF-8, no NaN/Infinity) of an object holding ``data``, ``event`` and ``ts``,
  prefixed by the 64 hex characters of ``prevHash``. **Deviation from the seed**: the seed
  hashes ``canonical(event + data)`` only; Relay also hashes ``ts`` so that a changed
  time stamp is detected too.

``data`` must be a JSON object. Before hashing it is passed through the ``scrub`` hook
(secrets never reach the file) and normalised by a JSON round trip (tuples become lists;
non-string keys are refused), so what is hashed is exactly what a reader parses back.
A non-JSON value raises ``TypeError``/``ValueError``: that is a bug in the caller.

``verify`` walks the chain and names the first broken line (1-based) and why: not JSON
(or a blank line), not an entry (missing, extra or mistyped field), ``prevHash`` not the
previous line's hash (a line deleted, inserted or reordered before it), ``hash`` not the
line's content (the line was edited), bytes other than the ones written (a line is exactly
:meth:`AuditEntry.to_line`: a CRLF ending, added spaces or reordered fields are a rewrite
even when the hash still holds), or an incomplete last line (no final newline: a cut-off
write or a truncated file). An empty or missing log is intact with 0 entries.
Limits: removing whole lines from the *end*, or rewriting the whole file with fresh
hashes, cannot be seen from the file alone; anchoring the last hash elsewhere would.

Concurrency: several Relay processes may append to one file. Each append takes an
exclusive OS lock on the sidecar ``audit.jsonl.lock`` (``flock`` on POSIX, ``msvcrt`` on
Windows; the sidecar, not the log, so moving the log aside never strands a waiter), then
re-reads the last line's hash and writes the new line with one ``O_APPEND`` write — the
chain never forks. A thread lock serialises appends through one ``AuditLog`` object.

Durability: with ``durable=True`` (the default) every append is ``fsync``-ed before it
returns (and the folder when the file is new): entries are rare (handoff steps and
session lifecycle) and each must survive a crash that the state machine survives.
Appends block; async code calls them through a worker thread.

Damage policy: an append never repairs or rewrites the log. A write that fails midway
is truncated back. If the last line is incomplete or unreadable, the chain cannot be
continued and ``append`` raises :class:`AuditDamagedError`; the user keeps a copy, moves
the file aside, and the next append starts a new chain. An edit in the middle does not
stop appends: the chain continues and ``verify`` keeps reporting the edit.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.errors import AuditDamagedError, AuditError
from relay.core.fsutil import private_dir
from relay.core.store.scrubbed import ScrubbingConnection

GENESIS_HASH = "0" * 64
_FIELDS = frozenset({"ts", "prevHash", "hash", "event", "data"})
_HEX64 = re.compile(r"[0-9a-f]{64}")
_TAIL_BLOCK = 4096

Scrub = Callable[[Any], Any]
Clock = Callable[[], datetime]


def canonical_json(value: Any) -> str:
    """Relay's canonical JSON: sorted keys, no whitespace, non-ASCII kept, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def entry_hash(prev_hash: str, ts: str, event: str, data: Mapping[str, Any]) -> str:
    """The ``hash`` of an entry (see the module docstring)."""
    body = canonical_json({"data": data, "event": event, "ts": ts})
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def format_ts(moment: datetime) -> str:
    """``2026-06-03T15:41:03.123Z`` for an aware datetime."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the log."""

    ts: str
    prev_hash: str
    hash: str
    event: str
    data: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        """The JSON object as written, in the seed's field order."""
        return {"ts": self.ts, "prevHash": self.prev_hash, "hash": self.hash,
                "event": self.event, "data": self.data}

    def to_line(self) -> bytes:
        text = json.dumps(self.to_wire(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8") + b"\n"


class BreakKind(StrEnum):
    """Why a line breaks the chain."""

    BAD_JSON = "bad_json"
    MALFORMED = "malformed"
    PREV_HASH_MISMATCH = "prev_hash_mismatch"
    HASH_MISMATCH = "hash_mismatch"
    NOT_AS_WRITTEN = "not_as_written"
    TRUNCATED = "truncated"
    ANCHOR_MISMATCH = "anchor_mismatch"


@dataclass(frozen=True, slots=True)
class Anchor:
    """The chain's length and head as the last append recorded them (outside the log)."""

    entries: int
    head: str
    since_ms: int
    #: what the last re-anchoring replaced (a log moved aside, deleted or rewritten)
    reset_note: str | None = None


class DbAnchor:
    """The anchor in relay.db's ``audit_anchor`` table (one row), read and written with
    :mod:`sqlite3` directly: an append runs in a worker thread under the log's lock."""

    def __init__(self, db_path: Path | str) -> None:
        self.db_path = Path(db_path)

    def read(self) -> Anchor | None:
        """The anchor; None when there is none yet (or no database, or a build before it)."""
        try:
            conn = sqlite3.connect(f"{self.db_path.resolve().as_uri()}?mode=ro", uri=True,
                                   timeout=10)
        except sqlite3.Error:
            return None
        try:
            row = conn.execute("SELECT entries, head, since_ms, reset_note FROM audit_anchor"
                               " WHERE id = 1").fetchone()
        except sqlite3.Error:
            return None
        finally:
            conn.close()
        return Anchor(int(row[0]), str(row[1]), int(row[2]), row[3]) if row else None

    def write(self, entries: int, head: str, *, reset_note: str | None = None,
              fresh: bool = False) -> None:
        """Record the chain's new length and head (``fresh``: a new anchor from now)."""
        ms = time.time_ns() // 1_000_000
        conn = sqlite3.connect(self.db_path, timeout=10, factory=ScrubbingConnection)
        try:
            with conn:
                conn.execute(
                    "INSERT INTO audit_anchor (id, entries, head, since_ms, updated_ms, reset_note)"
                    " VALUES (1, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                    " entries=excluded.entries, head=excluded.head, updated_ms=excluded.updated_ms,"
                    " since_ms=CASE WHEN ? THEN excluded.since_ms ELSE since_ms END,"
                    " reset_note=coalesce(excluded.reset_note, reset_note)",
                    (entries, head, ms, ms, reset_note, int(fresh)))
        finally:
            conn.close()


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of :func:`verify`.

    Attributes:
        entries: Entries that verify (all of them when the chain is intact).
        last_hash: Hash of the last entry that verifies (64 zeros when none).
        lines: Lines in the file, the broken one and any after it included.
        broken_line: First broken line, 1-based; ``None`` when intact.
    """

    path: Path
    entries: int
    last_hash: str
    lines: int
    broken_line: int | None = None
    kind: BreakKind | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.broken_line is None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "path": str(self.path), "entries": self.entries, "lines": self.lines,
                "lastHash": self.last_hash, "brokenLine": self.broken_line,
                "reason": None if self.kind is None else self.kind.value, "detail": self.detail}


class _LineError(Exception):
    def __init__(self, kind: BreakKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_line(raw: bytes) -> AuditEntry:
    """Parse one line (with or without its ``\\n``); raise ``_LineError`` if it is no entry."""
    try:
        obj = jsonvalue.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates,
                         parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise _LineError(BreakKind.BAD_JSON, "is not UTF-8 text") from None
    except ValueError as exc:
        what = "is blank" if not raw.strip() else f"is not valid JSON ({exc})"
        raise _LineError(BreakKind.BAD_JSON, what) from None
    if not isinstance(obj, dict) or set(obj) != _FIELDS:
        raise _LineError(BreakKind.MALFORMED,
                         "is not an audit entry (needs exactly ts, prevHash, hash, event, data)")
    ts, prev, digest, event, data = (obj[k] for k in ("ts", "prevHash", "hash", "event", "data"))
    if not (isinstance(ts, str) and isinstance(event, str) and isinstance(data, dict)):
        raise _LineError(BreakKind.MALFORMED, "has a mistyped ts, event or data field")
    for name, value in (("prevHash", prev), ("hash", digest)):
        if not (isinstance(value, str) and _HEX64.fullmatch(value)):
            raise _LineError(BreakKind.MALFORMED, f"has a {name} that is not 64 lowercase hex digits")
    return AuditEntry(ts, prev, digest, event, data)


def _check(raw: bytes, expected_prev: str, number: int) -> AuditEntry:
    if not raw.endswith(b"\n"):
        raise _LineError(BreakKind.TRUNCATED,
                         "is incomplete (no newline at the end: a write was cut off or the file truncated)")
    entry = _parse_line(raw)
    if entry.prev_hash != expected_prev:
        if number == 1:
            raise _LineError(BreakKind.PREV_HASH_MISMATCH,
                             "has a prevHash that is not 64 zeros (the start of the log is missing)")
        raise _LineError(BreakKind.PREV_HASH_MISMATCH,
                         f"has a prevHash that is not line {number - 1}'s hash "
                         "(a line was deleted, inserted or reordered)")
    if entry_hash(entry.prev_hash, entry.ts, entry.event, entry.data) != entry.hash:
        raise _LineError(BreakKind.HASH_MISMATCH, "does not match its hash (the line was edited)")
    if raw != entry.to_line():  # the hash holds, the bytes are not the ones written
        raise _LineError(BreakKind.NOT_AS_WRITTEN,
                         "is not byte for byte as Relay wrote it (a CRLF line ending, spaces or"
                         " reordered fields: the file was rewritten)")
    return entry


def verify(path: Path | str, anchor: Anchor | None = None) -> VerifyReport:
    """Walk the chain; report the first broken line, or (given the ``anchor``) a chain that
    does not end where the anchor says. Raise :class:`AuditError` when unreadable."""
    report = _walk(Path(path))
    if anchor is None or not report.ok or (report.entries, report.last_hash) == (
            anchor.entries, anchor.head):
        return report
    if report.entries == 0:
        what = "is missing or empty"
    elif report.entries < anchor.entries:
        what = f"has {report.entries} entries"
    else:
        what = f"has {report.entries} entries ending in {report.last_hash[:12]}…"
    return VerifyReport(report.path, report.entries, report.last_hash, report.lines,
                        min(report.entries, anchor.entries) + 1, BreakKind.ANCHOR_MISMATCH,
                        f"is not where the log ends: the log {what}, the database recorded"
                        f" {anchor.entries} ending in {anchor.head[:12]}… (entries were removed"
                        " from the end, or the log was deleted or rewritten)")


def _walk(path: Path) -> VerifyReport:
    prev, count = GENESIS_HASH, 0
    try:
        with path.open("rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    prev = _check(raw, prev, number).hash
                except _LineError as exc:
                    total = number + sum(1 for _ in fh)
                    return VerifyReport(path, count, prev, total, number, exc.kind, exc.detail)
                count += 1
    except FileNotFoundError:
        return VerifyReport(path, 0, GENESIS_HASH, 0)
    except OSError as exc:
        raise _os_error("read", path, exc) from exc
    return VerifyReport(path, count, prev, count)


def iter_entries(path: Path | str) -> Iterator[AuditEntry]:
    """The entries in file order, parsed but not verified (use :func:`verify` for that).

    A missing file has none. Raise :class:`AuditError` at a line that is not an entry.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    entry = _parse_line(raw)
                except _LineError as exc:
                    raise AuditError(f"Line {number} of the audit log {path} {exc.detail}.",
                                     "Run `relay-cli audit verify` to check the whole chain.") from None
                yield entry
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _os_error("read", path, exc) from exc


#: how much of the log's end :func:`recent_event_ids` reads (thousands of entries)
RECENT_BYTES = 1 << 20


def recent_event_ids(path: Path | str, limit: int = RECENT_BYTES) -> tuple[set[int], int | None]:
    """The ``event_id`` of each entry in the last ``limit`` bytes of the log, and the lowest
    (the stored events from there on are the ones the tail can vouch for): ``(set(), 0)``
    when the log has no entry yet, ``(set(), None)`` when its tail names no event. Lines
    that do not parse are skipped (verify names them)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - limit)
            fh.seek(start)
            tail = fh.read()
    except FileNotFoundError:
        return set(), 0
    except OSError as exc:
        raise _os_error("read", path, exc) from exc
    lines = tail.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line is cut
    ids: set[int] = set()
    entries = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            entry = _parse_line(raw)
        except _LineError:
            continue
        entries += 1
        event_id = entry.data.get("event_id")
        if isinstance(event_id, int) and not isinstance(event_id, bool):
            ids.add(event_id)
    if ids:
        return ids, min(ids)
    return ids, (0 if entries == 0 and start == 0 else None)

class AuditLog:
    """Appends entries to one audit file, safely across threads and processes.

    Args:
        path: The log file (``Config.audit_path``); its folder is created if needed.
        scrub: Applied to ``data`` before it is hashed or written (default: identity).
        clock: Returns the current time (tests fix it).
        durable: ``fsync`` every append before returning.
    """

    def __init__(self, path: Path | str, *, scrub: Scrub | None = None, clock: Clock | None = None,
                 durable: bool = True, anchor: DbAnchor | None = None) -> None:
        self.path = Path(path)
        self.anchor = anchor
        self._scrub: Scrub = scrub if scrub is not None else _identity
        self._clock: Clock = clock if clock is not None else _utcnow
        self._durable = durable
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._thread_lock = threading.Lock()

    def append(self, event: str, data: Mapping[str, Any] | None = None) -> AuditEntry:
        """Add one entry chained to the current last line; return it as written."""
        if not isinstance(event, str) or not event:
            raise ValueError("an audit event needs a non-empty name")
        payload = self._prepare({} if data is None else data)
        with self._thread_lock:
            try:
                private_dir(self.path.parent)
                with _exclusive(self._lock_path):
                    return self._append_locked(event, payload)
            except OSError as exc:
                raise _os_error("write", self.path, exc) from exc

    def verify(self) -> VerifyReport:
        return verify(self.path, self.anchor.read() if self.anchor else None)

    def entries(self) -> Iterator[AuditEntry]:
        return iter_entries(self.path)

    def _prepare(self, data: Mapping[str, Any]) -> dict[str, Any]:
        scrubbed = self._scrub(_normalise(data))
        if not isinstance(scrubbed, Mapping):
            raise TypeError(f"the scrub hook returned {type(scrubbed).__name__}, not a mapping")
        return _normalise(scrubbed)

    def _append_locked(self, event: str, payload: dict[str, Any]) -> AuditEntry:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        fd = os.open(self.path, flags, 0o600)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            prev = _tail_hash(fd, size, self.path)
            ts = format_ts(self._clock())
            entry = AuditEntry(ts, prev, entry_hash(prev, ts, event, payload), event, payload)
            try:
                _write_all(fd, entry.to_line())
                if self._durable:
                    os.fsync(fd)
            except OSError:
                with suppress(OSError):
                    os.ftruncate(fd, size)  # leave no torn line behind
                raise
        finally:
            os.close(fd)
        if size == 0 and self._durable:
            _fsync_dir(self.path.parent)
        if self.anchor is not None:
            self._anchor(prev, entry)
        return entry

    def _anchor(self, prev: str, entry: AuditEntry) -> None:
        """Record the new head outside the log (still under the log's lock)."""
        assert self.anchor is not None
        try:
            known = self.anchor.read()
            if known is not None and known.head == prev:
                self.anchor.write(known.entries + 1, entry.hash)
                return
            counted = _walk(self.path)  # no anchor yet, or the log is not the anchored one
            note = None if known is None else (
                f"re-anchored at {entry.ts}: the log had {counted.entries - 1} entries before"
                f" this one where {known.entries} ending in {known.head[:12]}… were recorded")
            self.anchor.write(counted.entries if counted.ok else counted.lines, entry.hash,
                              reset_note=note, fresh=True)
        except sqlite3.Error as exc:  # the entry is written; verify will name the gap
            raise AuditError(f"The audit log's anchor in {self.anchor.db_path} could not be"
                             f" written: {exc}.", "Check the data folder's disk space.") from exc


def _identity(value: Any) -> Any:
    return value


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _normalise(data: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise TypeError(f"audit data must be a mapping, not {type(data).__name__}")
    if any(not isinstance(key, str) for key in data):
        raise TypeError("audit data keys must be strings")
    result: dict[str, Any] = json.loads(canonical_json(data))
    return result


def _tail_hash(fd: int, size: int, path: Path) -> str:
    """The last line's hash, read backwards from the end without reading the whole file."""
    if size == 0:
        return GENESIS_HASH
    tail, pos = b"", size
    while pos > 0 and tail.rfind(b"\n", 0, len(tail) - 1) < 0:
        step = min(_TAIL_BLOCK, pos)
        pos -= step
        os.lseek(fd, pos, os.SEEK_SET)
        tail = _read_exact(fd, step) + tail
    last = tail[tail.rfind(b"\n", 0, len(tail) - 1) + 1:]
    try:
        if not last.endswith(b"\n"):
            raise _LineError(BreakKind.TRUNCATED, "is incomplete (no newline at the end)")
        return _parse_line(last).hash
    except _LineError as exc:
        raise AuditDamagedError(
            f"The audit log {path} cannot be extended: its last line {exc.detail}.",
            "Run `relay-cli audit verify`, keep a copy of the file, then move it aside: "
            "Relay starts a new chain at its next event.") from None


def _read_exact(fd: int, count: int) -> bytes:
    chunks: list[bytes] = []
    while count > 0:
        chunk = os.read(fd, count)
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _fsync_dir(folder: Path) -> None:
    if sys.platform == "win32":
        return  # folders cannot be opened for fsync on Windows; NTFS journals the entry
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # gives up after ~10 s: try again
            except OSError as exc:
                if exc.errno != errno.EDEADLOCK:
                    raise
            else:
                return

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


_HINTS = {
    errno.ENOSPC: "Free some disk space in the data folder.",
    errno.EACCES: "Check that you may read and write the data folder (or set RELAY_HOME).",
    errno.EPERM: "Check that you may read and write the data folder (or set RELAY_HOME).",
    errno.EROFS: "The data folder is read-only; set RELAY_HOME to a writable folder.",
    errno.EISDIR: "A folder stands where the audit file should be; move it aside.",
}


def _os_error(action: str, path: Path, exc: OSError) -> AuditError:
    hint = _HINTS.get(exc.errno or 0, "Check the data folder (RELAY_HOME) and its disk.")
    return AuditError(f"Cannot {action} the audit log {path}: {exc.strerror or exc}.", hint)
