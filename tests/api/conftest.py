"""A host in this test's process: an engine on the test's data folder served on a free
loopback port, and a client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from relay.api.client import RelayClient
from relay.api.host import Host, Listen, claim
from relay.core.config import load_config
from relay.core.hostfile import read_token
from relay.engine.engine import Engine


@dataclass
class Served:
    engine: Engine
    host: Host
    client: RelayClient
    token: str


@pytest.fixture
async def served(relay_home: Path) -> AsyncIterator[Served]:
    config = load_config()
    lock = claim(config.home)
    engine = await Engine.open(config, recover=True)
    host = await Host.start(engine, lock, listen=Listen(port=0))
    token = read_token(config.home)
    assert token
    client = RelayClient(host.url, token)
    try:
        yield Served(engine, host, client, token)
    finally:
        await client.aclose()
        await host.close()
        await engine.close()
        host.release()
