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
line's content (the line was edited), or an incomplete last line (no final newline: a
cut-off write or a truncated file). An empty or missing log is intact with 0 entries.
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
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.errors import AuditDamagedError, AuditError

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
    TRUNCATED = "truncated"


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
    return entry


def verify(path: Path | str) -> VerifyReport:
    """Walk the chain; report the first broken line. Raise :class:`AuditError` when unreadable."""
    path = Path(path)
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


class AuditLog:
    """Appends entries to one audit file, safely across threads and processes.

    Args:
        path: The log file (``Config.audit_path``); its folder is created if needed.
        scrub: Applied to ``data`` before it is hashed or written (default: identity).
        clock: Returns the current time (tests fix it).
        durable: ``fsync`` every append before returning.
    """

    def __init__(self, path: Path | str, *, scrub: Scrub | None = None, clock: Clock | None = None,
                 durable: bool = True) -> None:
        self.path = Path(path)
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
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with _exclusive(self._lock_path):
                    return self._append_locked(event, payload)
            except OSError as exc:
                raise _os_error("write", self.path, exc) from exc

    def verify(self) -> VerifyReport:
        return verify(self.path)

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
        return entry


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
