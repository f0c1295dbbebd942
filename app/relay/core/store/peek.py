"""What ``relay-cli doctor`` reads from relay.db without opening the store: its schema
version and the keyed accounts, read-only with :mod:`sqlite3` alone (fast to import)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def database_facts(path: Path) -> tuple[int | None, list[str]]:
    """The schema version (None: none recorded) and the api_key accounts that are not paused
    (``provider:label``; a key's presence is enough). Raises :class:`sqlite3.Error`."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        (schema,) = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        keyed = [f"{p}:{label}" for p, label in conn.execute(
            "SELECT provider, label FROM accounts WHERE auth_kind='api_key' AND paused=0"
            " ORDER BY provider, label")]
    finally:
        conn.close()
    return schema, keyed
