"""A host in this test's process: an engine on the test's data folder served on a free
loopback port, and a client of it."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
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


@pytest.fixture
def host_proc(relay_home: Path) -> Iterator[subprocess.Popen[str]]:
    """A ``relay-cli serve`` process of the test's data folder, closed in order after it."""
    from tests.api.test_host_process import _serve

    proc = _serve(relay_home)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
