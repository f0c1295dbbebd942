"""relay-cli serve / status / token: host a data folder headless, say who hosts it, and the
API token.

``serve`` is the headless host (a server, an SSH box, a container): it runs the engine and
the local API until SIGTERM or SIGINT, then closes in order — what was running is taken up
by the next host (the durable handoffs, waits and pipeline runs). docs/api.md and
docs/remote.md say how to reach it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from relay.core.config import Config


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="host this data folder headless and serve its local "
                                         "API (default 127.0.0.1:4748)")
    serve.add_argument("--port", type=int, default=None,
                       help="the port (default: RELAY_PORT, else 4748; the next free one if "
                            "taken; 0: any free port)")
    serve.add_argument("--listen", default="127.0.0.1", metavar="ADDRESS",
                       help="the address to listen on (default 127.0.0.1; anything not "
                            "loopback needs --allow-remote and TLS)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="really listen on a non-loopback address (with --tls-cert/--tls-key)")
    serve.add_argument("--tls-cert", type=Path, default=None, metavar="FILE")
    serve.add_argument("--tls-key", type=Path, default=None, metavar="FILE")


def register_status(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = sub.add_parser("status", help="whether a Relay host runs for this data folder, "
                                           "where, and what it runs")
    status.add_argument("--json", action="store_true")


def register_token(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    token = sub.add_parser("token", help="print the local API's token (--rotate: make a new one)")
    token.add_argument("--rotate", action="store_true",
                       help="replace the token; clients holding the old one must be given the new")


async def serve(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.api.attach import host_here
    from relay.api.host import Listen, port_from_env
    from relay.core.errors import HostRunningError
    from relay.core.hostfile import read_host

    port = args.port if args.port is not None else port_from_env()
    listen = Listen(address=args.listen, port=port, certfile=args.tls_cert,
                    keyfile=args.tls_key, allow_remote=args.allow_remote).checked()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT) if sys.platform != "win32" else ()
    for signum in signals:
        loop.add_signal_handler(signum, stop.set)
    try:
        async with host_here(config, kind="serve", listen=listen) as host:
            if host is None:
                info = read_host(config.home)
                where = f" at {info.url} ({host_kind(info.kind)}, pid {info.pid})" if info else ""
                raise HostRunningError(
                    f"Relay already hosts {config.home}{where}.",
                    "`relay-cli status` says what it runs; stop it (SIGTERM) before starting "
                    "another.")
            console.print(f"[bold]Relay[/] hosting {escape(str(config.home))} on "
                          f"{escape(host.url)} (pid {_pid()})")
            console.print("token: `relay-cli token` · status: `relay-cli status` · stop: "
                          "Ctrl-C or SIGTERM", markup=False, highlight=False)
            if host.engine.recovered:
                console.print(f"carried on: {', '.join(host.engine.recovered)}", markup=False)
            await stop.wait()
            # on its own line, not after the ^C the terminal echoed
            console.print(("\n" if sys.stdout.isatty() else "") + "relay serve: closing",
                          markup=False)
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
    return 0


#: how ``status`` and ``serve`` name a host, by host.json's ``kind``
HOST_KINDS = {"window": "the window", "serve": "headless", "run": "a relay-cli run",
              "tui": "a relay-cli tui"}


def host_kind(kind: str) -> str:
    return HOST_KINDS.get(kind, kind)


def _pid() -> int:
    import os

    return os.getpid()


async def status(config: Config, args: argparse.Namespace, console: Console) -> int:
    """Exit 0 when a host answers, 3 when none runs."""
    from datetime import datetime

    from relay.api.client import RelayClient
    from relay.core.termsafe import json_text

    client = RelayClient.for_home(config.home)
    if client is None:
        if args.json:
            print(json_text({"host": None, "home": str(config.home)}))
        else:
            console.print(f"No Relay host runs for {escape(str(config.home))}.")
            console.print("Start one: open the Relay window, or `relay-cli serve` (headless).",
                          markup=False, highlight=False)
        return 3
    async with client:
        info = await client.status()
    if args.json:
        print(json_text({"host": info.model_dump(mode="json")}))
        return 0
    since = datetime.fromtimestamp(info.started_at).astimezone().strftime("%m-%d %H:%M")
    console.print(f"[bold]Relay host[/] {escape(info.url)} · {escape(host_kind(info.kind))} · "
                  f"pid {info.pid} · since {since}")
    console.print(f"data folder: {escape(info.home)}")
    running = ", ".join(info.running) if info.running else "nothing"
    streams = info.subscribers
    console.print(f"running: {escape(running)} · {streams} event "
                  f"stream{'' if streams == 1 else 's'} open")
    return 0


async def token(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.core.hostfile import TOKEN_FILE, api_token

    value = await asyncio.to_thread(api_token, config.home, rotate=args.rotate)
    print(value)
    if args.rotate and sys.stderr.isatty():
        Console(stderr=True).print(f"rotated: {escape(str(config.home / TOKEN_FILE))}; a running "
                                   "host takes the new token when it starts again.")
    return 0
