"""The usage aggregate: kept in the refresh's transaction, always equal to summing every call
again, and the reports made of it equal to the reports made of the calls."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from relay.wallet import usage_agg
from relay.wallet.blocks import five_hour_blocks
from relay.wallet.model import Tokens
from relay.wallet.pricing import Pricing
from relay.wallet.transcripts import TranscriptSource
from relay.wallet.usage_index import UsageIndex
from relay.wallet.usage_report import build_report
from tests.wallet.conftest import claude_line, user_line

NOW_MS = 1_796_032_800_000  # 2026-11-30T10:00:00Z


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "usage-index.sqlite"


@pytest.fixture
def index(db: Path) -> Iterator[UsageIndex]:
    idx = UsageIndex(db, workers=1, clock=lambda: NOW_MS)
    yield idx
    idx.close()


def kept_and_summed(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The aggregate as kept, and as summed from every counted call now."""
    conn = sqlite3.connect(db)
    try:
        kept = conn.execute("SELECT * FROM usage_agg").fetchall()
        summed = conn.execute(usage_agg.FULL).fetchall()
    finally:
        conn.close()
    return sorted(kept, key=repr), sorted(summed, key=repr)


def source(root: Path, entry: str = "claude:work") -> TranscriptSource:
    return TranscriptSource(entry, "claude", root)


def write(path: Path, *lines: bytes, mode: str = "ab") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode) as handle:
        handle.write(b"".join(lines))


def test_the_aggregate_equals_a_full_sum_after_every_kind_of_change(index: UsageIndex,
                                                                    db: Path, tmp_path: Path) -> None:
    root, other = tmp_path / "c", tmp_path / "d"
    a, b = root / "projects" / "-p" / "a.jsonl", other / "projects" / "-q" / "b.jsonl"
    shared = claude_line("m1", "r1", "2026-11-30T09:59:00Z", output=5, session="a")
    write(a, shared, user_line(), claude_line("m2", "r2", "2026-11-30T10:00:00.000Z", session="a"))
    # b, another account's, forks a: the same call copied (counted once), then its own
    write(b, shared, claude_line("m3", "r3", "2026-11-29T23:59:59Z", session="b", model="x"))
    sources = [source(root), source(other, "claude:two")]

    def check(step: str) -> None:
        index.refresh(sources)
        kept, summed = kept_and_summed(db)
        assert kept == summed, step

    check("cold")
    # a's 09:45 quarter (the shared call, once), a's call exactly at 10:00 (a slot of its
    # own), b's call of the day before
    assert [row[5] for row in kept_and_summed(db)[0]] == [1, 1, 1]
    write(a, claude_line("m4", "r4", "2026-11-30T10:07:00Z", session="a"),
          claude_line("m2", "r2", "2026-11-30T10:00:00.000Z", session="a", output=99))
    check("appended: a new call, and a bigger copy of one counted")
    write(a, claude_line("m5", "r5", "2026-11-30T10:08:00Z", session="a")[:-30])
    check("a last line still being written")
    write(a, claude_line("m5", "r5", "2026-11-30T10:08:00Z", session="a")[-30:])
    check("the line finished")
    a.unlink()
    check("the file holding the counted copy deleted: b's copy, another account's, counts")
    assert ("claude:two", 5) in {(row[0], row[7]) for row in kept_and_summed(db)[0]}
    write(b, claude_line("m6", "r6", "2026-12-01T00:00:00Z", session="b"), mode="wb")
    check("b rewritten (truncated, other lines)")
    sources = [source(root), source(other, "claude:renamed")]
    check("b's folder now another account's")
    assert {row[0] for row in kept_and_summed(db)[0]} == {"claude:renamed"}
    index.refresh([])
    assert kept_and_summed(db) == ([], [])


def test_a_busy_index_keeps_it_exact_too(index: UsageIndex, db: Path, tmp_path: Path) -> None:
    """Many calls over many quarters and files, appended in rounds (incremental, not cold)."""
    root = tmp_path / "c"
    for rnd in range(4):
        for f in range(5):
            lines = [claude_line(f"m{rnd}-{f}-{i}", f"r{rnd}-{f}-{i}",
                                 f"2026-11-{10 + rnd:02d}T{(f * 5 + i) % 24:02d}:{i * 7 % 60:02d}:00Z",
                                 output=i + 1, session=f"s{f}", model=("a", "b")[i % 2])
                     for i in range(12)]
            write(root / "projects" / f"-p{f % 2}" / f"s{f}.jsonl", *lines)
        index.refresh([source(root)])
        kept, summed = kept_and_summed(db)
        assert kept == summed, rnd
    assert sum(r[5] for r in kept) == 4 * 5 * 12


def test_a_cold_refresh_sums_once_and_a_later_one_only_what_it_touched(
        index: UsageIndex, db: Path, tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "projects" / "-p" / "a.jsonl", claude_line("m1", "r1", "2026-11-01T10:00:00Z"))
    write(root / "projects" / "-p" / "b.jsonl", claude_line("m2", "r2", "2026-11-20T10:00:00Z"))
    index.refresh([source(root)])
    conn = sqlite3.connect(db)
    with conn:  # what is summed again shows as a row deleted
        conn.execute("CREATE TABLE redone (slot INTEGER)")
        conn.execute("CREATE TRIGGER redo AFTER DELETE ON usage_agg BEGIN"
                     " INSERT INTO redone VALUES (old.slot); END")
    write(root / "projects" / "-p" / "b.jsonl", claude_line("m3", "r3", "2026-11-20T10:01:00Z"))
    index.refresh([source(root)])
    redone = conn.execute("SELECT slot FROM redone").fetchall()
    calls = conn.execute("SELECT slot, calls FROM usage_agg ORDER BY slot").fetchall()
    conn.close()
    touched = usage_agg.slot_of(1_795_168_800_000 + 60_000)  # 2026-11-20T10:01Z
    assert redone == [(touched - 1,)]  # the quarter's row (the call exactly at 10:00) only
    assert [n for _, n in calls] == [1, 1, 1]


def report_of(index: UsageIndex, by: str, since_ms: int | None = None) -> list[dict[str, object]]:
    table = build_report(Pricing.from_tables({}), index.aggregate(None, since_ms), by, NOW_MS)
    return table.records


def test_blocks_from_the_aggregate_are_the_blocks_of_the_calls(index: UsageIndex,
                                                                tmp_path: Path) -> None:
    """Calls exactly on a block's end belong to it; a millisecond later starts the next."""
    root = tmp_path / "c"
    times = ["2026-11-30T01:10:00Z", "2026-11-30T06:00:00.000Z", "2026-11-30T06:00:00.001Z",
             "2026-11-30T06:14:59.999Z", "2026-11-30T11:15:00.000Z", "2026-11-30T11:15:00.000Z",
             "2026-11-30T16:15:00.001Z", "2026-11-30T16:16:00Z"]
    write(root / "projects" / "-p" / "a.jsonl",
          *(claude_line(f"m{i}", f"r{i}", ts, output=10 ** i % 997 + i) for i, ts in enumerate(times)))
    index.refresh([source(root)])
    want = [sum((p[1] for p in pts), Tokens()).total
            for pts in ([p for p in index.points() if b.first_ms <= p[0] <= b.last_ms]
                        for b in five_hour_blocks(index.points(), NOW_MS))]
    got = [r["tokens"]["total"] for r in report_of(index, "block")]  # type: ignore[index]
    assert len(want) == 4
    assert got == want


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC for the test (the reports' days are local dates)."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_days_and_sessions_from_the_aggregate_are_those_of_the_calls(
        index: UsageIndex, tmp_path: Path, utc: None) -> None:
    root = tmp_path / "c"
    write(root / "projects" / "-p" / "a.jsonl",
          claude_line("m1", "r1", "2026-11-28T23:59:59.999Z", session="a", output=1),
          claude_line("m2", "r2", "2026-11-29T00:00:00.000Z", session="a", output=20, cwd="/w/x"))
    write(root / "projects" / "-q" / "b.jsonl",
          claude_line("m3", "r3", "2026-11-29T12:00:00Z", session="b", output=300))
    index.refresh([source(root)])
    days = {r["day"]: r["tokens"]["output"] for r in report_of(index, "day")}  # type: ignore[index]
    want = {d.isoformat(): t.output for d, t in index.daily_totals(tz=UTC).items()}
    assert days == want == {"2026-11-28": 1, "2026-11-29": 320}
    since = report_of(index, "day", 1_795_910_400_000)  # 2026-11-29T00:00Z
    assert [r["day"] for r in since] == ["2026-11-29"]
    sessions = report_of(index, "session")
    assert [(r["session"], r["tokens"]["output"]) for r in sessions] == [  # type: ignore[index]
        ("claude:work a", 21), ("claude:work b", 300)]
    assert str(sessions[0]["cost_detail"]).startswith("2 calls not priced")
