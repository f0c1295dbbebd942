"""Hosting a data folder: the one process that runs its engine and serves the API.

:func:`claim` takes the data folder's host lock (:mod:`relay.core.hostfile`) before the
engine opens — the engine's recovery (orphans, handoffs, pipeline runs) is the host's alone.
:meth:`Host.start` then serves the API with uvicorn on the *running* loop (the window's qasync
loop, or relay-cli's asyncio loop), writes ``host.json`` and :meth:`Host.close` undoes it all
in order. The window, ``relay-cli serve`` and a ``relay-cli run`` with no host all host this
way.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn

from relay import __version__
from relay.api.app import Mount, build_app
from relay.api.context import HostContext
from relay.api.mcp_mount import mcp_mount
from relay.core.errors import HostError, HostRunningError
from relay.core.fsutil import ProcessLock
from relay.core.hostfile import (
    DEFAULT_PORT,
    PORT_ENV,
    api_token,
    host_lock,
    new_token,
    read_host,
    remove_host,
    write_host,
)
from relay.core.redact import warm_up

if TYPE_CHECKING:
    from relay.engine.engine import Engine

log = logging.getLogger(__name__)

#: how many ports after the asked one are tried when it is taken
PORT_TRIES = 20
#: how long closing waits for open requests and streams before it cuts them
GRACEFUL_S = 2


@dataclass(frozen=True)
class Listen:
    """Where the host listens: loopback by default; anything else needs TLS and consent."""

    address: str = "127.0.0.1"
    port: int | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    #: the user said ``--allow-remote``: a non-loopback address is meant
    allow_remote: bool = False

    def checked(self) -> Listen:
        if _is_loopback(self.address):
            return self
        if not self.allow_remote:
            raise HostError(f"Relay listens on loopback only; {self.address} is not.",
                            "To serve other machines pass --allow-remote with --tls-cert and "
                            "--tls-key, or reach it over an SSH tunnel (docs/remote.md).")
        if self.certfile is None or self.keyfile is None:
            raise HostError(f"Listening on {self.address} needs TLS: the token would cross "
                            "the network in clear.",
                            "Pass --tls-cert FILE and --tls-key FILE, or use an SSH tunnel "
                            "(docs/remote.md).")
        return self

    @property
    def scheme(self) -> str:
        return "https" if self.certfile else "http"


def _is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def port_from_env(env: dict[str, str] | os._Environ[str] = os.environ) -> int | None:
    raw = env.get(PORT_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 <= int(raw) <= 65535:
        raise HostError(f"{PORT_ENV}={raw!r} is no port number.", "Use 0–65535 (0: any free port).")
    return int(raw)


def claim(home: Path) -> ProcessLock:
    """Take ``home``'s host lock, or raise :class:`HostRunningError` naming the host."""
    lock = host_lock(home)
    if lock.try_acquire():
        return lock
    info = read_host(home)
    where = f" at {info.url} (pid {info.pid})" if info else ""
    raise HostRunningError(f"Relay already runs a host for {home}{where}.",
                           "Use it (`relay-cli status`), or stop it first.")


class _Server(uvicorn.Server):
    """uvicorn on a loop it does not own: the host handles signals itself."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def]
        yield


class Host:
    """The API served over an open engine; :meth:`close` stops serving (not the engine)."""

    def __init__(self, engine: Engine, lock: ProcessLock, ctx: HostContext, server: _Server,
                 task: asyncio.Task[None], url: str, lifespans: _Lifespans,
                 token: str) -> None:
        self.engine = engine
        self.token = token
        self.lock = lock
        self.ctx = ctx
        self.url = url
        self._server = server
        self._task = task
        self._lifespans = lifespans

    @property
    def home(self) -> Path:
        return self.engine.config.home

    @classmethod
    async def start(cls, engine: Engine, lock: ProcessLock, *, kind: str = "serve",
                    listen: Listen | None = None, mounts: Sequence[Mount] = ()) -> Host:
        """Serve ``engine``'s API — and its MCP server at ``/mcp`` — on the running loop
        (``lock`` from :func:`claim`); ``mounts`` are served beside them."""
        listen = (listen or Listen(port=port_from_env())).checked()
        home = engine.config.home
        # the scrubber's rules compiled in a worker thread now, not on the loop at the first
        # event that needs them (a ~0.1 s pause in a window otherwise)
        asyncio.get_running_loop().run_in_executor(None, warm_up)
        try:
            token = await asyncio.to_thread(api_token, home)
        except HostError as exc:
            if not _disk_full(exc.__cause__):
                raise
            token = new_token()  # of this process alone: nobody else finds it
        allowed = () if _is_loopback(listen.address) else (listen.address,)
        started = time.time()
        app, ctx = build_app(engine, token, kind=kind, allowed_hosts=allowed,
                             mounts=(mcp_mount(engine), *mounts), started_at=started)
        sock = _bind(listen)
        port = sock.getsockname()[1]
        shown = f"[{listen.address}]" if ":" in listen.address else listen.address
        url = f"{listen.scheme}://{shown}:{port}"
        ctx.url = url
        config = uvicorn.Config(app, lifespan="off", log_config=None, log_level="warning",
                                access_log=False, ws="none", timeout_graceful_shutdown=GRACEFUL_S,
                                ssl_certfile=str(listen.certfile) if listen.certfile else None,
                                ssl_keyfile=str(listen.keyfile) if listen.keyfile else None,
                                server_header=False, date_header=False)
        server = _Server(config)
        lifespans = _Lifespans(ctx.lifespans)
        task: asyncio.Task[None] | None = None
        try:
            await lifespans.start()
            task = asyncio.create_task(server.serve(sockets=[sock]), name="relay-api")
            while not server.started:  # startup is quick: bind is done, the socket is given
                if task.done():
                    task.result()
                    raise HostError("The API server stopped as it started.", "See the log.")
                await asyncio.sleep(0.01)
        except BaseException:
            if task is not None:
                server.should_exit = True
                with contextlib.suppress(Exception):
                    await task
            sock.close()
            await lifespans.close()
            raise
        try:
            await asyncio.to_thread(write_host, home, url, __version__, kind)
        except OSError as exc:  # a full disk: serve this process's own clients (a read needs
            if not _disk_full(exc):  # no write); other processes do not find this host
                server.should_exit = True
                await task
                await lifespans.close()
                raise
            log.warning("relay host: the disk is full: %s serves without host.json", url)
        log.info("relay host: serving %s on %s", home, url)
        return cls(engine, lock, ctx, server, task, url, lifespans, token)

    async def close(self) -> None:
        """Stop serving: live streams and MCP sessions end (their clients resume with the next
        host), open requests get :data:`GRACEFUL_S` and ``host.json`` goes. The lock stays held until
        :meth:`release`, which the owner calls once the engine is closed too: no other host
        starts while this one's sessions are still being put away."""
        self.ctx.stopping.set()
        self.ctx.broadcaster.close()
        self._server.should_exit = True
        # /mcp's session manager ends its sessions' streams as it stops, so an MCP client's
        # open stream does not hold the server for all of GRACEFUL_S
        await self._lifespans.close()
        with contextlib.suppress(Exception):
            await self._task
        await asyncio.to_thread(remove_host, self.home)

    def release(self) -> None:
        self.lock.release()


def _disk_full(exc: BaseException | None) -> bool:
    from relay.core.store.faults import Fault, fault_of

    return isinstance(exc, OSError) and fault_of(exc) is Fault.FULL


class _Lifespans:
    """The mounts' lifespan contexts, entered and left in a task of their own: ``/mcp``'s
    session manager holds an anyio task group, which must be left by the task that entered
    it — :meth:`Host.start` and :meth:`Host.close` run in different tasks."""

    def __init__(self, contexts: Sequence[Callable[[], AbstractAsyncContextManager[object]]]
                 ) -> None:
        self._contexts = contexts
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._hold(), name="relay-api-lifespans")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait((self._task, ready), return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if self._task.done():
            self._task.result()  # a lifespan that failed to start raises here

    async def _hold(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            for context in self._contexts:
                await stack.enter_async_context(context())
            self._ready.set()
            await self._stop.wait()

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


def _bind(listen: Listen) -> socket.socket:
    """A listening socket on the asked port, the next free one if it is taken; port 0: any."""
    family = socket.AF_INET6 if ":" in listen.address else socket.AF_INET
    first = DEFAULT_PORT if listen.port is None else listen.port
    tries = 1 if first == 0 else PORT_TRIES
    last: OSError | None = None
    for port in range(first, min(first + tries, 65536)):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if os.name != "nt":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((listen.address, port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            last = exc
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                continue
            break
        else:
            return sock
    raise HostError(f"Relay could not listen on {listen.address} port {first}"
                    f"{f'–{first + tries - 1}' if tries > 1 else ''}: "
                    f"{last.strerror if last else 'no port free'}.",
                    f"Pick another with --port or {PORT_ENV}.")
