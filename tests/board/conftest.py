"""A real engine (relay.db, writer, bus) for the board's tests, and a repository."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.events import EventRecord
from relay.engine.engine import Engine
from tests.conftest import make_repo


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config())
    yield eng
    await eng.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "Shop App")


class Published:
    """What the bus published, after commit (a listener on the engine's bus)."""

    def __init__(self, engine: Engine) -> None:
        self.records: list[EventRecord] = []
        engine.bus.add_listener(self._on)

    def _on(self, records: Sequence[EventRecord]) -> None:
        self.records.extend(records)

    def kinds(self) -> list[str]:
        return [r.event.kind for r in self.records]


@pytest.fixture
def published(engine: Engine) -> Published:
    return Published(engine)
