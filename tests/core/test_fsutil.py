"""core/fsutil: what every writer of the data folder calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from relay.core.fsutil import private_sqlite
from relay.core.store.index_file import connect


def test_sqlites_in_memory_name_makes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index kept in memory (a full disk) must not leave a file named ':memory:' in
    whatever folder Relay was started from."""
    monkeypatch.chdir(tmp_path)
    assert private_sqlite(Path(":memory:")) == Path(":memory:")
    conn = connect(Path(":memory:"), 1000)
    try:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        conn.close()
    assert os.listdir(tmp_path) == []
