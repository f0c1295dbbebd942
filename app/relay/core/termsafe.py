"""Text from agents, transcripts and repositories made safe for a terminal (and for a window).

An agent's output, a transcript or a repository file may carry control characters: ``ESC[2J``
clears the screen, OSC 0 sets the window title, OSC 52 writes the clipboard, a lone ``\\r``
overwrites the line before it. :func:`terminal_safe` is the one function that turns every
control character into visible text — C0 but ``\\n`` and ``\\t``, DEL and C1 become ``\\x1b``,
``\\x07``, ``\\x9b``…, so an escape sequence reads as what it is and does nothing (``\\r\\n``
stays a line end). relay-cli passes everything it prints through it (its console, see
``relay.cli.terminal``); :func:`json_text` is JSON for a terminal: JSON escapes C0 itself,
and DEL and C1 are escaped too (``\\u009b``), so the value is the same and the bytes are safe.
Undecodable bytes were replaced (U+FFFD) where the agent's output was decoded.

**Secrets.** relay-cli's stdout and stderr are one :class:`ScrubbingStream` each for the
whole command (:func:`scrubbed_output`, installed by ``relay.cli.main`` before anything is
printed): every line — a console's, a ``print``, a ``sys.stdout.write``, an error line — is
passed through :func:`relay.core.redact.scrub` before it reaches the terminal or a pipe.
:func:`json_text` scrubs the value itself first (a string under a secret-looking key goes
whole), and relay-cli's consoles scrub text before rich lays it out (``relay.cli.terminal``),
so a long token wrapped across two lines of a table cell is caught too.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

#: every character a terminal may act on: C0 but tab and newline, DEL, C1
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_UNSAFE = re.compile("[\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character but newline and tab shown as ``\\xNN``."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_visible, text.replace("\r\n", "\n"))


def json_text(value: Any, **dumps: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **dumps)`` of ``value`` scrubbed, with DEL and
    C1 escaped as well (``\\u007f`` … ``\\u009f``): no secret, and no byte a terminal
    acts on."""
    from relay.core.redact import scrub_obj  # not at import: --help never compiles its rules

    text = json.dumps(scrub_obj(value), ensure_ascii=False, **dumps)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


#: a line longer than this is written (scrubbed) without waiting for its end
_MAX_PENDING = 1 << 16


class ScrubbingStream(io.TextIOBase):
    """A text stream that scrubs what it is given a line at a time and writes it to
    ``inner`` (a partial line waits for its end, a flush or :data:`_MAX_PENDING`)."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner
        self._pending = ""

    def write(self, text: str) -> int:
        from relay.core.redact import scrub  # not at import: --help never compiles its rules

        joined = self._pending + text
        cut = joined.rfind("\n") + 1
        if len(joined) - cut > _MAX_PENDING:
            cut = len(joined)
        self._pending = joined[cut:]
        if cut:
            self.inner.write(scrub(joined[:cut]))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            from relay.core.redact import scrub

            pending, self._pending = self._pending, ""
            self.inner.write(scrub(pending))
        self.inner.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def buffer(self) -> Any:
        """The binary stream below: what is written there as bytes is not scrubbed (relay-cli
        mcp's JSON-RPC, whose results ``relay.mcp.results.guarded`` scrubs)."""
        self.flush()
        return self.inner.buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)


@contextlib.contextmanager
def scrubbed_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`ScrubbingStream` while inside (the
    streams before are put back, flushed, on the way out)."""
    before = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbingStream(before[0]), ScrubbingStream(before[1])
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = before
