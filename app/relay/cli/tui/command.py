"""``relay-cli tui``: the TUI on the host's client (:func:`relay.api.attach.attach`).

With a host running (the window, ``relay-cli serve``, ``--connect URL``) the TUI is one more
client: quitting it stops nothing. With none, it hosts the data folder for its lifetime, as
``relay-cli run`` does — a user who types ``relay-cli tui`` expects to see their sessions,
not a refusal — and says so in its top line; quitting then asks first when sessions run.
While it draws, log warnings become its notifications (a line on stderr would tear the
screen).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console

from relay.core.config import Config
from relay.core.errors import RelayError

if TYPE_CHECKING:
    from relay.cli.tui.app import RelayTui

HELP = "a full-screen terminal client: sessions, live streams, talk to the agent"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tui = sub.add_parser("tui", help=HELP, description=(
        "A full-screen terminal client of the Relay host (Textual): the sessions with their "
        "live states, a session's stream, a composer that queues, steers or interrupts and "
        "sends, the agent's questions, hand off now and stop. It attaches to the running "
        "host (or --connect URL --token T); with none it hosts the data folder itself until "
        "you quit — start `relay-cli serve` first to keep sessions running after it."))
    # also after the command (relay-cli tui --connect URL); SUPPRESS keeps the global one's
    tui.add_argument("--connect", metavar="URL", default=argparse.SUPPRESS,
                     help="the host at URL (default: RELAY_CONNECT, else this data folder's)")
    tui.add_argument("--token", default=argparse.SUPPRESS,
                     help="the API token for --connect (default: RELAY_TOKEN)")


class _Notify(logging.Handler):
    """Log records as the app's notifications."""

    def __init__(self, app: RelayTui) -> None:
        super().__init__(logging.WARNING)
        self.app = app

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # never let a log line break the screen
            self.app.notify(record.getMessage(), severity="error" if record.levelno >=
                            logging.ERROR else "warning", timeout=6)


@contextlib.contextmanager
def _logging_to(app: RelayTui) -> Iterator[None]:
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = [_Notify(app)]
    try:
        yield
    finally:
        root.handlers = saved


async def tui(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.api.attach import attach
    from relay.cli.tui.app import RelayTui

    if not (sys.stdin.isatty() and sys.__stderr__ is not None and sys.__stderr__.isatty()):
        raise RelayError("relay-cli tui needs a terminal (it draws on stderr, reads stdin).",
                         "Run it in a terminal (over SSH: ssh -t). Scripts: relay-cli sessions, "
                         "show --follow, say, answer, stop.")

    async with attach(config, connect=args.connect, token=args.token, kind="tui",
                      recover=True) as attached:
        app = RelayTui(attached.client, hosting=attached.hosting)
        with _logging_to(app):
            await app.run_async()
    if app.ended:
        console.print(app.ended, markup=False, highlight=False)
        return 1
    return 0
