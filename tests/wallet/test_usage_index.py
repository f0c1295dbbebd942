"""The transcript usage index: incremental refresh, damage, de-duplication, queries, sources."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, date, timedelta, timezone
from pathlib import Path

import orjson
import pytest

from relay.core.errors import StoreError
from relay.wallet import transcripts, usage_pool, usage_scan, usage_store
from relay.wallet.model import Tokens
from relay.wallet.transcripts import TranscriptSource
from relay.wallet.usage_index import UsageIndex, sources_for
from relay.wallet.usage_local import Registered
from relay.wallet.usage_store import SCHEMA_VERSION
from tests.wallet.conftest import claude_line, copy_tree, only, user_line

Captures = Callable[[str, str], Path]
#: 2026-11-30T10:00:00Z, near the recorded captures
NOW_MS = 1_796_032_800_000


@pytest.fixture
def index(tmp_path: Path) -> Iterator[UsageIndex]:
    idx = UsageIndex(tmp_path / "data" / "usage-index.sqlite", workers=1, clock=lambda: NOW_MS)
    yield idx
    idx.close()


def claude_source(root: Path, entry: str = "claude:work") -> TranscriptSource:
    return TranscriptSource(entry, "claude", root)


def keys(index: UsageIndex, entry: str | None = None) -> list[str | None]:
    return sorted((e.dedupe_key for _, _, e in index.entries(entry)), key=str)


def session_file(root: Path, name: str = "s1.jsonl") -> Path:
    path = root / "projects" / "-work-p" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# ---- the recorded formats together -----------------------------------------------------------

def test_every_runtime_is_indexed_under_its_account(index: UsageIndex, tmp_path: Path,
                                                    captures: Captures) -> None:
    claude = copy_tree(captures("claude", "b_write_tool") / "config", tmp_path / "claude")
    codex = copy_tree(captures("codex", "a5_rate_limit_headers_on_success"), tmp_path / "codex")
    gemini = copy_tree(captures("gemini", "b_tools_yolo") / "dot_gemini", tmp_path / "gemini")
    pi = copy_tree(captures("pi", "f_resume") / "dot_pi" / "agent", tmp_path / "pi")
    report = index.refresh([claude_source(claude), TranscriptSource("codex", "codex", codex),
                            TranscriptSource("gemini:me", "gemini", gemini),
                            TranscriptSource("pi", "pi", pi)])
    assert (report.files_seen, report.files_changed, report.entries_added) == (4, 4, 2 + 1 + 3 + 3)
    by_account = {(who, runtime) for who, runtime, _ in index.entries()}
    assert by_account == {("claude:work", "claude"), ("codex", "codex"), ("gemini:me", "gemini"),
                          ("pi", "pi")}
    (gem,) = {e.project for _, _, e in index.entries("gemini:me")}
    assert gem == "<CWD>"   # projects.json maps the chat's folder to the working directory
    limits = index.limit_snapshots("codex")
    assert (limits["five_hour"].used_percent, limits["seven_day"].used_percent) == (42.5, 12.0)
    assert limits["five_hour"].entry == "codex"
    assert index.limit_snapshots("claude:work") == {}


def test_subagent_transcripts_are_counted(index: UsageIndex, tmp_path: Path,
                                          captures: Captures) -> None:
    root = copy_tree(captures("claude", "w_subagent") / "config", tmp_path / "claude")
    assert index.refresh([claude_source(root)]).files_seen == 2   # the session and its agent
    assert sorted(e.tokens.output for _, _, e in index.entries()) == [16, 17, 32, 47]
    assert {e.session_id for _, _, e in index.entries()} == {"96482de8-710f-4157-9d4d-d330bd3b204e"}


def test_daily_totals_per_day_and_model(index: UsageIndex, tmp_path: Path,
                                        captures: Captures) -> None:
    claude = copy_tree(captures("claude", "b_write_tool") / "config", tmp_path / "claude")
    pi = copy_tree(captures("pi", "f_resume") / "dot_pi" / "agent", tmp_path / "pi")
    index.refresh([claude_source(claude), TranscriptSource("pi", "pi", pi)])
    days = index.daily_totals(tz=UTC)
    (day,) = days.values()
    assert day.day == date(2026, 11, 30)
    assert day.models == {"claude-opus-4-8": Tokens(input=1675 + 1806, output=56 + 18),
                          "mock-model": Tokens(input=900, output=75, cache_read=2400)}
    assert (day.input, day.output, day.cache_read, day.entries) == (4381, 149, 2400, 5)
    assert day.cost_usd == pytest.approx(3 * 0.000725)
    assert index.daily_totals(entry="pi", tz=UTC)[day.day].tokens == day.models["mock-model"]


def test_daily_totals_follow_the_local_date(index: UsageIndex, tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    path.write_bytes(claude_line("m1", "r1", "2026-11-30T18:35:00Z")
                     + claude_line("m2", "r2", "2026-11-30T23:30:00Z"))
    index.refresh([claude_source(tmp_path / "c")])
    assert list(index.daily_totals(tz=UTC)) == [date(2026, 11, 30)]
    plus_one = index.daily_totals(tz=timezone(timedelta(hours=1)))
    assert [(d, t.entries) for d, t in plus_one.items()] == [(date(2026, 11, 30), 1),
                                                             (date(2026, 12, 1), 1)]
    kolkata = index.daily_totals(tz=timezone(timedelta(hours=5, minutes=30)))
    assert [t.entries for t in kolkata.values()] == [2]   # 00:05 and 05:00 on 1 December
    assert list(kolkata) == [date(2026, 12, 1)]


# ---- incremental refresh ---------------------------------------------------------------------

def test_refresh_reads_only_appended_bytes(index: UsageIndex, tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    first = claude_line("m1", "r1", "2026-11-30T10:00:00Z") + user_line()
    path.write_bytes(first)
    assert index.refresh([claude_source(tmp_path / "c")]).bytes_read == len(first)
    unchanged = index.refresh([claude_source(tmp_path / "c")])
    assert (unchanged.files_changed, unchanged.bytes_read) == (0, 0)
    more = user_line("x" * 5000) + claude_line("m2", "r2", "2026-11-30T10:05:00Z")
    with path.open("ab") as handle:
        handle.write(more)
    report = index.refresh([claude_source(tmp_path / "c")])
    assert (report.files_changed, report.bytes_read) == (1, len(more))
    assert (report.entries_added, report.entries_removed) == (1, 0)
    assert keys(index) == ["claude:m1:r1", "claude:m2:r2"]
    (second,) = [e for _, _, e in index.entries() if e.dedupe_key == "claude:m2:r2"]
    assert second.offset == len(first) + len(more) - len(claude_line("m2", "r2",
                                                                      "2026-11-30T10:05:00Z"))


def test_a_partial_last_line_is_read_when_complete(index: UsageIndex, tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    done = claude_line("m1", "r1", "2026-11-30T10:00:00Z")
    writing = claude_line("m2", "r2", "2026-11-30T10:01:00Z")
    path.write_bytes(done + writing[:40])
    first = index.refresh([claude_source(tmp_path / "c")])
    assert keys(index) == ["claude:m1:r1"]
    assert first.warnings == {}   # still being written: not damage
    with path.open("ab") as handle:
        handle.write(writing[40:])
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.bytes_read == len(writing)   # from the start of the unfinished line
    assert keys(index) == ["claude:m1:r1", "claude:m2:r2"]


def test_a_last_line_left_unfinished_for_good_is_counted(index: UsageIndex,
                                                          tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    path.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z") + b'{"type":"assis')
    an_hour_ago = (NOW_MS - 3600 * 1000) / 1000
    os.utime(path, (an_hour_ago, an_hour_ago))
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.warnings == {"truncated_line": 1}
    assert keys(index) == ["claude:m1:r1"]
    assert index.refresh([claude_source(tmp_path / "c")]).warnings == {}  # not counted again
    assert index.warnings("claude:work") == {"claude:work": {"truncated_line": 1}}


def test_a_copy_of_the_same_reply_in_a_later_append_is_merged(index: UsageIndex,
                                                               tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    path.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z", output=1))
    index.refresh([claude_source(tmp_path / "c")])
    with path.open("ab") as handle:
        handle.write(claude_line("m1", "r1", "2026-11-30T10:00:01Z", output=90))
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.entries_added == 0
    assert [e.tokens.output for _, _, e in index.entries()] == [90]


def test_a_truncated_file_is_read_again(index: UsageIndex, tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    path.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z")
                     + claude_line("m2", "r2", "2026-11-30T10:01:00Z"))
    index.refresh([claude_source(tmp_path / "c")])
    with path.open("r+b") as handle:   # same inode, shorter
        handle.truncate(0)
        handle.write(claude_line("m3", "r3", "2026-11-30T10:02:00Z"))
    report = index.refresh([claude_source(tmp_path / "c")])
    assert (report.entries_added, report.entries_removed) == (1, 2)
    assert keys(index) == ["claude:m3:r3"]


def test_a_rewritten_head_is_read_again(index: UsageIndex, tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    old = claude_line("m1", "r1", "2026-11-30T10:00:00Z")
    path.write_bytes(old)
    index.refresh([claude_source(tmp_path / "c")])
    new = claude_line("mX", "rX", "2026-11-30T10:00:00Z")
    assert len(new) == len(old)
    with path.open("r+b") as handle:   # same inode, same size so far, other bytes
        handle.write(new + claude_line("m2", "r2", "2026-11-30T10:01:00Z"))
    index.refresh([claude_source(tmp_path / "c")])
    assert keys(index) == ["claude:m2:r2", "claude:mX:rX"]


def test_a_replaced_file_is_read_again(index: UsageIndex, tmp_path: Path) -> None:
    path = session_file(tmp_path / "c")
    path.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    index.refresh([claude_source(tmp_path / "c")])
    rotated = path.with_suffix(".tmp")
    rotated.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z")
                        + claude_line("m2", "r2", "2026-11-30T10:01:00Z"))
    os.replace(rotated, path)   # another inode under the same name
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.bytes_read == path.stat().st_size
    assert (report.entries_added, report.entries_removed) == (2, 1)   # re-read whole
    assert keys(index) == ["claude:m1:r1", "claude:m2:r2"]


def test_a_deleted_file_takes_its_entries(index: UsageIndex, tmp_path: Path) -> None:
    a, b = session_file(tmp_path / "c", "a.jsonl"), session_file(tmp_path / "c", "b.jsonl")
    a.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    b.write_bytes(claude_line("m2", "r2", "2026-11-30T10:00:00Z"))
    index.refresh([claude_source(tmp_path / "c")])
    a.unlink()
    report = index.refresh([claude_source(tmp_path / "c")])
    assert (report.files_removed, report.entries_removed) == (1, 1)
    assert keys(index) == ["claude:m2:r2"]


def test_a_source_no_longer_given_is_forgotten(index: UsageIndex, tmp_path: Path) -> None:
    session_file(tmp_path / "c").write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    index.refresh([claude_source(tmp_path / "c")])
    assert index.refresh([]).files_removed == 1
    assert keys(index) == []


# ---- de-duplication across files -------------------------------------------------------------

def test_a_fork_counts_the_copied_history_once(index: UsageIndex, tmp_path: Path,
                                               captures: Captures) -> None:
    root = copy_tree(captures("claude", "g_resume") / "config", tmp_path / "c")
    report = index.refresh([claude_source(root)])
    assert report.entries_added == 5   # 4 + 4 replies, 3 of them copied by the fork
    original = root / "projects" / "CWD_ENCODED" / "22222222-2222-4222-8222-222222222222.jsonl"
    original.unlink()
    after = index.refresh([claude_source(root)])
    assert (after.entries_removed, len(keys(index))) == (1, 4)   # the fork's copies take over
    fork = only("projects/CWD_ENCODED/b4686fc4-*.jsonl", root)
    assert {e.session_id for _, _, e in index.entries()} == {fork.stem}


def test_dedupe_keys_are_unique_across_two_files(index: UsageIndex, tmp_path: Path) -> None:
    line = claude_line("m1", "r1", "2026-11-30T10:00:00Z")
    session_file(tmp_path / "c", "a.jsonl").write_bytes(line)
    session_file(tmp_path / "c", "b.jsonl").write_bytes(line + claude_line("m2", "r2",
                                                                           "2026-11-30T10:01:00Z"))
    assert index.refresh([claude_source(tmp_path / "c")]).entries_added == 2
    assert keys(index) == ["claude:m1:r1", "claude:m2:r2"]
    assert sum(d.entries for d in index.daily_totals(tz=UTC).values()) == 2


# ---- damage ----------------------------------------------------------------------------------

def test_corrupt_and_huge_lines_are_counted(index: UsageIndex, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 4000)
    good = claude_line("m1", "r1", "2026-11-30T10:00:00Z")
    torn = claude_line("m0", "r0", "2026-11-30T10:00:00Z")[:-40] + b"\n"   # a write cut short
    huge = claude_line("m2", "r2", "2026-11-30T10:00:00Z", pad="y" * 9000)
    not_utf8 = claude_line("m3", "r3", "2026-11-30T10:00:00Z").replace(b'"hi"', b'"\xff"')
    session_file(tmp_path / "c").write_bytes(torn + huge + not_utf8 + user_line() + good)
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.warnings == {"corrupt_line": 1, "line_too_long": 1, "not_utf8": 1}
    assert index.warnings() == {"claude:work": report.warnings}
    assert keys(index) == ["claude:m1:r1"]


def test_files_are_read_in_bounded_pieces(index: UsageIndex, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # pieces smaller than a line: every line is "longer than a piece"
    monkeypatch.setattr(usage_scan, "CHUNK_BYTES", 64)
    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 3000)
    path = session_file(tmp_path / "c")
    writing = claude_line("m4", "r4", "2026-11-30T10:03:00Z")
    path.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z") + user_line()
                     + claude_line("m2", "r2", "2026-11-30T10:01:00Z", pad="z" * 5000)
                     + claude_line("m3", "r3", "2026-11-30T10:02:00Z") + writing[:100])
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.warnings == {"line_too_long": 1}
    assert keys(index) == ["claude:m1:r1", "claude:m3:r3"]
    with path.open("ab") as handle:
        handle.write(writing[100:])
    index.refresh([claude_source(tmp_path / "c")])
    assert keys(index) == ["claude:m1:r1", "claude:m3:r3", "claude:m4:r4"]


def test_entries_from_the_future_are_kept_and_counted(index: UsageIndex, tmp_path: Path) -> None:
    session_file(tmp_path / "c").write_bytes(
        claude_line("m1", "r1", "2026-11-30T10:00:00Z")
        + claude_line("m2", "r2", "2026-12-05T10:00:00Z"))   # clock ahead by days
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.warnings == {"future_timestamp": 1}
    assert len(keys(index)) == 2


def test_an_unreadable_file_is_counted_and_the_scan_goes_on(index: UsageIndex,
                                                            tmp_path: Path) -> None:
    good = session_file(tmp_path / "c", "good.jsonl")
    good.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    bad = session_file(tmp_path / "c", "bad.jsonl")
    if os.geteuid() == 0:
        bad.mkdir()   # root reads through chmod 000: a folder where a transcript should be
    else:
        bad.write_bytes(claude_line("m2", "r2", "2026-11-30T10:00:00Z"))
        bad.chmod(0)
    try:
        report = index.refresh([claude_source(tmp_path / "c")])
    finally:
        if bad.is_file():
            bad.chmod(0o600)
    assert report.warnings == {"unreadable": 1}
    assert index.warnings("claude:work") == {"claude:work": {"unreadable": 1}}
    assert keys(index) == ["claude:m1:r1"]


def test_a_file_name_that_is_not_utf8_is_counted(index: UsageIndex, tmp_path: Path) -> None:
    good = session_file(tmp_path / "c")
    good.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    odd = os.path.join(os.fsencode(good.parent), b"caf\xe9.jsonl")   # Latin-1, not UTF-8
    with open(odd, "wb") as handle:
        handle.write(claude_line("m2", "r2", "2026-11-30T10:00:00Z"))
    report = index.refresh([claude_source(tmp_path / "c")])
    assert report.warnings == {"unreadable": 1}
    assert keys(index) == ["claude:m1:r1"]


def test_files_under_an_unlistable_folder_are_kept(index: UsageIndex, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = session_file(tmp_path / "c")
    path.write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    index.refresh([claude_source(tmp_path / "c")])
    path.parent.chmod(0)
    if os.geteuid() == 0:  # root lists any folder whatever its mode: refuse as the OS would
        listing = os.scandir

        def scandir(folder: str) -> os._ScandirIterator[str]:
            if folder == str(path.parent):
                raise PermissionError(13, "Permission denied", folder)
            return listing(folder)

        monkeypatch.setattr(os, "scandir", scandir)
    try:
        report = index.refresh([claude_source(tmp_path / "c")])
    finally:
        path.parent.chmod(0o700)
    assert (report.warnings, report.files_removed) == ({"unreadable_dir": 1}, 0)
    assert keys(index) == ["claude:m1:r1"]


# ---- Gemini documents rewritten in place -----------------------------------------------------

def test_a_rewritten_gemini_document_replaces_its_entries(index: UsageIndex, tmp_path: Path,
                                                          captures: Captures) -> None:
    chat = only("dot_gemini/tmp/repo/chats/*.jsonl", captures("gemini", "b_tools_yolo"))
    records = [orjson.loads(line) for line in chat.read_bytes().splitlines()]
    gemini_records = list({r["id"]: r for r in records if r.get("type") == "gemini"}.values())
    path = tmp_path / "g" / "tmp" / "abc123" / "chats" / "session-1.json"
    path.parent.mkdir(parents=True)
    source = TranscriptSource("gemini", "gemini", tmp_path / "g")
    path.write_bytes(orjson.dumps({"sessionId": "s", "messages": gemini_records[:2]}))
    assert index.refresh([source]).entries_added == 2
    path.write_bytes(orjson.dumps({"sessionId": "s", "messages": gemini_records}))
    report = index.refresh([source])   # the whole document again, its entries replaced
    assert (report.entries_added, report.entries_removed, report.bytes_read) == (
        3, 2, path.stat().st_size)
    assert len(keys(index)) == 3
    assert {e.project for _, _, e in index.entries()} == {"abc123"}


# ---- queries, persistence, the pool ----------------------------------------------------------

def test_entries_filter_by_account_and_time(index: UsageIndex, tmp_path: Path) -> None:
    session_file(tmp_path / "a").write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z")
                                             + claude_line("m2", "r2", "2026-11-30T12:00:00Z"))
    session_file(tmp_path / "b").write_bytes(claude_line("m3", "r3", "2026-11-30T11:00:00Z"))
    index.refresh([claude_source(tmp_path / "a", "claude:a"),
                   claude_source(tmp_path / "b", "claude:b")])
    eleven = transcripts.iso_ms("2026-11-30T11:00:00Z")
    assert keys(index, "claude:a") == ["claude:m1:r1", "claude:m2:r2"]
    assert [e.dedupe_key for _, _, e in index.entries(since_ms=eleven)] == ["claude:m3:r3",
                                                                            "claude:m2:r2"]
    assert [e.dedupe_key for _, _, e in index.entries(until_ms=eleven)] == ["claude:m1:r1"]
    assert [p[0] for p in index.points("claude:b")] == [eleven]


def test_the_index_persists_and_a_stale_schema_is_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "usage-index.sqlite"
    session_file(tmp_path / "c").write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    first = UsageIndex(db, workers=1)
    first.refresh([claude_source(tmp_path / "c")])
    first.close()
    again = UsageIndex(db, workers=1)
    assert keys(again) == ["claude:m1:r1"]
    assert again.refresh([claude_source(tmp_path / "c")]).bytes_read == 0
    again._store.conn.execute("UPDATE meta SET value=? WHERE key='schema'",
                              (str(SCHEMA_VERSION + 1),))
    again.close()
    rebuilt = UsageIndex(db, workers=1)
    assert keys(rebuilt) == []
    assert rebuilt.refresh([claude_source(tmp_path / "c")]).entries_added == 1
    rebuilt.close()


def test_a_damaged_index_file_is_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "usage-index.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    session_file(tmp_path / "c").write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    idx = UsageIndex(db, workers=1)
    assert idx.refresh([claude_source(tmp_path / "c")]).entries_added == 1
    idx.close()


def test_an_index_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot be opened"):
        UsageIndex(tmp_path / "file" / "usage-index.sqlite")


def test_a_refresh_waits_for_another_and_then_gives_up_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage_store, "BUSY_TIMEOUT_MS", 50)
    db = tmp_path / "usage-index.sqlite"
    session_file(tmp_path / "c").write_bytes(claude_line("m1", "r1", "2026-11-30T10:00:00Z"))
    first, second = UsageIndex(db, workers=1), UsageIndex(db, workers=1)
    try:
        first._store.begin()   # another process in the middle of its refresh
        with pytest.raises(StoreError, match="cannot be used"):
            second.refresh([claude_source(tmp_path / "c")])
        first._store.rollback()
        assert second.refresh([claude_source(tmp_path / "c")]).entries_added == 1
        assert keys(first) == ["claude:m1:r1"]
    finally:
        first.close()
        second.close()


def test_worker_processes_give_the_same_result(tmp_path: Path, captures: Captures,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage_pool, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(usage_pool, "BATCH_BYTES", 1)
    root = copy_tree(captures("claude", "g_resume") / "config", tmp_path / "c")
    copy_tree(captures("claude", "b_write_tool") / "config", root)
    results = []
    for workers in (1, 2):
        if workers == 2:
            # worker processes import the real module: only a fall-back here would read
            monkeypatch.setattr(usage_pool, "run_job", _must_not_run)
        idx = UsageIndex(tmp_path / f"idx{workers}.sqlite", workers=workers)
        report = idx.refresh([claude_source(root)])
        # which file owns a key copied by the fork depends on which was read first
        results.append((report.entries_added, sorted(
            (str(e.dedupe_key), e.tokens) for _, _, e in idx.entries())))
        idx.close()
    assert results[0] == results[1]
    assert results[0][0] == 7


def test_batches_of_workers_that_die_are_read_here(tmp_path: Path, captures: Captures,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage_pool, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(usage_pool, "BATCH_BYTES", 1)
    monkeypatch.setattr(usage_pool, "_command", lambda: [sys.executable, "-c", "pass"])
    root = copy_tree(captures("claude", "g_resume") / "config", tmp_path / "c")
    idx = UsageIndex(tmp_path / "idx.sqlite", workers=2)
    assert idx.refresh([claude_source(root)]).entries_added == 5
    idx.close()


def _must_not_run(job: usage_scan.ScanJob) -> usage_scan.ScanResult:
    raise AssertionError(f"{job.path} was read in the test process, not by a worker")


def test_progress_counts_files(index: UsageIndex, tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        session_file(tmp_path / "c", name).write_bytes(claude_line(name, "r", "2026-11-30T10:00:00Z"))
    seen: list[tuple[int, int]] = []
    index.refresh([claude_source(tmp_path / "c")], progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


# ---- sources ---------------------------------------------------------------------------------


def test_sources_are_accounts_then_unclaimed_default_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for folder in (".claude", ".codex", ".gemini", ".pi/agent"):
        (home / folder).mkdir(parents=True)
    work = tmp_path / "work-claude"
    work.mkdir()
    accounts = [Registered("claude", "work", work), Registered("codex", "me", home / ".codex"),
                Registered("claude", "nofolder", None)]
    sources = sources_for(accounts, {"HOME": str(home)})
    assert [(s.entry, s.runtime, s.root) for s in sources] == [
        ("claude:work", "claude", work), ("codex:me", "codex", home / ".codex"),
        ("claude", "claude", home / ".claude"), ("gemini", "gemini", home / ".gemini"),
        ("pi", "pi", home / ".pi" / "agent")]


def test_default_folders_follow_the_environment(tmp_path: Path) -> None:
    a, b, codex = tmp_path / "a", tmp_path / "b", tmp_path / "cx"
    for folder in (a, b, codex):
        folder.mkdir()
    env = {"HOME": str(tmp_path / "nohome"), "CLAUDE_CONFIG_DIR": str(a),
           "CODEX_HOME": str(codex)}
    assert [(s.entry, s.root) for s in sources_for([], env)] == [("claude", a), ("codex", codex)]
    # one folder, as Claude Code reads it: not a comma-separated list (relay.core.agent_homes)
    listed = {**env, "CLAUDE_CONFIG_DIR": f"{a},{b}"}
    assert [(s.entry, s.root) for s in sources_for([], listed)] == [("codex", codex)]
