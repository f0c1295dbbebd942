"""Fixtures for the knowledge graph: a repository in seven languages, an index file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.engine.engine import Engine
from relay.knowledge.store import KnowledgeStore, open_store
from tests.conftest import make_repo
from tests.knowledge.samples import SOURCES


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    """A git repository (one commit) holding :data:`samples.SOURCES` and a README."""
    return make_repo(tmp_path / "shop", {**SOURCES, "README.md": "# shop\n"})


@pytest.fixture
def kstore(tmp_path: Path) -> Iterator[KnowledgeStore]:
    store = open_store(tmp_path / "knowledge.sqlite")
    yield store
    store.close()


@pytest.fixture
async def engine() -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


def fts_intact(store: KnowledgeStore) -> bool:
    """FTS5's own check that the index matches the chunks table (raises if not)."""
    store.conn.execute("INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)")
    return True
