"""Small file-system helpers shared by the core: private folders and files, atomic writes and
a folder lock.

Everything Relay keeps in its data folder is private to the user whatever the umask: folders
are :data:`PRIVATE_DIR` (0700) and files :data:`PRIVATE_FILE` (0600). Every writer of the data
folder goes through :func:`private_dir`, :func:`private_file`, :func:`private_sqlite` (a
database and its ``-wal``/``-shm``/``-journal`` files) or :func:`write_atomic` with a private
mode (which also makes the file's missing folders private); :func:`tighten_tree` makes an
existing folder private. Files Relay writes into a repository keep the modes they are given.

Errors are plain ``OSError``; callers map them to their own :class:`RelayError` with
``raise X from exc`` because only they know what the file is for.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_fd(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def _unlock_fd(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    def _try_lock_fd(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
else:
    import fcntl

    def _lock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _try_lock_fd(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

#: the mode of every folder in the data folder
PRIVATE_DIR = 0o700
#: the mode of every file in the data folder
PRIVATE_FILE = 0o600
#: the files SQLite keeps beside a database (it makes them with the database's own mode)
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def private_dir(path: Path) -> Path:
    """Make ``path`` (and every missing parent) a folder of mode 0700, whatever the umask.

    A folder that exists already is left as it is (:func:`tighten_tree` tightens one);
    returns ``path``.
    """
    missing = []
    walk = path
    while not os.path.lexists(walk) and walk.parent != walk:
        missing.append(walk)
        walk = walk.parent
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    for made in reversed(missing):  # mkdir's mode is masked by the umask; parents ignore it
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile: nothing to protect
            os.chmod(made, PRIVATE_DIR)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 (its folder private) or make an existing one 0600."""
    if not path.parent.is_dir():
        private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), PRIVATE_FILE)
    try:
        loose = stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_FILE
    finally:
        os.close(fd)
    if loose:
        os.chmod(path, PRIVATE_FILE)
    return path


def private_sqlite(path: Path) -> Path:
    """Prepare a database file before SQLite opens it: the file 0600 (made if missing), the
    side files that exist 0600. SQLite makes a side file with the database's own mode, so
    the ones it makes later are private too. SQLite's in-memory name is no file."""
    if str(path) == ":memory:":
        return path  # not a file in the working folder
    private_file(path)
    for suffix in SQLITE_SIDE_FILES:
        side = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(side.stat().st_mode) != PRIVATE_FILE:
                os.chmod(side, PRIVATE_FILE)
    return path


def tighten_tree(root: Path, keep: Callable[[Path], bool] = lambda _path: False) -> int:
    """Make ``root`` and everything under it private (folders 0700, files 0600); returns how
    many modes changed. ``keep(folder)`` true leaves that folder's contents as they are (a
    worktree's files keep the repository's modes). Symbolic links are not followed."""
    changed = 0

    def fix(path: Path, mode: int) -> None:
        nonlocal changed
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(path.lstat().st_mode) != mode:
                os.chmod(path, mode)
                changed += 1

    fix(root, PRIVATE_DIR)
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        for name in dirs:
            if not (here / name).is_symlink():
                fix(here / name, PRIVATE_DIR)
        dirs[:] = [d for d in dirs if not keep(here / d)]
        for name in files:
            if not (here / name).is_symlink():
                fix(here / name, PRIVATE_FILE)
    return changed


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` so a reader sees the old or the new file, never a mix.

    The bytes go to a temporary file in the same folder, created with exactly ``mode``
    whatever the umask (so a private file is never readable by others, not even for a
    moment; a private file's missing folders are made 0700), are flushed to
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
    if mode & 0o077 == 0:
        private_dir(path.parent)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)  # the umask masked os.open's mode
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
            private_dir(self.path.parent)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
            try:
                _lock_fd(fd)
                try:
                    yield
                finally:
                    _unlock_fd(fd)
            finally:
                os.close(fd)


class ProcessLock:
    """An exclusive lock a process holds for as long as it lives (the OS lets go of it when
    the process dies, however it dies): the host lock of a data folder.

    :meth:`try_acquire` takes it or says it is held; :meth:`held` asks without keeping it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"ProcessLock({str(self.path)!r}, held={self._fd is not None})"

    def try_acquire(self) -> bool:
        """Take the lock if no process holds it; ``False`` if one does."""
        if self._fd is not None:
            return True
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
        if not _try_lock_fd(fd):
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                _unlock_fd(fd)
            os.close(fd)

    def held_elsewhere(self) -> bool:
        """Whether another holder has it now (this object does not keep it)."""
        if self._fd is not None or not self.path.exists():
            return False
        probe = ProcessLock(self.path)
        if probe.try_acquire():
            probe.release()
            return False
        return True


# -- reading a file someone else made: a regular file only, boundedly ------------------


def is_regular(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode)


def _not_regular(path: Path) -> OSError:
    return OSError(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)", str(path))


@contextlib.contextmanager
def open_regular(path: Path) -> Iterator[BinaryIO]:
    """``path`` opened for reading when it is (a symlink to) a regular file; else OSError.

    Opened without blocking (opening a FIFO waits for a writer) and checked on the open
    file itself, so what is read is what was checked.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not is_regular(os.fstat(fd)):
            raise _not_regular(path)
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_regular(path: Path, limit: int) -> bytes:
    """The whole of the regular file ``path``; OSError (EFBIG) when it is over ``limit``."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit:,} bytes, more than Relay reads", str(path))
    return data
