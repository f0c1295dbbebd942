"""The hash-chained audit log: format, tamper detection, concurrency, scrubbing."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from relay.core import audit
from relay.core.audit import GENESIS_HASH, AuditEntry, AuditLog, BreakKind, iter_entries, verify
from relay.core.config import load_config
from relay.core.errors import AuditDamagedError, AuditError, RelayError

T0 = datetime(2026, 6, 3, 15, 41, 3, 123456, tzinfo=UTC)


def stepping_clock(start: datetime = T0) -> Callable[[], datetime]:
    """A clock that moves on by one millisecond per call."""
    ticks = iter(range(10**9))

    def now() -> datetime:
        return start + timedelta(milliseconds=next(ticks))

    return now


def write_log(path: Path, count: int = 5) -> list[AuditEntry]:
    log = AuditLog(path, clock=stepping_clock())
    return [log.append(f"event_{i}", {"i": i, "who": "claude:work", "nested": {"b": 1, "a": [i]}})
            for i in range(count)]


def read_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def rewrite_line(path: Path, number: int, change: Callable[[dict[str, Any]], None]) -> None:
    """Parse line ``number`` (1-based), apply ``change``, write it back in the file's own format."""
    lines = read_lines(path)
    obj = json.loads(lines[number - 1])
    change(obj)
    lines[number - 1] = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    write_lines(path, lines)


def flip_hex(value: str) -> str:
    return ("1" if value[10] == "0" else "0").join((value[:10], value[11:]))


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "audit.jsonl"


# --- round trip and format ------------------------------------------------------------------


def test_append_then_verify_round_trip(log_path: Path) -> None:
    written = write_log(log_path, 5)
    report = verify(log_path)
    assert report.ok
    assert (report.entries, report.lines, report.broken_line, report.kind) == (5, 5, None, None)
    assert report.last_hash == written[-1].hash
    assert list(iter_entries(log_path)) == written
    assert written[0].prev_hash == GENESIS_HASH
    assert [e.prev_hash for e in written[1:]] == [e.hash for e in written[:-1]]
    assert written[0].ts == "2026-06-03T15:41:03.123Z"
    assert all(line.endswith(b"\n") for line in read_lines(log_path))


def test_each_line_has_the_seed_fields_in_order(log_path: Path) -> None:
    write_log(log_path, 1)
    obj = json.loads(read_lines(log_path)[0])
    assert list(obj) == ["ts", "prevHash", "hash", "event", "data"]


def test_golden_hash_is_computed_independently(log_path: Path) -> None:
    data = {"zeta": "ünïcode ✓", "alpha": {"y": [1, 2.5, None, True], "x": "line\nbreak"}}
    entry = AuditLog(log_path, clock=lambda: T0).append("handoff_paused", data)

    body = json.dumps({"ts": "2026-06-03T15:41:03.123Z", "event": "handoff_paused", "data": data},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert body == ('{"data":{"alpha":{"x":"line\\nbreak","y":[1,2.5,null,true]},"zeta":"ünïcode ✓"},'
                    '"event":"handoff_paused","ts":"2026-06-03T15:41:03.123Z"}')
    expected = hashlib.sha256(("0" * 64 + body).encode("utf-8")).hexdigest()
    assert entry.hash == expected
    # also: printf '%s%s' "$(printf '0%.0s' $(seq 64))" "$body" | sha256sum
    assert expected == "e0c67e85e84688509307df2009f61196d4d9b387b42e01c1e74ccdf785a50ae3"
    assert json.loads(read_lines(log_path)[0])["hash"] == expected


def test_special_characters_stay_on_one_line(log_path: Path) -> None:
    log = AuditLog(log_path)
    log.append("note", {"text": "a\nb\r\u2028c\u0085d\x1c", "emoji": "🔐"})
    log.append("note", {"text": "after"})
    assert len(read_lines(log_path)) == 2
    assert verify(log_path).ok


def test_data_is_normalised_to_what_a_reader_parses(log_path: Path) -> None:
    entry = AuditLog(log_path).append("e", {"pair": (1, 2), "f": 0.1})
    assert entry.data == {"pair": [1, 2], "f": 0.1}
    assert verify(log_path).ok


@pytest.mark.parametrize("data", [{1: "int key"}, {"x": float("nan")}, {"x": object()}])
def test_non_json_data_is_refused_and_nothing_is_written(log_path: Path, data: dict[Any, Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        AuditLog(log_path).append("e", data)
    assert not log_path.exists()


def test_event_name_is_required(log_path: Path) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        AuditLog(log_path).append("", {})


def test_missing_or_empty_log_verifies_with_no_entries(log_path: Path) -> None:
    report = verify(log_path)
    assert report.ok
    assert (report.entries, report.last_hash) == (0, GENESIS_HASH)
    assert list(iter_entries(log_path)) == []
    log_path.parent.mkdir(parents=True)
    log_path.write_bytes(b"")
    assert verify(log_path).ok
    assert verify(log_path).entries == 0


def test_config_puts_the_log_in_the_data_folder(relay_home: Path) -> None:
    assert load_config().audit_path == relay_home / "audit.jsonl"


# --- tampering ------------------------------------------------------------------------------

TAMPERS: dict[str, tuple[Callable[[dict[str, Any]], None], BreakKind]] = {
    "event": (lambda o: o.update(event="something_else"), BreakKind.HASH_MISMATCH),
    "data value": (lambda o: o["data"].update(who="codex"), BreakKind.HASH_MISMATCH),
    "nested data value": (lambda o: o["data"]["nested"].update(b=2), BreakKind.HASH_MISMATCH),
    "ts": (lambda o: o.update(ts="2026-06-03T15:41:04.125Z"), BreakKind.HASH_MISMATCH),
    "hash": (lambda o: o.update(hash=flip_hex(o["hash"])), BreakKind.HASH_MISMATCH),
    "prevHash": (lambda o: o.update(prevHash=flip_hex(o["prevHash"])), BreakKind.PREV_HASH_MISMATCH),
    "extra field": (lambda o: o.update(note="hi"), BreakKind.MALFORMED),
    "missing field": (lambda o: o.pop("ts"), BreakKind.MALFORMED),
    "mistyped data": (lambda o: o.update(data=[1]), BreakKind.MALFORMED),
    "upper-case hash": (lambda o: o.update(hash=o["hash"].upper()), BreakKind.MALFORMED),
}


@pytest.mark.parametrize("field", list(TAMPERS))
def test_tampering_a_middle_line_is_found_at_that_line(log_path: Path, field: str) -> None:
    written = write_log(log_path, 5)
    change, kind = TAMPERS[field]
    rewrite_line(log_path, 3, change)
    report = verify(log_path)
    assert not report.ok
    assert (report.broken_line, report.kind, report.entries, report.lines) == (3, kind, 2, 5)
    assert report.last_hash == written[1].hash


@pytest.mark.parametrize("reformat", [
    pytest.param(lambda line: line[:-1] + b"\r\n", id="crlf"),
    pytest.param(lambda line: json.dumps(json.loads(line)).encode() + b"\n", id="spaces"),
    pytest.param(lambda line: json.dumps(dict(reversed(json.loads(line).items())),
                                         ensure_ascii=False, separators=(",", ":")).encode() + b"\n",
                 id="field-order"),
])
def test_a_line_not_byte_for_byte_as_written_is_a_rewrite(
        log_path: Path, reformat: Callable[[bytes], bytes]) -> None:
    write_log(log_path, 3)
    lines = read_lines(log_path)
    lines[1] = reformat(lines[1])  # the hash still holds: same fields, same values
    write_lines(log_path, lines)
    report = verify(log_path)
    assert (report.broken_line, report.kind, report.entries) == (2, BreakKind.NOT_AS_WRITTEN, 1)


def test_a_log_converted_to_crlf_is_caught_at_its_first_line(log_path: Path) -> None:
    write_log(log_path, 3)
    log_path.write_bytes(log_path.read_bytes().replace(b"\n", b"\r\n"))
    report = verify(log_path)
    assert (report.broken_line, report.kind) == (1, BreakKind.NOT_AS_WRITTEN)


def test_an_edit_with_a_recomputed_hash_is_found_at_the_next_line(log_path: Path) -> None:
    write_log(log_path, 5)

    def forge(obj: dict[str, Any]) -> None:
        obj["data"]["who"] = "codex"
        obj["hash"] = audit.entry_hash(obj["prevHash"], obj["ts"], obj["event"], obj["data"])

    rewrite_line(log_path, 3, forge)
    report = verify(log_path)
    assert (report.broken_line, report.kind) == (4, BreakKind.PREV_HASH_MISMATCH)


def test_deleting_a_middle_line(log_path: Path) -> None:
    write_log(log_path, 5)
    lines = read_lines(log_path)
    write_lines(log_path, lines[:2] + lines[3:])
    report = verify(log_path)
    assert (report.broken_line, report.kind, report.entries) == (3, BreakKind.PREV_HASH_MISMATCH, 2)
    assert "deleted" in (report.detail or "")


def test_deleting_the_first_line(log_path: Path) -> None:
    write_log(log_path, 3)
    write_lines(log_path, read_lines(log_path)[1:])
    report = verify(log_path)
    assert (report.broken_line, report.kind) == (1, BreakKind.PREV_HASH_MISMATCH)
    assert "64 zeros" in (report.detail or "")


def test_swapping_two_lines(log_path: Path) -> None:
    write_log(log_path, 5)
    lines = read_lines(log_path)
    lines[1], lines[2] = lines[2], lines[1]
    write_lines(log_path, lines)
    report = verify(log_path)
    assert (report.broken_line, report.kind) == (2, BreakKind.PREV_HASH_MISMATCH)


def test_truncating_the_last_line_mid_json(log_path: Path) -> None:
    write_log(log_path, 5)
    data = log_path.read_bytes()
    log_path.write_bytes(data[:-40])
    report = verify(log_path)
    assert (report.broken_line, report.kind, report.entries, report.lines) == (5, BreakKind.TRUNCATED, 4, 5)


def test_a_complete_last_line_without_its_newline_is_incomplete(log_path: Path) -> None:
    write_log(log_path, 2)
    log_path.write_bytes(log_path.read_bytes()[:-1])
    report = verify(log_path)
    assert (report.broken_line, report.kind) == (2, BreakKind.TRUNCATED)


@pytest.mark.parametrize(("garbage", "kind"), [
    (b"garbage\n", BreakKind.BAD_JSON),
    (b"garbage", BreakKind.TRUNCATED),
    (b"\n", BreakKind.BAD_JSON),
    (b"\xff\xfe{}\n", BreakKind.BAD_JSON),
    (b"[1, 2]\n", BreakKind.MALFORMED),
])
def test_appended_garbage(log_path: Path, garbage: bytes, kind: BreakKind) -> None:
    write_log(log_path, 3)
    with log_path.open("ab") as fh:
        fh.write(garbage)
    report = verify(log_path)
    assert (report.broken_line, report.kind, report.entries) == (4, kind, 3)


def test_a_blank_line_in_the_middle(log_path: Path) -> None:
    write_log(log_path, 3)
    lines = read_lines(log_path)
    write_lines(log_path, [*lines[:1], b"\n", *lines[1:]])
    report = verify(log_path)
    assert (report.broken_line, report.kind, report.lines) == (2, BreakKind.BAD_JSON, 4)
    assert "blank" in (report.detail or "")


@pytest.mark.parametrize("raw", [b'{"a": NaN}', b'{"a": 1, "a": 2}'])
def test_json_that_hides_values_is_bad_json(log_path: Path, raw: bytes) -> None:
    write_log(log_path, 1)

    def smuggle(obj: dict[str, Any]) -> None:
        obj["data"] = {"placeholder": True}

    rewrite_line(log_path, 1, smuggle)
    lines = read_lines(log_path)
    lines[0] = lines[0].replace(b'{"placeholder":true}', raw)
    write_lines(log_path, lines)
    report = verify(log_path)
    assert (report.broken_line, report.kind) == (1, BreakKind.BAD_JSON)


# --- appending to a damaged log -------------------------------------------------------------


def test_appends_continue_after_a_middle_edit_and_the_edit_stays_visible(log_path: Path) -> None:
    write_log(log_path, 4)
    rewrite_line(log_path, 2, TAMPERS["event"][0])
    last = AuditLog(log_path).append("after", {})
    assert last.prev_hash == json.loads(read_lines(log_path)[3])["hash"]
    report = verify(log_path)
    assert (report.broken_line, report.lines) == (2, 5)


def test_a_damaged_last_line_stops_appends_until_the_file_is_moved_aside(log_path: Path) -> None:
    write_log(log_path, 3)
    damaged = log_path.read_bytes()[:-20]
    log_path.write_bytes(damaged)
    log = AuditLog(log_path)
    with pytest.raises(AuditDamagedError) as caught:
        log.append("x", {})
    assert "incomplete" in caught.value.message
    assert caught.value.hint is not None
    assert "move it aside" in caught.value.hint
    assert log_path.read_bytes() == damaged

    log_path.rename(log_path.with_name("audit.jsonl.broken"))
    fresh = log.append("x", {})
    assert fresh.prev_hash == GENESIS_HASH
    assert verify(log_path).ok


def test_a_last_line_with_no_hash_stops_appends(log_path: Path) -> None:
    write_log(log_path, 2)
    rewrite_line(log_path, 2, lambda o: o.pop("hash"))
    with pytest.raises(AuditDamagedError, match="not an audit entry"):
        AuditLog(log_path).append("x", {})


def test_the_tail_is_found_across_read_blocks(log_path: Path) -> None:
    log = AuditLog(log_path)
    for size in (10, 5000, 9000, 3, 4095, 4096, 1):
        log.append("big", {"blob": "x" * size})
    assert verify(log_path).ok
    assert verify(log_path).entries == 7


# --- scrubbing ------------------------------------------------------------------------------

SECRET = "sk-ant-api03-SECRETSECRETSECRET"


def scrub_secret(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: scrub_secret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_secret(v) for v in value]
    if isinstance(value, str):
        return value.replace(SECRET, "[REDACTED]")
    return value


def test_scrub_hook_runs_before_hashing_and_writing(log_path: Path) -> None:
    log = AuditLog(log_path, scrub=scrub_secret, clock=lambda: T0)
    entry = log.append("handoff_dispatched", {"env": {"KEY": SECRET}, "argv": ["--key", SECRET]})
    assert SECRET.encode() not in log_path.read_bytes()
    assert entry.data == {"env": {"KEY": "[REDACTED]"}, "argv": ["--key", "[REDACTED]"]}
    body = json.dumps({"data": entry.data, "event": "handoff_dispatched", "ts": entry.ts},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert entry.hash == hashlib.sha256((GENESIS_HASH + body).encode()).hexdigest()
    assert verify(log_path).ok


def test_scrub_hook_sees_plain_json_and_must_return_a_mapping(log_path: Path) -> None:
    seen: list[Any] = []

    def spy(value: Any) -> Any:
        seen.append(value)
        return ["not", "a", "mapping"]

    with pytest.raises(TypeError, match="scrub hook"):
        AuditLog(log_path, scrub=spy).append("e", {"t": (1, 2)})
    assert seen == [{"t": [1, 2]}]
    assert not log_path.exists()


# --- durability and OS errors ---------------------------------------------------------------


@pytest.mark.parametrize(("durable", "expected"), [(True, [2, 1]), (False, [0, 0])])
def test_fsync_policy(log_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool,
                      expected: list[int]) -> None:
    """Durable: the first append syncs the file and its new folder entry, later ones the file."""
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    log = AuditLog(log_path, durable=durable)
    calls = []
    for _ in range(2):
        before = len(synced)
        log.append("e", {})
        calls.append(len(synced) - before)
    assert calls == expected


def test_a_failed_write_leaves_no_torn_line(log_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_log(log_path, 2)
    before = log_path.read_bytes()

    def half_then_full(fd: int, data: bytes) -> None:
        os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(audit, "_write_all", half_then_full)
    with pytest.raises(AuditError) as caught:
        AuditLog(log_path).append("e", {"x": 1})
    assert "disk space" in (caught.value.hint or "")
    assert isinstance(caught.value.__cause__, OSError)
    assert log_path.read_bytes() == before
    monkeypatch.undo()
    AuditLog(log_path).append("e", {"x": 1})
    assert verify(log_path).entries == 3


def test_os_errors_become_audit_errors_with_hints(tmp_path: Path) -> None:
    folder = tmp_path / "is-a-folder"
    folder.mkdir()
    with pytest.raises(AuditError) as caught:
        verify(folder)
    assert "folder" in (caught.value.hint or "")
    assert isinstance(caught.value, RelayError)

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AuditError, match="Cannot write"):
        AuditLog(blocker / "audit.jsonl").append("e", {})


def test_iter_entries_names_an_unparsable_line(log_path: Path) -> None:
    write_log(log_path, 2)
    with log_path.open("ab") as fh:
        fh.write(b"not json\n")
    entries: Iterator[AuditEntry] = iter_entries(log_path)
    assert next(entries).event == "event_0"
    assert next(entries).event == "event_1"
    with pytest.raises(AuditError, match="Line 3"):
        next(entries)


# --- concurrency ----------------------------------------------------------------------------

APPENDER = """
import sys
from relay.core.audit import AuditLog
log = AuditLog(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[3])):
    log.append("tick", {"worker": sys.argv[2], "i": i})
print("done", flush=True)
"""


def test_four_processes_appending_concurrently_never_fork_the_chain(log_path: Path) -> None:
    workers, each = 4, 200
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(log_path), str(w), str(each)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for w in range(workers)]
    try:
        for proc in procs:  # every worker is started and waiting: release them together
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err
            assert out.strip() == "done"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    report = verify(log_path)
    assert report.ok, report
    assert report.entries == workers * each
    entries = list(iter_entries(log_path))
    for w in range(workers):
        assert [e.data["i"] for e in entries if e.data["worker"] == str(w)] == list(range(each))


def test_threads_sharing_and_not_sharing_a_log_object(log_path: Path) -> None:
    shared = AuditLog(log_path)
    logs = [shared, shared, AuditLog(log_path), AuditLog(log_path)]
    start = threading.Barrier(len(logs))
    failures: list[BaseException] = []

    def work(index: int, log: AuditLog) -> None:
        try:
            start.wait(timeout=30)
            for i in range(100):
                log.append("tick", {"thread": index, "i": i})
        except BaseException as exc:  # noqa: BLE001 — reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n, log)) for n, log in enumerate(logs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not failures
    report = verify(log_path)
    assert report.ok, report
    assert report.entries == 400


# --- the anchor in relay.db -------------------------------------------------------------------


@pytest.fixture
def anchor(tmp_path: Path) -> audit.DbAnchor:
    import sqlite3

    from relay.core.store.migrations import MIGRATIONS

    db = tmp_path / "relay.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(next(sql for sql in MIGRATIONS.values() if "audit_anchor" in sql))
    return audit.DbAnchor(db)


def anchored_log(log_path: Path, anchor: audit.DbAnchor, count: int) -> list[AuditEntry]:
    log = AuditLog(log_path, durable=False, anchor=anchor)
    return [log.append("state_changed", {"i": i}) for i in range(count)]


def test_each_append_anchors_the_length_and_head_in_the_database(
        log_path: Path, anchor: audit.DbAnchor) -> None:
    written = anchored_log(log_path, anchor, 4)
    known = anchor.read()
    assert known is not None
    assert (known.entries, known.head, known.reset_note) == (4, written[-1].hash, None)
    assert verify(log_path, known).ok


@pytest.mark.parametrize(("damage", "entries"), [
    pytest.param(lambda p: p.unlink(), 0, id="deleted"),
    pytest.param(lambda p: p.write_bytes(b""), 0, id="emptied"),
    pytest.param(lambda p: p.write_bytes(b"".join(read_lines(p)[:3])), 3, id="last-lines-cut"),
])
def test_a_log_cut_short_or_deleted_is_caught_by_the_anchor(
        log_path: Path, anchor: audit.DbAnchor, damage: Callable[[Path], None],
        entries: int) -> None:
    anchored_log(log_path, anchor, 5)
    damage(log_path)
    assert verify(log_path).ok  # the file alone cannot tell
    report = verify(log_path, anchor.read())
    assert (report.ok, report.kind, report.entries, report.broken_line) == (
        False, BreakKind.ANCHOR_MISMATCH, entries, entries + 1)
    assert "the database recorded 5 ending in" in (report.detail or "")


def test_a_rewrite_with_fresh_hashes_is_caught_by_the_anchor(
        log_path: Path, anchor: audit.DbAnchor, tmp_path: Path) -> None:
    anchored_log(log_path, anchor, 3)
    forged = tmp_path / "forged.jsonl"
    AuditLog(forged, durable=False).append("state_changed", {"i": "forged"})
    for i in (1, 2):
        AuditLog(forged, durable=False).append("state_changed", {"i": i})
    log_path.write_bytes(forged.read_bytes())  # a whole new chain, every hash right
    assert verify(log_path).ok
    report = verify(log_path, anchor.read())
    assert report.kind == BreakKind.ANCHOR_MISMATCH


def test_a_log_from_before_the_anchor_is_anchored_at_its_next_append(
        log_path: Path, anchor: audit.DbAnchor) -> None:
    write_log(log_path, 3)  # no anchor: an older data folder
    assert anchor.read() is None
    entry = anchored_log(log_path, anchor, 1)[0]
    known = anchor.read()
    assert known is not None
    assert (known.entries, known.head, known.reset_note) == (4, entry.hash, None)


def test_a_log_moved_aside_is_re_anchored_with_a_note(
        log_path: Path, anchor: audit.DbAnchor) -> None:
    anchored_log(log_path, anchor, 3)
    log_path.rename(log_path.with_name("audit.old.jsonl"))  # what the damage hint says to do
    anchored_log(log_path, anchor, 1)
    known = anchor.read()
    assert known is not None
    assert known.entries == 1
    assert "where 3 ending in" in (known.reset_note or "")
    assert verify(log_path, known).ok
