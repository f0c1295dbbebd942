"""Searching a data folder for secrets: the one helper the leak tests share.

:func:`forms` lists the ways a secret could be written down, :func:`hits` searches bytes for
them, :func:`files_under` reads a folder, :func:`sqlite_text` reads every column of every table
of a SQLite file through SQLite (so a value in a page the raw bytes split, or in the WAL, is
seen as SQLite returns it), and :func:`boundaries` groups a Relay data folder by where its
bytes left the engine (the store, the knowledge index, the audit log, contracts, logs).
"""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: the smallest secret whose middle fragment is searched for (a shorter fragment is too
#: likely to occur by chance)
FRAGMENT_MIN = 32


def forms(secret: str, *, encoded: bool = True) -> list[bytes]:
    """Ways a secret could be written: raw, JSON-escaped, a fragment of its middle (a
    truncated copy) and, with ``encoded``, base64 (std and url-safe, each alignment inside a
    larger blob), hex and UTF-16."""
    raw = secret.encode()
    found = [raw]
    for escaped in (json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
        if escaped.encode() not in found:
            found.append(escaped.encode())
    if len(raw) >= FRAGMENT_MIN:
        found.append(raw[len(raw) // 2 - 12:len(raw) // 2 + 12])
    if encoded:
        found += [raw.hex().encode(), raw.hex().upper().encode(), secret.encode("utf-16-le")]
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            for shift in range(3):
                text = encode(b"\0" * shift + raw)
                found.append(text[4 if shift else 0:-4])  # the groups made only of the secret
    return found


def hits(data: bytes, secrets_: Iterable[str], *, encoded: bool = True) -> list[str]:
    return [f"{s[:22]}… as form {i}" for s in secrets_
            for i, f in enumerate(forms(s, encoded=encoded)) if f in data]


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@contextmanager
def sqlite_copy(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a copy of a SQLite file and its WAL (the original is not touched)."""
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in ("", "-wal"):
            if Path(f"{path}{suffix}").is_file():
                shutil.copyfile(f"{path}{suffix}", Path(tmp) / f"copy.db{suffix}")
        conn = sqlite3.connect(Path(tmp) / "copy.db")
        try:
            yield conn
        finally:
            conn.close()


def sqlite_text(path: Path) -> bytes:
    """Every column of every row of every table, as SQLite returns them (WAL included)."""
    out: list[str] = []
    with sqlite_copy(path) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        for table in tables:
            try:
                rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.DatabaseError as exc:  # a virtual table without its module
                out.append(f"{table}: unreadable ({exc})")
                continue
            for row in rows:
                out.extend(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                           for v in row)
    return "\n".join(out).encode()


#: the boundaries of a data folder, by the first matching rule on a file's relative path
BOUNDARIES = ("db", "knowledge", "audit", "contracts", "logs", "other")


def boundary_of(name: str) -> str:
    parts = Path(name).parts
    if parts[0].startswith("relay.db"):
        return "db"
    if parts[0].startswith("knowledge"):
        return "knowledge"
    if "audit" in parts[0]:
        return "audit"
    if parts[0] in ("handoffs", "contracts") or parts[-1] in ("brief.md", "envelope.json",
                                                               "envelope.md"):
        return "contracts"
    if parts[0] == "logs" or name.endswith(".log"):
        return "logs"
    return "other"


def boundaries(folder: Path) -> dict[str, bytes]:
    """A data folder's bytes per boundary: raw file bytes, plus for each SQLite file
    everything SQLite reads out of it."""
    grouped: dict[str, list[bytes]] = {b: [] for b in BOUNDARIES}
    for name, data in sorted(files_under(folder).items()):
        grouped[boundary_of(name)].append(data)
        if data.startswith(b"SQLite format 3\0"):
            grouped[boundary_of(name)].append(sqlite_text(folder / name))
    return {b: b"\n\0".join(parts) for b, parts in grouped.items()}
