"""A host killed in the middle of a request: the client must call it gone, not "not answering".

A SIGKILLed host's sockets and its lock are let go of by the kernel in its own order: the
client's request may fail before the lock is free. A client that would take the data folder
over (``relay-cli pipeline resume`` following a run) must still see the host gone.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay.api.client import RelayClient
from relay.core.errors import HostGoneError

# a stand-in host: holds the data folder's lock, takes one request, drops the connection
# without an answer, and lets go of the lock a moment later (the order a SIGKILL may give)
HOST = """
import socket, sys, time
from pathlib import Path
from relay.core.hostfile import host_lock
lock = host_lock(Path(sys.argv[1]))
assert lock.try_acquire()
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(1)
print(server.getsockname()[1], flush=True)
conn, _ = server.accept()
conn.recv(65536)
conn.close()
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def dropping_host(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """(data folder, port) of the stand-in host; its lock is let go of 0.5 s after it drops
    the request (well inside the client's look-again, GONE_WAIT_S)."""
    home = tmp_path / "home"
    home.mkdir()
    host = subprocess.Popen([sys.executable, "-c", HOST, str(home), "0.5"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        yield home, int(host.stdout.readline())
    finally:
        host.kill()
        host.wait()


async def test_a_host_that_drops_the_request_before_its_lock_is_free_is_gone(
        dropping_host: tuple[Path, int]) -> None:
    home, port = dropping_host
    client = RelayClient(f"http://127.0.0.1:{port}", "token", home=home)
    try:
        with pytest.raises(HostGoneError, match="has stopped"):
            await client.list_sessions()
    finally:
        await client.aclose()
