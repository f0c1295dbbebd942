"""A migrated database and a ledger on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.store.db import Store
from relay.pipelines.ledger import Ledger


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    path = tmp_path / "relay.db"
    store = await Store.open(path)
    await store.close()
    book = Ledger.open(path)
    yield book
    book.close()
