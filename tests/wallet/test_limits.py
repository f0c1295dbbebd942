"""Official limit signals: status line, response headers, which readings still hold."""

from __future__ import annotations

from relay.wallet.limits import current, from_headers, from_statusline, window_of
from relay.wallet.model import LimitSnapshot

NOW = 1_800_000_000_000
RESET_S = NOW // 1000 + 3600


def test_statusline_windows_become_readings_and_missing_ones_are_skipped() -> None:
    payload = {"rate_limits": {"five_hour": {"used_percentage": 23.5, "resets_at": RESET_S},
                               "seven_day": {"used_percentage": "41.2", "resets_at": RESET_S},
                               "seven_day_opus": {"resets_at": RESET_S},
                               "odd": "not a window"}}
    readings = from_statusline("claude:work", payload, NOW)
    assert [(r.window, r.used_percent, r.resets_at_ms) for r in readings] == [
        ("five_hour", 23.5, RESET_S * 1000), ("seven_day", 41.2, RESET_S * 1000)]
    assert {r.origin for r in readings} == {"claude statusline"}
    assert from_statusline("claude", {"model": {}}, NOW) == []  # API-key users get none


def test_anthropic_unified_and_codex_headers() -> None:
    headers = {"Anthropic-Ratelimit-Unified-5h-Utilization": "0.91",
               "anthropic-ratelimit-unified-5h-reset": str(RESET_S),
               "anthropic-ratelimit-unified-5h-status": "allowed_warning",
               "x-codex-primary-used-percent": "42.5", "x-codex-primary-window-minutes": "300",
               "x-codex-primary-reset-at": str(RESET_S),
               "x-codex-secondary-used-percent": "12", "x-codex-secondary-window-minutes": "10080"}
    got = [(r.window, r.used_percent, r.status, r.origin) for r in
           from_headers("e", headers, NOW)]
    assert got[0][0] == "five_hour"
    assert abs((got[0][1] or 0) - 91.0) < 1e-9
    assert got[0][2:] == ("allowed_warning", "anthropic headers")
    assert got[1:] == [("five_hour", 42.5, None, "codex headers"),
                       ("seven_day", 12.0, None, "codex headers")]
    assert from_headers("e", {"content-type": "text/event-stream"}, NOW) == []


def test_window_names() -> None:
    assert window_of("seven_day_sonnet") == "seven_day_sonnet"
    assert window_of(None, 300) == "five_hour"
    assert window_of("weird", 60) == "other"


def test_only_readings_of_the_current_window_hold() -> None:
    stale = LimitSnapshot("e", "five_hour", NOW - 10, used_percent=99.0, resets_at_ms=NOW - 1)
    old = LimitSnapshot("e", "five_hour", NOW - 100, used_percent=10.0, resets_at_ms=NOW + 1)
    new = LimitSnapshot("e", "five_hour", NOW - 50, used_percent=20.0, resets_at_ms=NOW + 1)
    undated = LimitSnapshot("e", "seven_day", NOW - 8 * 86_400_000, used_percent=5.0)
    assert current([stale, new, old, undated], NOW) == {"five_hour": new}
