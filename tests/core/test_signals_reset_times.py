"""relay.core.signals: reading reset times — wording edges, epochs, zone names.

Year rollover, DST, 12am/12pm, impossible dates, the local zone when none is named,
aware clocks and UTC results; epoch fields (seconds or milliseconds) and IANA zone
names as the CLIs print them.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from relay.core.signals import classify, from_epoch, reset_from_text, zone_named
from tests.core.signal_helpers import NOW, at


@pytest.mark.parametrize(("text", "now", "expected"), [
    # Year rollover: "Jan 2" read on Dec 30 is next year.
    ("You've hit your weekly limit · resets Jan 2, 9am (UTC)", at(2026, 12, 30, 12, 0),
     at(2027, 1, 2, 9, 0)),
    # Less than a day past is still this year (read late); more than a day is next year.
    ("You've hit your weekly limit · resets Nov 29, 11am (UTC)", NOW, at(2026, 11, 29, 11, 0)),
    ("You've hit your weekly limit · resets Nov 29, 9am (UTC)", NOW, at(2027, 11, 29, 9, 0)),
    # DST: New York is UTC-5 on Mar 7 and UTC-4 from Mar 8, 2026.
    ("You've hit your weekly limit · resets Mar 9, 9am (America/New_York)",
     at(2026, 3, 7, 12, 0), at(2026, 3, 9, 13, 0)),
    ("You've hit your limit · resets 12am (UTC)", NOW, at(2026, 12, 1, 0, 0)),
    ("You've hit your limit · resets 12pm (UTC)", NOW, at(2026, 11, 30, 12, 0)),
    ("try again at 12:05 AM.", NOW, at(2026, 11, 30, 0, 5)),  # Codex: today, even if past
    ("try again at 12:30 PM.", NOW, at(2026, 11, 30, 12, 30)),
    # Unresolvable: unknown zone (never the default instead), impossible dates and times.
    ("You've hit your limit · resets 4:50am (Mars/Olympus)", NOW, None),
    ("You've hit your weekly limit · resets Feb 30, 9am (UTC)", NOW, None),
    ("You've hit your limit · resets 13pm (UTC)", NOW, None),
    ("try again at Foo 1st, 2027 9:00 AM.", NOW, None),
    ("Opus weekly limit reached ∙ resets Oct 24", NOW, None),  # a date without a time
    ("no time here", NOW, None),
])
def test_reset_from_text_edges(text: str, now: datetime, expected: datetime | None) -> None:
    assert reset_from_text(text, now=now, tz=UTC).resets_at == expected


def test_no_zone_and_no_tz_means_this_machine_s_local_zone() -> None:
    local_day = NOW.astimezone().date()
    expected = datetime.combine(local_day, datetime.min.time().replace(hour=13, minute=8))
    assert reset_from_text("try again at 1:08 PM.", now=NOW, tz=None).resets_at \
        == expected.astimezone().astimezone(UTC)


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="aware"):
        classify("x", provider="x", now=datetime(2026, 11, 30, 10, 5), tz=UTC)  # noqa: DTZ001


def test_reset_is_returned_in_utc() -> None:
    rome_now = NOW.astimezone(ZoneInfo("Europe/Rome"))
    signal = classify("You've hit your limit · resets 4:50am (Europe/Rome)", provider="claude",
                      now=rome_now, tz=None)
    assert signal.resets_at is not None
    assert signal.resets_at.tzinfo is UTC
    assert signal.resets_at == at(2026, 12, 1, 3, 50)


@pytest.mark.parametrize(("value", "expected"), [
    (1796040330, at(2026, 11, 30, 12, 5, 30)),
    (1796040330.5, at(2026, 11, 30, 12, 5, 30).replace(microsecond=500000)),
    ("1796040330", at(2026, 11, 30, 12, 5, 30)),
    (1796040330000, at(2026, 11, 30, 12, 5, 30)),  # milliseconds
    ("soon", None), (None, None), (True, None), (0, None), (-5, None),
    (float("inf"), None), (float("nan"), None), (10 ** 20, None),
])
def test_from_epoch(value: Any, expected: datetime | None) -> None:
    assert from_epoch(value) == expected


@pytest.mark.parametrize(("name", "expected"), [
    ("UTC", UTC), (" Europe/Rome ", ZoneInfo("Europe/Rome")), ("Etc/GMT+5", ZoneInfo("Etc/GMT+5")),
    ("Mars/Olympus", None), ("../../etc/passwd", None), ("", None),
])
def test_zone_named(name: str, expected: tzinfo | None) -> None:
    assert zone_named(name) == expected


