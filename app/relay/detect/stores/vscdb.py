"""The VS Code family's storage: where the editors are, their ``state.vscdb``, Copilot Chat.

**Where.** :func:`editor_roots` names every editor storage folder on this machine, per OS:
Linux ``$XDG_CONFIG_HOME`` (``~/.config``) ``/<App>/User``, macOS ``~/Library/Application
Support/<App>/User``, Windows ``%APPDATA%\\<App>\\User`` for VS Code (``Code``,
``Code - Insiders``, ``Code - OSS``), ``VSCodium``, ``Windsurf`` and ``Cursor``; the remote
servers' ``~/.vscode-server/data/User`` (and ``.cursor-server`` …); Cline's task folder inside
each (``globalStorage/saoudrizwan.claude-dev``) and its CLI's ``~/.cline/data``; Continue's
``~/.continue``. Each comes with the runtime that reads it.

**state.vscdb** is SQLite with one key/value table ``ItemTable(key TEXT, value BLOB)`` (Cursor
adds ``cursorDiskKV`` of the same shape); values are JSON text. It is opened read-only
(``file:…?mode=ro``, never ``immutable=1``: the editor may be writing it) with a short busy
timeout; a locked or corrupt database is reported in ``problems``, never raised. Only the keys
a store names are read: the tables also hold the editors' secrets.

**Copilot Chat** (:class:`VSCodeChatStore`, runtime ``copilot``) is VS Code's own chat: the
session files ``workspaceStorage/<hash>/chatSessions/<id>.json[l]`` and
``globalStorage/emptyWindowChatSessions/``, and the older ``interactive.sessions`` key of each
workspace's ``state.vscdb`` (see :mod:`relay.detect.stores.vscode_chat`). A workspace's folder
— the session's cwd — is in ``workspaceStorage/<hash>/workspace.json`` (``{"folder": URI}``).

A session kept inside a database has the source ``<state.vscdb>#<key>:<id>``, so every
session has its own path (the scan caches by path).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from relay.core.agent_homes import app_config_base, cline_data_dir, continue_dir, user_home
from relay.core.jsonvalue import as_dict, as_int, as_str
from relay.detect.stores.base import StoreItem, StoreListing, read_regular
from relay.detect.stores.editor_common import (
    MAX_JSON_BYTES,
    EditorRead,
    parse_json,
    read_json_file,
    uri_to_path,
)
from relay.detect.stores.vscode_chat import read_session, replay_log, sessions_in_value

#: how long a read waits on a database the editor holds locked
BUSY_TIMEOUT_S = 0.25
#: the legacy key of VS Code's chat sessions
LEGACY_CHAT_KEY = "interactive.sessions"

#: editor folder name → the runtime its own chat store is read as
_APPS = (("Code", "copilot"), ("Code - Insiders", "copilot"), ("Code - OSS", "copilot"),
         ("VSCodium", "copilot"), ("Windsurf", "copilot"), ("Cursor", "cursor"))
_SERVERS = ((".vscode-server", "copilot"), (".vscode-server-insiders", "copilot"),
            (".vscodium-server", "copilot"), (".windsurf-server", "copilot"),
            (".cursor-server", "cursor"))
CLINE_EXTENSION = "saoudrizwan.claude-dev"

Stamp = tuple[int, int, int, int]


# -- where the editors keep their state -------------------------------------------------

def editor_roots(env: Mapping[str, str], platform: str) -> list[tuple[str, Path]]:
    """Every editor storage folder present here, with the runtime whose store reads it.

    Args:
        env: The environment (``HOME``, ``APPDATA``, ``XDG_CONFIG_HOME``, ``CLINE_DIR`` …).
        platform: ``sys.platform`` (``linux``, ``darwin``, ``win32``).

    Returns:
        ``(runtime, folder)`` pairs, each folder once, only folders that exist.
    """
    home = user_home(env, platform=platform)
    roots: list[tuple[str, Path]] = []
    for runtime, user_dir in _user_dirs(env, platform, home):
        if not user_dir.is_dir():
            continue
        roots.append((runtime, user_dir))
        cline = user_dir / "globalStorage" / CLINE_EXTENSION
        if cline.is_dir():
            roots.append(("cline", cline))
    cline_data = cline_data_dir(env, home=home)
    if (cline_data / "tasks").is_dir():
        roots.append(("cline", cline_data))
    continue_root = continue_dir(env, home=home)
    if (continue_root / "sessions").is_dir():
        roots.append(("continue", continue_root))
    unique: dict[tuple[str, Path], None] = dict.fromkeys(roots)
    return list(unique)


def _user_dirs(env: Mapping[str, str], platform: str, home: Path) -> Iterable[tuple[str, Path]]:
    base = app_config_base(env, platform=platform, home=home)
    for app, runtime in _APPS:
        yield runtime, base / app / "User"
    for server, runtime in _SERVERS:
        yield runtime, home / server / "data" / "User"
    if env.get("VSCODE_PORTABLE"):
        yield "copilot", Path(env["VSCODE_PORTABLE"]) / "user-data" / "User"


# -- state.vscdb ------------------------------------------------------------------------

def connect(db: Path, timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """``db`` opened read-only (raises :class:`sqlite3.Error`; callers report it)."""
    uri = db.absolute().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)


def sqlite_problem(db: Path, exc: BaseException) -> str:
    """A database failure in words."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"{db}: locked by the editor (it is writing); read again on the next scan"
    if "not a database" in text or "malformed" in text:
        return f"{db}: not a readable SQLite database ({text})"
    return f"{db}: could not be read ({text})"


def query(db: Path, sql: str, params: Iterable[Any], problems: list[str],
          timeout: float = BUSY_TIMEOUT_S) -> list[tuple[Any, ...]] | None:
    """The rows of one read-only query, or None with the reason in ``problems``."""
    try:
        with _closing(connect(db, timeout)) as conn:
            return list(conn.execute(sql, tuple(params)))
    except sqlite3.Error as exc:
        if "no such table" in str(exc):
            return []
        problems.append(sqlite_problem(db, exc))
        return None


class _closing:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def read_items(db: Path, keys: Iterable[str], problems: list[str], table: str = "ItemTable",
               timeout: float = BUSY_TIMEOUT_S) -> dict[str, Any]:
    """The decoded JSON values of ``keys`` in ``table`` (absent keys are left out)."""
    wanted = list(keys)
    if not wanted or not db.is_file():
        return {}
    marks = ",".join("?" * len(wanted))
    rows = query(db, f"SELECT key, value FROM {table} WHERE key IN ({marks})", wanted,
                 problems, timeout)
    values: dict[str, Any] = {}
    for key, raw in rows or ():
        value = decode(raw, problems, f"{db} [{key}]")
        if value is not None:
            values[str(key)] = value
    return values


def decode(raw: Any, problems: list[str], where: str) -> Any | None:
    """A stored value (TEXT or BLOB of JSON) decoded; None with a problem when it is not JSON."""
    if raw is None:
        return None
    if not isinstance(raw, bytes | str):
        problems.append(f"{where}: a {type(raw).__name__}, not JSON text; ignored")
        return None
    return parse_json(raw, problems, where)


def db_stamp(db: Path) -> Stamp | None:
    """The database's size and mtime with its write-ahead log's (None: no database)."""
    try:
        stat = db.stat()
    except OSError:
        return None
    try:
        wal = db.with_name(db.name + "-wal").stat()
        wal_stamp = (wal.st_size, wal.st_mtime_ns)
    except OSError:
        wal_stamp = (0, 0)
    return (stat.st_size, stat.st_mtime_ns, *wal_stamp)


def split_source(path: Path) -> tuple[Path, str, str] | None:
    """``<db>#<key>:<id>`` → (db, key, id); None for a plain file."""
    name, mark, inner = path.name.partition("#")
    if not mark:
        return None
    key, _, session = inner.rpartition(":")
    return path.with_name(name), key, session


def keyed_source(db: Path, key: str, session: str) -> Path:
    return db.with_name(f"{db.name}#{key}:{session}")


def workspace_folder(hash_dir: Path, problems: list[str] | None = None) -> str | None:
    """The folder a ``workspaceStorage/<hash>`` belongs to (its ``workspace.json``)."""
    path = hash_dir / "workspace.json"
    if not path.is_file():
        return None
    sink: list[str] = []
    data = as_dict(read_json_file(path, sink, "VS Code workspace"))
    if problems is not None:
        problems.extend(sink)
    return uri_to_path(as_str(data.get("folder")) or "")


def session_files(folder: Path, problems: list[str]) -> list[tuple[Path, os.stat_result]]:
    """``*.json`` / ``*.jsonl`` chat session files in ``folder`` with their stats."""
    try:
        entries = sorted(folder.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        problems.append(f"{folder}: could not be listed ({exc.strerror or exc})")
        return []
    found: list[tuple[Path, os.stat_result]] = []
    for entry in entries:
        if entry.suffix not in (".json", ".jsonl"):
            continue
        try:
            found.append((entry, entry.stat()))
        except OSError as exc:
            problems.append(f"{entry}: {exc.strerror or exc}")
    # a session saved both ways (being converted): the log is the newer
    logs = {p.stem for p, _ in found if p.suffix == ".jsonl"}
    return [(p, s) for p, s in found if p.suffix == ".jsonl" or p.stem not in logs]


def read_session_file(read: EditorRead, path: Path, runtime: str) -> None:
    """One chat session file (``.json`` or ``.jsonl``) into ``read``."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            read.problems.append(f"{path}: {size} bytes, more than Relay reads")
            return
        raw = read_regular(path, MAX_JSON_BYTES)
    except OSError as exc:
        read.problems.append(f"{path}: could not be read ({exc.strerror or exc})")
        return
    where = f"chat session {path.name}"
    data = replay_log(raw, read.problems, where) if path.suffix == ".jsonl" \
        else parse_json(raw, read.problems, where)
    if data is not None:
        read_session(read, data, runtime, read.item.mtime_ns // 1_000_000)


# -- Copilot Chat -----------------------------------------------------------------------

class VSCodeChatStore:
    """VS Code's chat sessions under one editor ``User`` folder."""

    def __init__(self, runtime: str = "copilot", timeout: float = BUSY_TIMEOUT_S) -> None:
        self.runtime = runtime
        self.timeout = timeout
        # legacy sessions per workspace database: stamp → (session id, size, last ms)
        self._legacy: dict[Path, tuple[Stamp, list[tuple[str, int, int]]]] = {}

    def list(self, root: Path, entry: str) -> StoreListing:
        listing = StoreListing()
        workspaces = root / "workspaceStorage"
        try:
            hashes = sorted(p for p in workspaces.iterdir() if p.is_dir())
        except FileNotFoundError:
            hashes = []
        except OSError as exc:
            listing.problems.append(f"{workspaces}: could not be listed ({exc.strerror or exc})")
            hashes = []
        for hash_dir in hashes:
            self._list_files(hash_dir / "chatSessions", entry, listing)
            self._list_legacy(hash_dir / "state.vscdb", entry, listing)
        self._list_files(root / "globalStorage" / "emptyWindowChatSessions", entry, listing)
        return listing

    def _list_files(self, folder: Path, entry: str, listing: StoreListing) -> None:
        for path, stat in session_files(folder, listing.problems):
            listing.items.append(StoreItem(
                runtime=self.runtime, agent_session_id=path.stem, entry=entry or self.runtime,
                path=path, size=stat.st_size, mtime_ns=stat.st_mtime_ns))

    def _list_legacy(self, db: Path, entry: str, listing: StoreListing) -> None:
        stamp = db_stamp(db)
        if stamp is None:
            return
        cached = self._legacy.get(db)
        if cached is None or cached[0] != stamp:
            sink: list[str] = []
            value = read_items(db, [LEGACY_CHAT_KEY], sink, timeout=self.timeout)
            listing.problems.extend(sink)
            if sink and LEGACY_CHAT_KEY not in value:
                return  # unreadable now: not cached, tried again on the next scan
            sessions = [(str(s["sessionId"]), len(repr(s)),
                         as_int(s.get("lastMessageDate")) or stamp[1] // 1_000_000)
                        for s in sessions_in_value(value.get(LEGACY_CHAT_KEY))]
            cached = (stamp, sessions)
            self._legacy[db] = cached
        on_disk = {p.stem for p, _ in session_files(db.parent / "chatSessions", [])}
        for session, size, last_ms in cached[1]:
            if session in on_disk:
                continue  # already migrated to its own file
            listing.items.append(StoreItem(
                runtime=self.runtime, agent_session_id=session, entry=entry or self.runtime,
                path=keyed_source(db, LEGACY_CHAT_KEY, session), size=size,
                mtime_ns=last_ms * 1_000_000))

    def read(self, item: StoreItem) -> EditorRead:
        read = EditorRead(item=item)
        keyed = split_source(item.path)
        if keyed is None:
            read_session_file(read, item.path, self.runtime)
            hash_dir = item.path.parent.parent
        else:
            db, key, session = keyed
            value = read_items(db, [key], read.problems, timeout=self.timeout).get(key)
            found = [s for s in sessions_in_value(value) if s.get("sessionId") == session]
            if found:
                read_session(read, found[0], self.runtime, item.mtime_ns // 1_000_000)
            elif not read.problems:
                read.problems.append(f"{db} [{key}]: session {session} is gone")
            hash_dir = db.parent
        if hash_dir.parent.name == "workspaceStorage":
            read.cwd = workspace_folder(hash_dir, read.problems)
        return read


COPILOT_STORE = VSCodeChatStore()
