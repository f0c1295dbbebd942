"""SQLite persistence (aiosqlite, WAL): migrations, the batched event writer, the tables' owners."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.core.store.db import Store

__all__ = ["Store"]


def __getattr__(name: str) -> Any:
    # Store on first use: a submodule (migrations, index_file) is imported without the store,
    # its models and aiosqlite (relay-cli sessions reads relay.db with sqlite3 alone)
    if name == "Store":
        from relay.core.store.db import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
