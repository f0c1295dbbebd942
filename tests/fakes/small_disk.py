"""A real small file system for the full-disk tests: a tmpfs mounted for the test (as root,
here and in CI); elsewhere the test is skipped with the reason."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

#: what :func:`fill` writes the free space into
FILLER = "filler.bin"


@contextlib.contextmanager
def small_disk(where: Path, size_kb: int) -> Iterator[Path]:
    """``where``, a tmpfs of ``size_kb`` KiB for the duration (unmounted after)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a real small disk needs root and mount (tmpfs)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(disk: Path, leave_bytes: int = 0) -> None:
    """Fill ``disk`` until ``leave_bytes`` (rounded to pages) are free."""
    free = shutil.disk_usage(disk).free
    with (disk / FILLER).open("ab") as out:
        want = max(0, free - leave_bytes)
        chunk = b"\0" * 65536
        with contextlib.suppress(OSError):
            while want > 0:
                out.write(chunk[:min(want, len(chunk))])
                out.flush()
                want -= min(want, len(chunk))
    assert shutil.disk_usage(disk).free <= leave_bytes + 65536


def free_up(disk: Path) -> None:
    (disk / FILLER).unlink(missing_ok=True)
