"""How the wallet's figures read: durations, ages, sources, money, the tray's sentence."""

from __future__ import annotations

from dataclasses import replace

import pytest

from relay.wallet import present as text
from relay.wallet.model import Figure
from relay.wallet.usage_refresh import RefreshReport
from tests.gui.wallet_fakes import HOUR, MIN, NOW, codex_key, window


@pytest.mark.parametrize(("ms", "shown"), [
    (-5, "<1m"), (59_000, "<1m"), (45 * MIN, "45m"), (3 * HOUR + 12 * MIN, "3h 12m"),
    (3 * HOUR + 5 * MIN, "3h 05m"), (2 * HOUR, "2h"), (52 * HOUR, "2d 4h"), (48 * HOUR, "2d"),
])
def test_duration(ms: int, shown: str) -> None:
    assert text.duration(ms) == shown


@pytest.mark.parametrize(("figure", "shown"), [
    (Figure(0.4, "official", NOW - 2 * MIN), "official · 2 min ago"),
    (Figure(0.4, "official", NOW - 30_000), "official · just now"),
    (Figure(0.4, "official", NOW + 60_000), "official · just now"),  # a clock ahead
    (Figure(0.4, "recorded", NOW - 3 * HOUR), "recorded · 3 h ago"),
    (Figure(0.4, "official", NOW - 50 * HOUR), "official · 2 d ago"),
    (Figure(0.4, "official", None), "official"),
    (Figure(0.4, "estimate", NOW), "estimate from transcripts"),
    (Figure(None, "official", NOW), "unknown —"),
    (Figure(0.4, "unknown", NOW), "unknown —"),
])
def test_source_label(figure: Figure, shown: str) -> None:
    assert text.source_label(figure, NOW) == shown


def test_numbers_unknown_is_a_dash_never_zero() -> None:
    assert (text.percent(None), text.money(None), text.tokens(None)) == ("—", "—", "—")
    assert text.cost(Figure(None)) == "—"
    assert text.burn(Figure(12.0, "unknown")) == "—"
    assert text.percent(0.0) == "0%"
    assert text.percent(0.956) == "96%"
    assert [text.money(v) for v in (0.0, 0.004, 3.2, 1234.5)] == [
        "$0.00", "$0.004", "$3.20", "$1,234"]
    assert [text.tokens(v) for v in (999, 1234, 3_400_000, 2e9)] == [
        "999", "1.2k", "3.4M", "2.0B"]


def test_costs_say_whether_the_cli_reported_them() -> None:
    assert text.cost(Figure(0.0, "recorded", None, "no runs")) == "$0.00"
    assert text.cost(Figure(1.5, "official", NOW)) == "$1.50 reported"
    assert text.cost(Figure(1.5, "recorded", NOW)) == "$1.50 reported"
    assert text.cost(Figure(1.5, "estimate", NOW)) == "$1.50 estimate"


def test_windows() -> None:
    w = window()
    assert text.used_text(w) == "42% used"
    assert text.window_detail(w, NOW) == ("≈71% at reset · resets in 3h 12m · "
                                          "official · 2 min ago · high confidence")
    # nothing projected: no confidence to state
    bare = window(projected=None, confidence="none")
    assert text.window_detail(bare, NOW) == ("resets in 3h 12m · official · 2 min ago · "
                                             "no forecast")
    assert text.resets(w, NOW + 4 * HOUR) == "reset due"
    near = window(used=0.9, projected=1.3, exhausts_in=20 * MIN)
    assert text.runs_out(near, NOW) == "runs out in 20m"
    assert text.runs_out(near, NOW + HOUR) == "exhausted"
    at = text.clock_ms(NOW + 20 * MIN)
    assert text.projected_text(near, NOW) == f"runs out ~{at}, before the reset"
    assert text.projected_text(near, NOW + HOUR) == "exhausted"
    far = window(used=0.3, projected=1.0, exhausts_in=30 * HOUR)
    assert text.projected_text(far, NOW).startswith("runs out ~")
    assert text.projected_text(far, NOW).split("~")[1][:3].isalpha()  # "Mon 18:00": the day
    # a figure above 100 % (an old host's) still reads bounded
    assert text.projected_text(window(used=0.5, projected=38.0), NOW) == "≈100% at reset"
    assert [text.level(x, 0.95) for x in (w, near, window(used=0.96), window(used=None))] == [
        "ok", "warn", "over", "unknown"]
    assert text.level(window(used=0.5, projected=0.97), 0.95) == "warn"


def test_the_watermark() -> None:
    assert not text.past_watermark(window(), 0.95)
    assert text.past_watermark(window(used=0.95), 0.95)
    assert text.past_watermark(window(used=0.5, projected=0.99), 0.95)
    unknown = window(used=None, projected=None)
    assert not text.past_watermark(unknown, 0.0)
    account = codex_key()
    sentence = text.watermark_warning(account, account.windows[0], NOW)
    assert sentence.startswith(f"codex:ci: the 5-hour window is at 96% used, runs out "
                               f"~{text.clock_ms(NOW + 20 * MIN)}, before the reset "
                               "(official · 2 min ago). It resets at ")
    no_reset = replace(account.windows[0], resets_at=Figure(None))
    assert text.watermark_warning(account, no_reset, NOW).endswith("Its reset time is unknown.")


def test_a_command_to_copy_hides_secret_values() -> None:
    shown = text.shown_command(["claude", "/login"], {"CLAUDE_CONFIG_DIR": "/home/me/my claude",
                                                      "ANTHROPIC_API_KEY": "sk-secret"})
    assert shown == ("CLAUDE_CONFIG_DIR='/home/me/my claude' ANTHROPIC_API_KEY=<hidden> "
                     "claude /login")
    assert text.scan_progress(3, 10) == "Reading transcripts… 3 of 10 files"
    assert text.scan_progress(0, 0) == "Reading transcripts…"


def test_what_a_scan_did() -> None:
    assert text.report_text(RefreshReport()) == "No transcripts found"
    assert text.report_text(RefreshReport(files_seen=12, elapsed_s=0.012)) == (
        "12 transcript files: nothing new · 0.0 s")
    assert text.report_text(RefreshReport(files_seen=12, files_changed=2, bytes_read=2048,
                                          entries_added=7, elapsed_s=1.26)) == (
        "12 transcript files: 2 read (2.0 kB), 7 new calls · 1.3 s")
    assert [text.size(n) for n in (512, 1536, 5 << 20, 3 << 30)] == [
        "512 B", "1.5 kB", "5.0 MB", "3.0 GB"]
