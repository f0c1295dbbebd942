"""terminal_safe and json_text: no character a terminal acts on gets through, and the text
still reads."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from relay.core.termsafe import json_text, terminal_safe

#: C0 but newline and tab, DEL, C1: what a terminal may act on
CONTROLS = {c for c in range(0xA0) if c < 0x20 or 0x7F <= c <= 0x9F} - {0x0A, 0x09}


def acting(text: str) -> list[str]:
    return [c for c in text if ord(c) in CONTROLS]


def test_every_code_point_up_to_0x9f() -> None:
    for code in range(0xA0):
        char = chr(code)
        shown = terminal_safe(f"a{char}b")
        if code in CONTROLS:
            assert shown == f"a\\x{code:02x}b", hex(code)
        else:
            assert shown == f"a{char}b", hex(code)
        assert acting(shown) == []


def test_the_attacks_read_as_text() -> None:
    attack = "\x1b[2J\x1b]0;title\x07\x1b]52;c;cGF3bmVk\x07\x9b31m\rover"
    assert terminal_safe(attack) == ("\\x1b[2J\\x1b]0;title\\x07\\x1b]52;c;cGF3bmVk\\x07\\x9b31m\\x0dover")
    assert terminal_safe("one\r\ntwo\tthree\n") == "one\ntwo\tthree\n"  # line ends stay
    assert terminal_safe("plain – ünïcödé ✓ \ufffd") == "plain – ünïcödé ✓ \ufffd"


def test_json_text_is_the_same_value_without_a_byte_a_terminal_acts_on() -> None:
    value = {"text": "".join(chr(c) for c in range(0xA0)) + "é✓", "n": [1, None]}
    line = json_text(value)
    assert json.loads(line) == value
    assert acting(line) == []
    assert "é✓" in line  # not ASCII-escaped: only the controls are


@given(st.text())
def test_any_text(text: str) -> None:
    shown = terminal_safe(text)
    assert acting(shown) == []
    if not acting(text):
        assert shown == text
    assert json.loads(json_text(text)) == text
    assert acting(json_text(text)) == []
