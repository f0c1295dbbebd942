"""What the editor-store tests share: reading a store's only session, its event kinds."""

from __future__ import annotations

from pathlib import Path

from relay.detect.stores.base import SessionStore, StoreItem, StoreRead
from relay.detect.stores.editor_common import EditorRead

FAST = 0.05  # busy timeout for the locked-database tests


def kinds(read: StoreRead) -> list[str]:
    return [e.kind for e in read.events]


def prompt(read: StoreRead) -> str:
    assert isinstance(read, EditorRead)
    return read.initial_prompt


def only(store: SessionStore, root: Path, entry: str = "") -> tuple[StoreItem, StoreRead]:
    listing = store.list(root, entry)
    assert listing.problems == []
    assert len(listing.items) == 1, listing.items
    return listing.items[0], store.read(listing.items[0])


def by_id(store: SessionStore, root: Path) -> dict[str, StoreRead]:
    return {i.agent_session_id: store.read(i) for i in store.list(root, "").items}
