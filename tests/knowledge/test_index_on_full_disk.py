"""A derived index (the knowledge graph, the usage index) is never deleted for a transient
error: a full disk keeps the file as it is (the process goes on in memory); only a damaged
file (SQLITE_CORRUPT / NOTADB) is rebuilt."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from relay.core.errors import StoreError
from relay.core.store import index_file
from relay.knowledge.store import open_store
from relay.wallet.usage_index import UsageIndex
from tests.fakes.small_disk import fill, small_disk


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("free", [0, 16 * 1024], ids=["full", "16KB-free"])
def test_a_full_disk_never_deletes_the_knowledge_index(tmp_path: Path, free: int) -> None:
    with small_disk(tmp_path / "disk", 2048) as disk:
        path = disk / "knowledge.sqlite"
        store = open_store(path)
        with store.transaction():
            store.conn.execute("INSERT INTO meta VALUES ('kept', 'yes')")
        store.close()
        before = _digest(path)
        fill(disk, free)
        again = open_store(path)  # the disk is full: kept in memory this time
        try:
            assert index_file.in_memory(again.conn)
        finally:
            again.close()
        assert _digest(path) == before  # the file on disk is as it was
        with sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True) as conn:
            assert conn.execute("SELECT value FROM meta WHERE key='kept'").fetchone() == ("yes",)


def test_a_full_disk_never_deletes_the_usage_index(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", 2048) as disk:
        path = disk / "usage-index.sqlite"
        UsageIndex(path, workers=1).close()
        before = _digest(path)
        fill(disk, 0)
        index = UsageIndex(path, workers=1)  # reads still answer, from memory
        try:
            assert index.refresh([]).entries_added == 0
        finally:
            index.close()
        assert _digest(path) == before


def test_a_locked_index_is_an_error_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    before = _digest(path)

    def locked(_: Path) -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(StoreError, match="cannot be opened"):
        index_file.open_rebuildable(path, locked, "the test index", "nothing")
    assert _digest(path) == before


def test_a_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "knowledge.sqlite"
    path.write_bytes(b"not a database at all" * 200)
    store = open_store(path)
    store.close()
    assert path.read_bytes()[:16] == b"SQLite format 3\0"
