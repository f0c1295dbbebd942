"""Recorded CLI captures copied into a test's folder, ready for the session stores."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from relay.core.accounts import Account
from relay.core.config import load_config
from relay.detect.processes import ProcessScan
from relay.engine.engine import Engine

#: the copies' mtime: before every record in the captures, so activity comes from the records
PINNED = datetime(2026, 1, 1, tzinfo=UTC).timestamp()

Capture = Callable[[str, str], Path]


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    """What ``<CWD>`` in the captures stands for."""
    path = tmp_path / "work" / "repo"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def capture(fixtures_dir: Path, tmp_path: Path, repo_dir: Path) -> Capture:
    """``capture(runtime, scenario)``: a writable copy of ``<runtime>/captures/<scenario>``.

    ``<CWD>`` in JSON files becomes :func:`repo_dir`; every file's mtime is :data:`PINNED`.
    """

    def copy(runtime: str, scenario: str) -> Path:
        source = fixtures_dir / runtime / "captures" / scenario
        if not source.is_dir():
            pytest.fail(f"no capture {runtime}/{scenario}")
        target = tmp_path / "captures" / runtime / scenario
        for path in source.rglob("*"):
            if not path.is_file():
                continue
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if path.suffix in (".json", ".jsonl") or path.name == ".project_root":
                data = data.replace(b"<CWD>", str(repo_dir).encode())
            dest.write_bytes(data)
            os.utime(dest, (PINNED, PINNED))
        return target

    return copy

@pytest.fixture
def locked() -> Iterator[list[object]]:
    """Connections holding locks, released when the test ends."""
    held: list[object] = []
    yield held
    for conn in held:
        conn.close()  # type: ignore[attr-defined]


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    """A real engine on the test's data folder (a module may define its own)."""
    eng = await Engine.open(load_config())
    yield eng
    await eng.close()


def no_processes(_: Sequence[Account]) -> ProcessScan:
    """A process scan that finds nothing running (the detector's ``processes`` seam)."""
    return ProcessScan()
