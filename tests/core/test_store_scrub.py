"""relay.db's one scrubbing point (``core/store/scrubbed.py``), and what may not skip it.

Structural: every SQLite connection Relay opens for writing is a ``ScrubbingConnection``
(or one of the few listed below, with the reason); every text field of every event kind is
either scrubbed by ``scrub_event`` or listed here as an id/name. Behavioural: whatever a
statement writes — any table, any column, ``execute`` or ``executemany``, positional or
named — is stored without the secret, and ids, paths, shas and numbers are kept.
"""

from __future__ import annotations

import ast
import secrets
import sqlite3
import typing
from pathlib import Path

import pytest

from relay.core import events as events_module
from relay.core.scrub_events import _TEXT_FIELDS
from relay.core.store.scrubbed import ScrubbingConnection

APP = Path(__file__).resolve().parents[2] / "app" / "relay"
SECRET = "sk-ant-api03-" + secrets.token_urlsafe(60)
GITHUB = "ghp_" + "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkm23456789")
                          for _ in range(36))

#: connections that may write without the scrubbing factory, and why
NOT_RELAY_DB = {
    "core/store/index_file.py": "knowledge.sqlite and the usage index: knowledge/store.py "
                                "scrubs every body, title, path and payload it writes; the "
                                "usage index holds numbers, ids and transcript paths",
    "detect/stores/vscdb.py": "another app's state.vscdb, opened read-only (mode=ro)",
}

#: str fields of events that are ids, names or enumerations, not free text
NOT_FREE_TEXT = {
    "runtime", "kind", "agent_session_id", "model", "cwd", "tools", "permission_mode",
    "version", "message_id", "parent_call_id", "call_id", "name", "tool", "request_id",
    "about", "scope", "window", "status", "origin", "category", "handoff_id", "state",
    "from_entry", "to_entry", "outcome", "limit_kind", "error_category",
    "relay_session_id",
}


def _connect_calls() -> list[tuple[str, ast.Call]]:
    found = []
    for path in APP.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "connect" and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id in ("sqlite3", "aiosqlite"):
                found.append((str(path.relative_to(APP)), node))
    return found


def test_every_writing_connection_scrubs() -> None:
    calls = _connect_calls()
    assert len(calls) >= 8  # the search finds them
    bypass = []
    for where, call in calls:
        source = ast.unparse(call)
        factory = any(k.arg == "factory" and ast.unparse(k.value) == "ScrubbingConnection"
                      for k in call.keywords)
        read_only = "mode=ro" in source or any("mode=ro" in ast.unparse(a) for a in call.args)
        if not (factory or read_only or where in NOT_RELAY_DB):
            bypass.append(f"{where}:{call.lineno} {source}")
    # the pipeline ledger's reader connection only reads (its writes go through `conn`)
    assert [b for b in bypass if not b.startswith("pipelines/ledger.py")] == []
    assert len([b for b in bypass if b.startswith("pipelines/ledger.py")]) == 1


def _str_fields(cls: type) -> set[str]:
    out = set()
    for name, info in cls.model_fields.items():  # type: ignore[attr-defined]
        text = repr(info.annotation)
        if typing.get_origin(info.annotation) is typing.Literal:
            continue
        if any(t in text for t in ("str", "Any", "dict", "InputOption")):
            out.add(name)
    return out


def test_every_text_field_of_every_event_kind_is_scrubbed() -> None:
    union = typing.get_args(typing.get_args(events_module.AgentEvent)[0])
    assert len(union) >= 16
    assert {"text", "message_id"} <= _str_fields(events_module.AssistantText)  # finds them
    unscrubbed = {}
    for cls in union:
        kind = cls.model_fields["kind"].default
        missing = _str_fields(cls) - set(_TEXT_FIELDS.get(kind, ())) - NOT_FREE_TEXT
        if missing:
            unscrubbed[kind] = sorted(missing)
    assert unscrubbed == {}, "add the field to scrub_events._TEXT_FIELDS (or, for an id, here)"


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    c = sqlite3.connect(tmp_path / "t.db", isolation_level=None, factory=ScrubbingConnection)
    c.execute("CREATE TABLE t (id TEXT, path TEXT, sha TEXT, body TEXT, n INTEGER, raw BLOB)")
    return c


def test_what_a_statement_writes_is_scrubbed_and_ids_paths_shas_kept(
        conn: sqlite3.Connection) -> None:
    sha = secrets.token_hex(20)
    ident, path = f"h-{secrets.token_hex(6)}", "/home/u/.relay/worktrees/a1b2c3d4e5f6/src/x.py"
    conn.execute("INSERT INTO t VALUES (?,?,?,?,?,?)", (ident, path, sha, f"key {SECRET}", 7,
                                                        b"bytes"))
    conn.executemany("INSERT INTO t (id, body) VALUES (?, ?)", [("a", GITHUB), ("b", "ok")])
    conn.execute("INSERT INTO t (id, body) VALUES (:id, :body)", {"id": "c", "body": SECRET})
    conn.execute("UPDATE t SET path=? WHERE id=?", (f"token={GITHUB}", "b"))
    conn.execute("WITH x AS (SELECT 1) INSERT INTO t (id, body) SELECT 'd', ?", (SECRET,))
    rows = conn.execute("SELECT id, path, sha, body, n, raw FROM t ORDER BY id").fetchall()
    dump = repr(rows)
    assert SECRET not in dump
    assert GITHUB not in dump
    assert dump.count("[REDACTED:") == 5
    assert (ident, path, sha, "key [REDACTED:anthropic_key]", 7, b"bytes") in rows
    # a read's parameters are left as given: a lookup finds what was stored
    assert conn.execute("SELECT count(*) FROM t WHERE id=?", (ident,)).fetchone() == (1,)


def test_a_short_text_written_again_is_scrubbed_again(conn: sqlite3.Connection) -> None:
    """Short texts are scrubbed once and remembered (ids and owners repeat on every row): the
    remembered answer is the scrubbed one, every time, and a long text is never cut short."""
    owner = "host:4216:1796687400:68c8f0"
    for _ in range(3):
        conn.execute("INSERT INTO t (id, body) VALUES (?, ?)", (owner, GITHUB))
        conn.execute("INSERT INTO t (id, body) VALUES (?, ?)", ("long", "x " * 60 + GITHUB))
    rows = conn.execute("SELECT id, body FROM t").fetchall()
    assert GITHUB not in repr(rows)
    assert rows.count((owner, "[REDACTED:github_token]")) == 3
    assert rows.count(("long", "x " * 60 + "[REDACTED:github_token]")) == 3
