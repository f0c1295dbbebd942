"""How relay-cli's feature commands reach the engine: as clients of the data folder's host.

:func:`host_api` is :func:`relay.api.attach.attach` for one command — a client of
``--connect``'s host (``RELAY_CONNECT``) or of the data folder's live host; with none, this
process hosts for the command's duration and still speaks to it through the client, over
the same API. A one-shot command hosting takes up nothing a stopped host left (handoffs,
waits, pipeline runs): that is a long-lived host's work (``serve``, the window, ``recover``,
``daemon``).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relay.api.attach import Attached
    from relay.api.client import RelayClient
    from relay.cli.render import StreamPrinter
    from relay.core.config import Config
    from relay.core.models import SessionRow
    from relay.core.vault import PassphraseProvider

@contextlib.asynccontextmanager
async def host_api(config: Config, args: argparse.Namespace, *, recover: bool = False,
                   passphrase: PassphraseProvider | None = None) -> AsyncIterator[Attached]:
    """The host's client for the block (hosting here while it lasts when none runs)."""
    from relay.api.attach import attach

    async with attach(config, connect=getattr(args, "connect", None),
                      token=getattr(args, "token", None), kind="cli", recover=recover,
                      passphrase_provider=passphrase) as attached:
        yield attached


async def follow_session(client: RelayClient, session_id: str, after: int,
                         printer: StreamPrinter) -> SessionRow:
    """Print the session's events after ``after`` as the host stores them, until it ends;
    its final row. (Ctrl-C leaves it running in a live host; a host here closes with it.)"""
    async for record in client.follow(session_id, after):
        printer.print(record)
    return await client.get_session(session_id)
