"""SQLite persistence (aiosqlite, WAL): migrations, the batched event writer, queries."""

from relay.core.store.db import Store

__all__ = ["Store"]
