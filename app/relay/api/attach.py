"""How a front end reaches the engine: attach to the data folder's host, or become it.

:func:`attach` is the one place that decides. ``--connect URL`` (or ``RELAY_CONNECT``) →
a client of that host. Else a live host of the data folder (``host.json`` whose lock is
held) → a client of it. Else, when ``host_if_none``, this process claims the lock, opens
the engine and serves the API for as long as the ``async with`` lasts (a ``relay-cli run``
with no host does this, so a window can attach meanwhile) — and the front end still speaks
to it through a client, the same code path as everyone else's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from relay.api.client import RelayClient
from relay.core.errors import HostError, HostRunningError
from relay.core.hostfile import CONNECT_ENV, read_host

if TYPE_CHECKING:  # the server (FastAPI, uvicorn) is imported only by a process that hosts
    from relay.api.app import Mount
    from relay.api.host import Host, Listen
    from relay.core.config import Config
    from relay.core.vault import PassphraseProvider
    from relay.engine.engine import Engine

#: how long a process that lost the race for the lock waits for the winner's host.json
RACE_WAIT_S = 10.0


@dataclass
class Attached:
    """A client of the host, and the host itself when this process is it."""

    client: RelayClient
    host: Host | None = None

    @property
    def hosting(self) -> bool:
        return self.host is not None

    @property
    def engine(self) -> Engine | None:
        return self.host.engine if self.host else None


async def client_of_live_host(config: Config, connect: str | None = None,
                              token: str | None = None) -> RelayClient | None:
    """A client of ``--connect``'s host or of the data folder's live host; ``None``: none."""
    url = connect or os.environ.get(CONNECT_ENV) or None
    if url:
        client = RelayClient.connect(url, token, config.home)
        await client.status()  # a wrong URL or token says so now, not at the first command
        return client
    return RelayClient.for_home(config.home)


@contextlib.asynccontextmanager
async def attach(config: Config, *, connect: str | None = None, token: str | None = None,
                 host_if_none: bool = True, kind: str = "serve",
                 listen: Listen | None = None, mounts: Sequence[Mount] = (),
                 passphrase_provider: PassphraseProvider | None = None,
                 recover: bool = True) -> AsyncIterator[Attached]:
    """A client of the host, hosting here first when there is none (see the module).
    ``recover=False``: a one-shot command hosting for its few moments leaves what a stopped
    host left (handoffs, waits, pipeline runs) for a long-lived host to take up."""
    client = await client_of_live_host(config, connect, token)
    if client is not None:
        async with client:
            yield Attached(client)
        return
    if not host_if_none:
        raise HostError(f"No Relay host runs for {config.home}.",
                        "Start one: open the Relay window, or run `relay-cli serve`.")
    async with host_here(config, kind=kind, listen=listen, mounts=mounts,
                         passphrase_provider=passphrase_provider, recover=recover) as host:
        if host is None:  # another process won the race for the lock: use its host
            client = await _wait_for_host(config)
            async with client:
                yield Attached(client)
            return
        async with RelayClient(host.url, host.token) as client:
            yield Attached(client, host)


@contextlib.asynccontextmanager
async def host_here(config: Config, *, kind: str = "serve", listen: Listen | None = None,
                    mounts: Sequence[Mount] = (),
                    passphrase_provider: PassphraseProvider | None = None,
                    recover: bool = True) -> AsyncIterator[Host | None]:
    """Host the data folder in this process for the block (``None``: another process took
    the lock first). The engine opens recovering (``recover``): a host carries on what a
    stopped host left. Without ``passphrase_provider`` a client gives the vault's passphrase
    when a session needs it (:mod:`relay.api.vault`)."""
    from relay.api.host import Host, claim
    from relay.api.vault import HostPassphrase
    from relay.engine.engine import Engine

    try:
        lock = claim(config.home)
    except HostRunningError:
        yield None
        return
    try:
        engine = await Engine.open(config, passphrase_provider=passphrase_provider
                                   or HostPassphrase(), recover=recover)
        try:
            host = await Host.start(engine, lock, kind=kind, listen=listen, mounts=mounts)
            try:
                yield host
            finally:
                await host.close()
        finally:
            await engine.close()
    finally:
        lock.release()  # last: no other host starts while this one puts its sessions away


async def _wait_for_host(config: Config) -> RelayClient:
    """The client of the host another process is starting right now."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RACE_WAIT_S
    while loop.time() < deadline:
        client = RelayClient.for_home(config.home)
        if client is not None:
            return client
        await asyncio.sleep(0.05)
    info = read_host(config.home)
    raise HostError(f"Another Relay process holds {config.home}'s host lock but serves no API"
                    f"{f' (pid {info.pid})' if info else ''}.",
                    "Wait for it to finish starting, or stop it.")
