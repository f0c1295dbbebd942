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
"""

from __future__ import annotations

import json
import re
from typing import Any

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
    """``json.dumps(value, ensure_ascii=False, **dumps)`` with DEL and C1 escaped as well
    (``\\u007f`` … ``\\u009f``): the same JSON value, and no byte a terminal acts on."""
    text = json.dumps(value, ensure_ascii=False, **dumps)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
