"""The per-CLI usage readers, over the recorded session files and crafted damage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from relay.wallet import transcripts
from relay.wallet.model import Tokens
from relay.wallet.transcripts import claude, codex, gemini, pi, reader_for
from tests.wallet.conftest import claude_line, only, user_line

Captures = Callable[[str, str], Path]
CLAUDE_FILE = "config/projects/CWD_ENCODED/*.jsonl"
CODEX_FILE = "sessions/*/*/*/rollout-*.jsonl"
GEMINI_FILE = "dot_gemini/tmp/repo/chats/session-*.jsonl"
PI_FILE = "dot_pi/agent/sessions/*/*.jsonl"


# ---- Claude Code -----------------------------------------------------------------------------

def test_claude_counts_a_text_and_tool_use_reply_once(captures: Captures) -> None:
    data = only(CLAUDE_FILE, captures("claude", "b_write_tool")).read_bytes()
    lines_with_usage = data.count(b'"type":"assistant"')
    parsed = claude.parse(data, {})
    assert lines_with_usage == 3   # text + tool_use of one reply, then the final text
    assert [e.tokens for e in parsed.entries] == [Tokens(input=1675, output=56),
                                                  Tokens(input=1806, output=18)]
    first = parsed.entries[0]
    assert first.dedupe_key == ("claude:msg_mockf699908c536141e3b10645a2:"
                                "req_mock202d1de9e00f4b358d434d27")
    assert (first.model, first.project, first.session_id) == (
        "claude-opus-4-8", "<CWD>", "f42cff74-5a06-4ead-9863-d54a6878b94f")
    assert parsed.end == len(data)
    assert not parsed.warnings


def test_claude_entry_offsets_point_at_their_lines(captures: Captures) -> None:
    data = only(CLAUDE_FILE, captures("claude", "b_write_tool")).read_bytes()
    for entry in claude.parse(data, {}).entries:
        line = data[entry.offset:data.index(b"\n", entry.offset)]
        message_id = (entry.dedupe_key or "").split(":")[1]
        assert orjson.loads(line)["message"]["id"] == message_id


def test_claude_skips_synthetic_api_errors(captures: Captures) -> None:
    paths = sorted(captures("claude", "d1_429_retries_capped").glob(CLAUDE_FILE))
    assert len(paths) == 2
    for path in paths:
        data = path.read_bytes()
        assert b'"model":"<synthetic>"' in data
        assert claude.parse(data, {}).entries == []


def test_claude_reads_cache_tokens_and_the_model(captures: Captures) -> None:
    data = only(CLAUDE_FILE, captures("claude", "a_text_stream_json")).read_bytes()
    tokens = [e.tokens for e in claude.parse(data, {}).entries]
    assert Tokens(input=1200, output=17, cache_read=4000, cache_write=300) in tokens


def test_claude_does_not_deduplicate_without_both_ids() -> None:
    data = (claude_line("msg_1", None, "2026-11-30T10:00:00Z")
            + claude_line("msg_1", None, "2026-11-30T10:00:01Z")
            + claude_line(None, "req_1", "2026-11-30T10:00:02Z")
            + claude_line("msg_2", "req_2", "2026-11-30T10:00:03Z")
            + claude_line("msg_2", "req_2", "2026-11-30T10:00:03Z"))
    entries = claude.parse(data, {}).entries
    assert [e.dedupe_key for e in entries] == [None, None, None, "claude:msg_2:req_2"]


def test_claude_copies_keep_the_largest_counts() -> None:
    # older releases wrote a growing output_tokens on each content block of one reply
    data = (claude_line("msg_1", "req_1", "2026-11-30T10:00:00Z", output=1)
            + claude_line("msg_1", "req_1", "2026-11-30T10:00:01Z", output=80))
    (entry,) = claude.parse(data, {}).entries
    assert entry.tokens.output == 80
    assert entry.ts_ms == transcripts.iso_ms("2026-11-30T10:00:00Z")


def test_claude_leaves_a_partial_last_line_for_the_next_call() -> None:
    complete = claude_line("msg_1", "req_1", "2026-11-30T10:00:00Z") + user_line()
    last = claude_line("msg_2", "req_2", "2026-11-30T10:01:00Z", output=7)
    cut = len(last) // 2
    first = claude.parse(complete + last[:cut], {})
    assert first.end == len(complete)
    assert [e.dedupe_key for e in first.entries] == ["claude:msg_1:req_1"]
    data = complete + last
    second = claude.parse(data, first.state, first.end)
    assert second.end == len(data)
    assert [(e.dedupe_key, e.offset) for e in second.entries] == [("claude:msg_2:req_2",
                                                                    len(complete))]


def test_claude_slice_with_base_gives_file_offsets() -> None:
    head = user_line() + claude_line("msg_1", "req_1", "2026-11-30T10:00:00Z")
    tail = claude_line("msg_2", "req_2", "2026-11-30T10:01:00Z")
    whole = claude.parse(head + tail, {}, len(head))
    sliced = claude.parse(tail, {}, 0, None, len(head))
    assert whole.entries == sliced.entries
    assert whole.end == sliced.end == len(head + tail)
    assert sliced.entries[0].offset == len(head)


def test_claude_counts_corrupt_non_utf8_and_huge_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 2000)
    good = claude_line("msg_1", "req_1", "2026-11-30T10:00:00Z")
    torn = good[:-30] + b"\n"   # cut after its usage: a write that died
    not_utf8 = good.replace(b'"hi"', b'"\xff\xfe"')
    huge = claude_line("msg_3", "req_3", "2026-11-30T10:00:00Z", padding="x" * 5000)
    no_usage = b'{"type":"assistant","message":{"id":"m","output_tokens":1}}\n'
    no_time = claude_line("msg_4", "req_4", "yesterday")
    data = torn + not_utf8 + huge + no_usage + no_time + good
    parsed = claude.parse(data, {})
    assert [e.dedupe_key for e in parsed.entries] == ["claude:msg_1:req_1"]
    assert parsed.warnings == {"corrupt_line": 1, "not_utf8": 1, "line_too_long": 1,
                               "missing_field": 1, "bad_timestamp": 1}
    assert parsed.end == len(data)


@pytest.mark.parametrize("bad", [b"100000000000000000000", b"-5", b"1e300", b'"12"', b"[1]", b"true"])
def test_impossible_counts_skip_the_entry_and_are_counted(bad: bytes) -> None:
    # 1e20 is valid JSON but no SQLite integer: it must never reach the index
    line = claude_line("m1", "r1", "2026-11-30T10:00:00Z").replace(b'"output_tokens":10',
                                                                  b'"output_tokens":' + bad)
    good = claude_line("m2", "r2", "2026-11-30T10:00:00Z")
    parsed = claude.parse(line + good, {})
    assert [e.dedupe_key for e in parsed.entries] == ["claude:m2:r2"]
    assert parsed.warnings == {"bad_number": 1}


def test_every_reader_counts_impossible_counts(captures: Captures) -> None:
    codex_data = only(CODEX_FILE, captures("codex", "f_resume_by_id")).read_bytes()
    gemini_data = only(GEMINI_FILE, captures("gemini", "b_tools_yolo")).read_bytes()
    pi_data = only(PI_FILE, captures("pi", "f_resume")).read_bytes()
    cases = [(codex.parse, codex_data, b'"output_tokens":80', 1),   # the second total
             (gemini.parse, gemini_data, b'"output":30', 2),        # the last record
             (pi.parse, pi_data, b'"output":25', 2)]
    for parse, data, field_, kept in cases:
        at = data.rindex(field_)
        damaged = data[:at] + field_.split(b":")[0] + b":-1" + data[at + len(field_):]
        parsed = parse(damaged, {})
        assert parsed.warnings == {"bad_number": 1}, parse
        assert len(parsed.entries) == kept, parse


# ---- Codex -----------------------------------------------------------------------------------

def test_codex_entries_are_per_response_deltas_not_the_thread_total(captures: Captures) -> None:
    data = only(CODEX_FILE, captures("codex", "f_resume_by_id")).read_bytes()
    parsed = codex.parse(data, {})
    per_response = Tokens(input=200, output=40, cache_read=1000, reasoning=8)
    assert [e.tokens for e in parsed.entries] == [per_response, per_response]
    assert sum(e.tokens.total for e in parsed.entries) == 2480   # the thread's total_tokens
    assert {e.model for e in parsed.entries} == {"gpt-5.5"}
    assert {e.session_id for e in parsed.entries} == {"01a22bee-46dd-78e3-889b-43b6b667eb33"}
    assert parsed.state["total"] == [2400, 2000, 0, 80, 16]


def test_codex_sums_tool_turn_requests(captures: Captures) -> None:
    data = only(CODEX_FILE, captures("codex", "b_tool_shell_and_patch")).read_bytes()
    entries = codex.parse(data, {}).entries
    assert len(entries) == 3
    assert sum(e.tokens.input + e.tokens.cache_read for e in entries) == 3600


def test_codex_a_repeated_token_count_adds_nothing(captures: Captures) -> None:
    data = only(CODEX_FILE, captures("codex", "f_resume_by_id")).read_bytes()
    lines = data.splitlines(keepends=True)
    counts = [i for i, line in enumerate(lines) if b'"token_count"' in line]
    repeated = b"".join([*lines[:counts[0] + 1], lines[counts[0]], *lines[counts[0] + 1:]])
    assert len(codex.parse(repeated, {}).entries) == 2


def test_codex_state_carries_the_total_across_calls(captures: Captures) -> None:
    data = only(CODEX_FILE, captures("codex", "f_resume_by_id")).read_bytes()
    middle = data.index(b"\n", len(data) // 2) + 1
    first = codex.parse(data[:middle], {})
    second = codex.parse(data, first.state, first.end)
    assert first.entries + second.entries == codex.parse(data, {}).entries


def test_codex_rate_limits_become_official_snapshots(captures: Captures) -> None:
    data = only(CODEX_FILE, captures("codex", "a5_rate_limit_headers_on_success")).read_bytes()
    snaps = {s.window: s for s in codex.parse(data, {}).snapshots}
    five, week = snaps["five_hour"], snaps["seven_day"]
    assert (five.used_percent, five.window_minutes, five.resets_at_ms) == (42.5, 300, 1796040592000)
    assert (week.used_percent, week.window_minutes, week.resets_at_ms) == (12.0, 10080, 1796533392000)
    assert five.origin == "codex token_count"
    assert five.observed_ms == transcripts.iso_ms("2026-11-30T10:09:52.596Z")


def test_codex_usage_limit_has_limits_but_no_usage(captures: Captures) -> None:
    data = only(CODEX_FILE, captures("codex", "d_usage_limit_pro")).read_bytes()
    parsed = codex.parse(data, {})
    assert parsed.entries == []
    assert {s.window: s.used_percent for s in parsed.snapshots} == {"five_hour": 100.0,
                                                                    "seven_day": 47.0}


def test_codex_other_windows_and_countdowns() -> None:
    line = orjson.dumps({"timestamp": "2026-11-30T10:00:00.000Z", "type": "event_msg", "payload": {
        "type": "token_count", "info": None, "rate_limits": {
            "primary": {"used_percent": 5, "window_minutes": 60, "resets_in_seconds": 30}}}})
    (snap,) = codex.parse(line + b"\n", {}).snapshots
    assert snap.window == "other"
    assert snap.resets_at_ms == snap.observed_ms + 30_000


# ---- Gemini CLI ------------------------------------------------------------------------------

def test_gemini_records_written_twice_count_once(captures: Captures) -> None:
    data = only(GEMINI_FILE, captures("gemini", "b_tools_yolo")).read_bytes()
    assert data.count(b'"type":"gemini"') == 5
    entries = gemini.parse(data, {}).entries
    assert len(entries) == 3
    assert {e.tokens for e in entries} == {Tokens(input=500, output=60, cache_read=1000,
                                                  reasoning=30)}
    assert {e.tokens.total for e in entries} == {1560}   # the stored "total"
    assert {e.session_id for e in entries} == {"4be50f90-a9e1-4d77-acbc-ff665041645f"}


def test_gemini_history_copies_in_set_messages_count_nothing(captures: Captures) -> None:
    data = only(GEMINI_FILE, captures("gemini", "f_resume_latest")).read_bytes()
    entries = gemini.parse(data, {"project": "/work/repo"}).entries
    assert len(entries) == 3
    assert {e.project for e in entries} == {"/work/repo"}


def test_gemini_failed_prompt_has_no_usage(captures: Captures) -> None:
    data = only(GEMINI_FILE, captures("gemini", "d_429_daily_quota")).read_bytes()
    assert gemini.parse(data, {}).entries == []


def _document(captures: Captures) -> dict[str, object]:
    """The older whole-document form of a recorded chat."""
    data = only(GEMINI_FILE, captures("gemini", "b_tools_yolo")).read_bytes()
    records = [orjson.loads(line) for line in data.splitlines()]
    messages = [r for r in records if r.get("type") in ("user", "gemini")]
    return {"sessionId": records[0]["sessionId"], "messages": messages}


def test_gemini_whole_document_is_read_whole(captures: Captures) -> None:
    doc = orjson.dumps(_document(captures))
    spec = reader_for("gemini", "/x/chats/session-1.json")
    assert spec is not None
    assert spec.whole_file
    parsed = spec.parse(doc, {})
    assert len(parsed.entries) == 3
    assert {e.offset for e in parsed.entries} == {0}
    assert parsed.end == len(doc)


def test_gemini_document_caught_mid_rewrite_consumes_nothing(captures: Captures) -> None:
    doc = orjson.dumps(_document(captures))
    parsed = gemini.parse_document(doc[:-10], {})
    assert (parsed.entries, parsed.end) == ([], 0)
    assert parsed.warnings == {"corrupt_line": 1}


# ---- Pi --------------------------------------------------------------------------------------

def test_pi_keeps_the_cost_it_wrote(captures: Captures) -> None:
    data = only(PI_FILE, captures("pi", "f_resume")).read_bytes()
    entries = pi.parse(data, {}).entries
    assert len(entries) == 3
    assert {e.cost_usd for e in entries} == {0.000725}
    assert {e.tokens for e in entries} == {Tokens(input=300, output=25, cache_read=800)}
    assert {(e.session_id, e.project) for e in entries} == {
        ("01a22bed-e6d7-7697-9321-711a188928b2", "<CWD>")}
    assert entries[0].dedupe_key == "pi:chatcmpl-071c1b55dff341d6be44"


def test_pi_falls_back_to_the_message_epoch(captures: Captures) -> None:
    data = only(PI_FILE, captures("pi", "f_resume")).read_bytes()
    lines = [orjson.loads(line) for line in data.splitlines()]
    for line in lines:
        line["timestamp"] = "not a time"
    entries = pi.parse(b"".join(orjson.dumps(line) + b"\n" for line in lines), {}).entries
    assert [e.ts_ms for e in entries] == [1796033341295, 1796033342931, 1796033345300]


def test_pi_skips_failed_attempts(captures: Captures) -> None:
    data = only(PI_FILE, captures("pi", "e_503_overloaded")).read_bytes()
    assert data.count(b'"stopReason":"error"') == 3
    assert pi.parse(data, {}).entries == []


# ---- which reader ----------------------------------------------------------------------------

@pytest.mark.parametrize(("runtime", "path", "name"), [
    ("claude", "a/b.jsonl", "claude"), ("codex", "rollout-1.jsonl", "codex"),
    ("gemini", "session-1.jsonl", "gemini"), ("gemini", "session-1.json", "gemini_json"),
    ("pi", "x.jsonl", "pi"), ("claude", "a/b.meta.json", None), ("demo", "x.jsonl", None)])
def test_reader_for(runtime: str, path: str, name: str | None) -> None:
    spec = reader_for(runtime, path)
    assert (spec.name if spec else None) == name
