"""relay.core.signals: unknown wording is kept, never guessed (part 4)."""

from __future__ import annotations

from datetime import UTC

import pytest

from relay.core.signals import classify
from tests.core.signal_helpers import NOW, at


@pytest.mark.parametrize("text", [
    None,
    "",
    "Something unexpected happened.",
    "Approaching usage limit · resets at 12pm",  # a warning, not a limit
    "You've hit your context limit",
    "Você atingiu o limite de uso do Codex.",
    "Please try again in a moment.",
    "Error: When using --print, --output-format=stream-json requires --verbose",
    "Missing environment variable: `MOCK_API_KEY`.",
    "Gemini CLI is not running in a trusted directory.",
    "Reached maximum number of turns (1)",
])
def test_unknown_wording(text: str | None) -> None:
    signal = classify(text, provider="claude", now=NOW, tz=UTC)
    assert (signal.kind, signal.source, signal.scope) == ("unknown", "none", None)
    assert signal.text == text
    assert signal.retry_after is None


def test_an_unknown_kind_still_keeps_a_stated_time() -> None:
    """A reset the text states is kept even when the kind is unknown (for warnings)."""
    signal = classify("Approaching usage limit · resets at 12pm", provider="claude", now=NOW,
                      tz=UTC)
    assert (signal.kind, signal.resets_at) == ("unknown", at(2026, 11, 30, 12, 0))
    bare = classify("Please try again in 3s", provider="x", now=NOW, tz=UTC)
    assert (bare.kind, bare.retry_after) == ("unknown", 3.0)


def test_the_text_is_kept_verbatim() -> None:
    text = "  You’ve hit your usage limit.\r\n Try again later.  "
    signal = classify(text, provider="codex", now=NOW, tz=UTC)
    assert signal.text is text
    assert signal.kind == "usage_limit"
