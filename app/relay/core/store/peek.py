"""What relay-cli's quick paths read from relay.db without opening the store — ``doctor``:
its schema version and the keyed accounts; ``usage`` with no host: the accounts' folders —
read-only with :mod:`sqlite3` alone (fast to import)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def database_facts(path: Path) -> tuple[int | None, list[str]]:
    """The schema version (None: none recorded) and the api_key accounts that are not paused
    (``provider:label``; a key's presence is enough). Raises :class:`sqlite3.Error`."""
    conn = _read_only(path)
    try:
        (schema,) = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        keyed = [f"{p}:{label}" for p, label in conn.execute(
            "SELECT provider, label FROM accounts WHERE auth_kind='api_key' AND paused=0"
            " ORDER BY provider, label")]
    finally:
        conn.close()
    return schema, keyed


def account_folders(path: Path) -> list[tuple[str, str, str | None]]:
    """Every account's ``(provider, label, config_dir)``, by provider and label. Raises
    :class:`sqlite3.Error`."""
    conn = _read_only(path)
    try:
        return conn.execute("SELECT provider, label, config_dir FROM accounts"
                            " ORDER BY provider, label").fetchall()
    finally:
        conn.close()


def _read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
