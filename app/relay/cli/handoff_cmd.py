"""relay-cli handoff.

``handoff SESSION [--to P[:A]]`` asks the host that runs SESSION (through its API; with no
host, through the store to whichever process runs it) to pause its agent at the next safe
point and hand the task on; it then follows the handoff until the
receiver works (exit 0) or the handoff fails (exit 1). (``accounts`` lives in
:mod:`relay.cli.accounts_cmd`.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from relay.cli.render import StreamPrinter
from relay.core.config import Config
from relay.core.states import FINAL_STATES

if TYPE_CHECKING:
    from relay.api.client import RelayClient
    from relay.engine.engine import Engine

#: how long `handoff` follows the handoff before giving up (the session goes on)
FOLLOW_LIMIT_S = 600.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             entry_type: type[str] | object) -> None:
    handoff = sub.add_parser("handoff", help="pause a running session at a safe point and hand "
                                             "it to the next provider or account")
    handoff.add_argument("session", help="session id (a unique prefix is enough)")
    handoff.add_argument("--to", type=entry_type, metavar="RUNTIME[:ACCOUNT]",  # type: ignore[arg-type]
                         help="where to hand off to (default: the next entry of its chain)")
    handoff.add_argument("--json", action="store_true", help="print the handoff's events as JSON")


async def handoff(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli.commands import session_api, session_cursor

    async with session_api(config, args.connect, args.token) as api:
        row = await api.get_session(args.session)
        last = await session_cursor(api, row.id)
        answer = await api.request_handoff(row.id, args.to)
        if not args.json:
            console.print(f"[bold]Relay[/] session {row.id}: {escape(answer)}")
        return await _follow(api, row.id, last, StreamPrinter(console, args.json))


async def _follow(engine: RelayClient | Engine, session_id: str, after: int, printer: StreamPrinter) -> int:
    """Print the session's handoff steps (and notices) until the handoff is done or failed."""
    with contextlib.suppress(TimeoutError):
        async with (asyncio.timeout(FOLLOW_LIMIT_S),
                    contextlib.aclosing(engine.follow(session_id, after)) as records):
            async for record in records:
                ev = record.event
                if ev.kind in ("handoff_step", "notice", "error", "session_ended"):
                    printer.print(record)
                if ev.kind == "handoff_step" and ev.state in ("done", "failed"):
                    return 0 if ev.state == "done" else 1
                if ev.kind == "state_changed" and ev.state in FINAL_STATES:
                    printer.print(record)
                    return 1
    return 1
