"""relay-cli's consoles: everything they print is safe for a terminal.

Text that came from an agent, a transcript or a repository may carry escape sequences
(clear the screen, set the window title, write the clipboard with OSC 52). A
:class:`SafeConsole` passes the text of every segment it writes through
:func:`relay.core.termsafe.terminal_safe` after rich has laid it out and before it adds its
own styles, so the styles still work and a control character in the text shows as ``\\x1b``.
Every console relay-cli prints on is one (:func:`console`); what it prints with ``print``
is JSON made by :func:`relay.core.termsafe.json_text` or passed through ``terminal_safe``,
and so are its warnings on stderr (:class:`SafeFormatter`).

Secrets: a console scrubs the text it is given before rich lays it out (:meth:`render_str`,
so a long token is replaced before a table cell can wrap it across lines); the line-level
pass is relay-cli's stdout/stderr themselves (:func:`relay.core.termsafe.scrubbed_output`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from relay.core.redact import scrub
from relay.core.termsafe import terminal_safe


class SafeConsole(Console):
    """A rich console whose text segments are made safe for a terminal (its own control
    segments, cursor moves of a live display, are rich's and left as they are)."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(terminal_safe(segment.text), segment.style)
            for segment in buffer
        )

    def render_str(self, text: str, **options: Any) -> Text:
        """``text`` scrubbed, then as rich would render it (before any wrapping)."""
        return super().render_str(scrub(text), **options)

    def on_broken_pipe(self) -> None:
        """The reader left (``relay-cli show ID --follow | head``): raise BrokenPipeError,
        which relay-cli's main answers quietly (exit 1) as it does for a plain ``print``.
        Rich's own SystemExit would stop the event loop in the middle of a task, and closing
        the stream the command was following then crashed."""
        if not self.quiet:
            raise BrokenPipeError


def console(*, stderr: bool = False, **options: Any) -> SafeConsole:
    """A console on stdout (``stderr``: on stderr) without rich's guessing highlighter."""
    return SafeConsole(stderr=stderr, highlight=False, **options)


class SafeFormatter(logging.Formatter):
    """A log record's line (its message may quote an agent or a repository) made safe."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))
