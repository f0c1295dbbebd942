"""A damaged relay.db, as relay-cli meets it: one clear line naming the file and what to do
(restore it, or move it aside), exit 2 — never a traceback, never "Relay crashed"; an
emptied relay.db beside an audit log that lists entries is refused, not started afresh."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from relay.core.errors import StoreError
from relay.core.store.db import Store

CLI = [sys.executable, "-m", "relay.cli.main"]


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RELAY_HOME": str(home), "COLUMNS": "200", "RELAY_DEMO_STEP_DELAY": "0"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=60,
                          check=False, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("template") / "home"
    done = _run(home, "demo")
    assert done.returncode == 0, done.stderr
    (sid,) = (p.name for p in (home / "worktrees").iterdir())
    return home, sid


@pytest.fixture
def home(template: tuple[Path, str], tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(template[0], copy, ignore=shutil.ignore_patterns("worktrees"))
    return copy


def _damage(db: Path, sql: str) -> None:
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(sql)
        conn.commit()


def _one_clear_error(done: subprocess.CompletedProcess[str], db: Path, *words: str) -> None:
    text = done.stdout + done.stderr
    assert done.returncode == 2, text
    assert "Traceback" not in text
    assert "crashed" not in text
    assert "Event loop is closed" not in text
    assert done.stderr.startswith("error: "), done.stderr
    flat = " ".join(done.stderr.split())
    assert str(db) in flat
    for word in words:
        assert word in flat.lower(), flat


@pytest.mark.parametrize(("sql", "args", "words"), [
    ("UPDATE sessions SET task = CAST(x'66ff6f' AS TEXT)", ("sessions", "--json"),
     ("utf-8", "restore")),
    ("UPDATE sessions SET task = CAST(x'66ff6f' AS TEXT)", ("show", "{sid}"), ("utf-8",)),
    ("UPDATE events SET payload = '{\"kind\": 1'", ("show", "{sid}"),
     ("events table does not parse", "restore")),
    ("UPDATE events SET payload = '{\"kind\": 1'", ("history", "{sid}"),
     ("events table does not parse",)),
    ("UPDATE sessions SET spec_json = '{bad'", ("run", "--resume", "{sid}", "more"),
     ("sessions table does not parse",)),
    ("DROP TABLE runs", ("sessions", "--json"), ("table runs is missing", "move it aside")),
], ids=["utf8-list", "utf8-show", "json-event-show", "json-event-history", "json-spec-resume",
        "missing-table"])
def test_flipped_bytes_and_missing_tables_are_one_clear_error(
        home: Path, template: tuple[Path, str], sql: str, args: tuple[str, ...],
        words: tuple[str, ...]) -> None:
    db = home / "relay.db"
    _damage(db, sql)
    done = _run(home, *(a.format(sid=template[1]) for a in args))
    _one_clear_error(done, db, *words)


def test_a_relay_db_that_is_a_folder_is_one_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)  # a private data folder: no notice about tightening it first
    (home / "relay.db").mkdir(mode=0o700)
    for args in (("sessions", "--json"), ("show", "abc")):
        _one_clear_error(_run(home, *args), home / "relay.db", "not a file", "move")


def test_an_emptied_relay_db_is_refused_while_the_audit_log_lists_entries(home: Path) -> None:
    db = home / "relay.db"
    assert (home / "audit.jsonl").stat().st_size > 0  # the demo's entries
    for stale in home.glob("relay.db*"):
        stale.unlink()
    db.write_bytes(b"")
    done = _run(home, "sessions", "--json")
    _one_clear_error(done, db, "empty", "audit log", "restore", "move")
    assert db.read_bytes() == b""  # nothing was started afresh in its place
    db.unlink()  # deleted outright: the same
    _one_clear_error(_run(home, "sessions", "--json"), db, "empty", "audit log")


async def test_an_empty_database_is_started_only_without_earlier_entries(tmp_path: Path) -> None:
    db, audit = tmp_path / "relay.db", tmp_path / "audit.jsonl"
    db.write_bytes(b"")
    audit.write_bytes(b'{"seq": 1}\n')
    with pytest.raises(StoreError, match="audit log"):
        await Store.open(db, audit)
    audit.unlink()  # a first start: nothing to lose
    store = await Store.open(db, audit)
    await store.close()
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
