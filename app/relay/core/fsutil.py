"""Small file-system helpers shared by the core: atomic private writes and a folder lock.

Errors are plain ``OSError``; callers map them to their own :class:`RelayError` with
``raise X from exc`` because only they know what the file is for.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_fd(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def _unlock_fd(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` so a reader sees the old or the new file, never a mix.

    The bytes go to a temporary file in the same folder, created with ``mode`` (so a
    private file is never readable by others, not even for a moment), are flushed to
    disk, and then renamed over ``path`` with :func:`os.replace`. On any failure the
    temporary file is removed and ``path`` is untouched.
    """
    tmp = _written_temp(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def create_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Create ``path`` with ``data`` atomically, never replacing a file that exists.

    Raises:
        FileExistsError: ``path`` exists (also when it appeared meanwhile).
    """
    tmp = _written_temp(path, data, mode)
    try:
        try:
            os.link(tmp, path)  # fails if path exists: never overwrites
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some network / FAT volumes)
            if os.path.lexists(path):
                raise FileExistsError(path) from None
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    _fsync_dir(path.parent)


def _written_temp(path: Path, data: bytes, mode: int) -> Path:
    """``data`` in a new temporary file beside ``path``, flushed to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (POSIX; Windows has no directory handles to sync)."""
    if sys.platform == "win32":  # pragma: no cover
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class FolderLock:
    """An exclusive lock between processes (a lock file) and threads (a mutex).

    Used around read-modify-write cycles of files several Relay processes share.
    Not re-entrant: code holding it must not take it again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mutex = threading.Lock()

    def __repr__(self) -> str:
        return f"FolderLock({str(self.path)!r})"

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._mutex:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                _lock_fd(fd)
                try:
                    yield
                finally:
                    _unlock_fd(fd)
            finally:
                os.close(fd)
