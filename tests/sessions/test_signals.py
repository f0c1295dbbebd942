"""relay.sessions.signals over every failure the recorded CLIs printed, plus wordings.

Part 1 walks ../shared/fixtures: every failure report of every capture of
claude, codex, gemini and pi (result lines, turn.failed, retry notices, stderr,
pi's errorMessage …) is classified and checked against a hand-written table;
reset times are checked against what the capture's mock_script made the
server say. Part 2 feeds the mock servers' own error bodies and headers in as
structured fields. Part 3 covers every wording variant (fixtures and public
trackers) with a fixed clock, and part 4 unknown wording.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from relay.sessions.signals import (
    Signal,
    classify,
    error_category,
    from_epoch,
    limit_kind,
    reset_from_text,
    zone_named,
)
from tests.conftest import fixtures_root

ROOT = fixtures_root()
# Every harness pinned TZ=UTC, so the CLIs formatted clock times in UTC.
HARNESS_TZ = UTC
# When a capture has no request log: the day the harness ran.
HARNESS_DAY = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


# ---------------------------------------------------------------------------
# Reading failure reports out of the captures
# ---------------------------------------------------------------------------


@dataclass
class Report:
    """One failure report a CLI printed, and what Relay would pass to classify()."""

    cli: str
    capture: str  # "scenario/run" for claude, "scenario/runN" for the others
    where: str
    text: str | None
    http_status: int | None = None
    structured: dict[str, Any] = field(default_factory=dict)
    now: datetime = HARNESS_DAY
    folder: Path = ROOT

    @property
    def id(self) -> str:
        return f"{self.cli}/{self.capture}/{self.where}"

    def classify(self, *, with_fields: bool = True) -> Signal:
        return classify(self.text, http_status=self.http_status,
                        structured=self.structured if with_fields else None,
                        provider=self.cli, now=self.now, tz=HARNESS_TZ)


def _json_lines(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _last_request_time(path: Path) -> datetime:
    """When the CLI sent its last request (its failure was printed right after)."""
    if not path.is_file():
        return HARNESS_DAY
    stamps = [obj["ts"] for obj in _json_lines(path) if "ts" in obj]
    if not stamps:
        return HARNESS_DAY
    last = stamps[-1]
    if isinstance(last, str):
        return datetime.fromisoformat(last.replace("Z", "+00:00"))
    return datetime.fromtimestamp(float(last), UTC)


def _distinct(reports: list[Report]) -> list[Report]:
    seen: set[str] = set()
    out = []
    for report in reports:
        if report.id not in seen:
            seen.add(report.id)
            out.append(report)
    return out


def claude_reports() -> list[Report]:
    reports: list[Report] = []
    for stdout in sorted((ROOT / "claude" / "captures").glob("*/*/stdout.*")):
        run = stdout.parent
        capture = f"{run.parent.name}/{run.name}"
        exit_code = int((run / "exit_code").read_text().strip())
        now = _last_request_time(run / "requests.jsonl")

        def report(where: str, text: str | None, status: int | None = None,
                   fields: dict[str, Any] | None = None, *, _run: Path = run,
                   _capture: str = capture, _now: datetime = now) -> Report:
            return Report("claude", _capture, where, text, status, fields or {}, _now, _run)

        found: list[Report] = []
        if stdout.suffix == ".txt":
            if exit_code != 0:
                found.append(report("stdout", stdout.read_text(encoding="utf-8").strip()))
        else:
            rejected: dict[str, Any] | None = None
            synthetic: str | None = None
            for obj in _json_lines(stdout):
                kind = obj.get("type")
                if kind == "rate_limit_event" and obj["rate_limit_info"].get("status") == "rejected":
                    rejected = obj["rate_limit_info"]
                elif kind == "assistant" and obj["message"].get("model") == "<synthetic>":
                    synthetic = obj.get("error")
                elif kind == "system" and obj.get("subtype") == "api_retry":
                    status, error = obj.get("error_status"), obj.get("error")
                    found.append(report(f"api_retry:{status}:{error}", None, status,
                                        {"assistant_error": error}))
                elif kind == "result" and obj.get("is_error"):
                    text = obj.get("result") or "; ".join(obj.get("errors") or [])
                    fields: dict[str, Any] = {"assistant_error": synthetic}
                    if rejected is not None:
                        fields["rate_limit_info"] = rejected
                    for key in ("api_error", "api_error_type"):
                        if key in obj:
                            fields[key] = obj[key]
                    found.append(report("result", text, obj.get("api_error_status"), fields))
        stderr = (run / "stderr.txt").read_text(encoding="utf-8").strip()
        if exit_code not in (0, 143) and stderr and not found:
            found.append(report("stderr", stderr.splitlines()[-1]))
        reports += found
    return _distinct(reports)


def _codex_rollout_errors(scenario: Path) -> list[tuple[datetime, dict[str, Any], Any]]:
    """(time, task_complete.error, the rate_limits snapshot seen before it) per failed turn."""
    found = []
    for rollout in sorted(scenario.glob("sessions/**/rollout-*.jsonl")):
        snapshot: Any = None
        for obj in _json_lines(rollout):
            payload = obj.get("payload") or {}
            if payload.get("type") == "token_count" and payload.get("rate_limits"):
                snapshot = payload["rate_limits"]
            if payload.get("type") == "task_complete" and payload.get("error"):
                when = datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00"))
                found.append((when, payload["error"], snapshot))
    return found


def codex_reports() -> list[Report]:
    reports: list[Report] = []
    for scenario in sorted((ROOT / "codex" / "captures").iterdir()):
        if not (scenario / "runs.json").is_file():
            continue
        runs = json.loads((scenario / "runs.json").read_text())
        rollout_errors = _codex_rollout_errors(scenario)
        now_default = _last_request_time(scenario / "requests.jsonl")
        for meta in runs:
            run = meta["run"]
            stdout = scenario / f"{run}.stdout.jsonl"
            objects = _json_lines(stdout) if stdout.is_file() else []
            texts: list[tuple[str, str]] = []
            for obj in objects:
                if obj.get("type") == "error":
                    message = obj["message"]
                    texts.append(("reconnect" if message.startswith("Reconnecting...")
                                  else "error", message))
                elif obj.get("type") == "turn.failed":
                    texts.append(("turn.failed", obj["error"]["message"]))
            if not any(where == "turn.failed" for where, _ in texts) and meta["exit_code"] != 0:
                stderr = (scenario / f"{run}.stderr.txt").read_text(encoding="utf-8")
                errors = [line.removeprefix("ERROR: ") for line in stderr.splitlines()
                          if line.startswith("ERROR: ")]
                if errors:
                    texts.append(("stderr", errors[-1]))
                elif stderr.strip() and "Reading additional input" not in stderr.strip():
                    texts.append(("stderr", stderr.strip()))
                elif stderr.strip().startswith("Reading additional input"):
                    rest = stderr.strip().split("\n", 1)
                    if len(rest) > 1 and rest[1].strip():
                        texts.append(("stderr", rest[1].strip()))
            for where, text in texts:
                if where == "error" and any(w == "turn.failed" and t == text for w, t in texts):
                    continue  # the same message, reported once more by turn.failed
                fields: dict[str, Any] = {}
                now = now_default
                for when, error, snapshot in rollout_errors:
                    if error.get("message") == text and where in ("turn.failed", "stderr"):
                        fields = {"codex_error_info": error.get("codex_error_info")}
                        if snapshot is not None:
                            fields["rate_limits"] = snapshot
                        now = when
                reports.append(Report("codex", f"{scenario.name}/{run}", where, text, None,
                                      fields, now, scenario))
    return _distinct(reports)


_GEMINI_ATTEMPT = re.compile(
    r"^Attempt \d+ failed(?P<msg>.*?)(?:\. Retrying|\. Max attempts reached|\n\s+at )",
    re.MULTILINE | re.DOTALL)
_GEMINI_NOISE = ("Warning:", "Ripgrep is not available", "[STARTUP]", "YOLO mode",
                 "Error executing tool", "Loaded cached")


def gemini_reports() -> list[Report]:
    reports: list[Report] = []
    for scenario in sorted((ROOT / "gemini" / "captures").iterdir()):
        if not (scenario / "runs.json").is_file():
            continue
        now = _last_request_time(scenario / "requests.jsonl")
        for index, meta in enumerate(json.loads((scenario / "runs.json").read_text()), 1):
            run = f"run{index}"
            capture = f"{scenario.name}/{run}"
            stderr = (scenario / f"{run}.stderr.txt").read_text(encoding="utf-8")
            found: list[Report] = []
            for match in _GEMINI_ATTEMPT.finditer(stderr):
                text = "Attempt 1 failed" + match.group("msg")
                found.append(Report("gemini", capture, f"attempt:{len(found)}", text,
                                    now=now, folder=scenario))
            for obj in _json_lines(scenario / f"{run}.stdout.jsonl"):
                if obj.get("type") == "result" and obj.get("status") == "error":
                    found.append(Report("gemini", capture, "result", obj["error"]["message"],
                                        now=now, folder=scenario))
            tail = stderr[stderr.rfind("\n{\n") + 1:] if "\n{\n" in stderr else ""
            if tail.strip().startswith("{"):
                error = json.loads(tail)["error"]
                found.append(Report("gemini", capture, "stderr.json", error["message"],
                                    error.get("code"), now=now, folder=scenario))
            if meta["exit_code"] != 0 and not any(r.where in ("result", "stderr.json")
                                                  for r in found):
                lines = [line for line in stderr.splitlines()
                         if line.strip() and not line.startswith(_GEMINI_NOISE)]
                found.append(Report("gemini", capture, "stderr", "\n".join(lines),
                                    now=now, folder=scenario))
            reports += _dedupe_attempts(found)
    return _distinct(reports)


def _dedupe_attempts(reports: list[Report]) -> list[Report]:
    """Retries repeat the same attempt message: keep each wording once."""
    seen: set[str | None] = set()
    out = []
    for report in reports:
        if report.where.startswith("attempt"):
            if report.text in seen:
                continue
            seen.add(report.text)
            report.where = f"attempt:{len(seen)}"
        out.append(report)
    return out


def pi_reports() -> list[Report]:
    reports: list[Report] = []
    for scenario in sorted((ROOT / "pi" / "captures").iterdir()):
        if not (scenario / "runs.json").is_file():
            continue
        now = _last_request_time(scenario / "requests.jsonl")
        for index, meta in enumerate(json.loads((scenario / "runs.json").read_text()), 1):
            run = f"run{index}"
            capture = f"{scenario.name}/{run}"
            messages: list[tuple[str, str]] = []
            for obj in _json_lines(scenario / f"{run}.stdout.jsonl"):
                raw = obj.get("message")
                message: dict[str, Any] = raw if isinstance(raw, dict) else {}
                if obj.get("type") == "message_end" and message.get("stopReason") == "error":
                    messages.append(("errorMessage", message["errorMessage"]))
                if obj.get("type") == "auto_retry_end" and obj.get("success") is False:
                    messages.append(("finalError", obj["finalError"]))
            if meta["exit_code"] != 0:
                stderr = (scenario / f"{run}.stderr.txt").read_text(encoding="utf-8").strip()
                messages.append(("stderr", stderr))
            for where, text in dict(messages).items():
                reports.append(Report("pi", capture, where, text, now=now, folder=scenario))
    return reports


def all_reports() -> list[Report]:
    if not ROOT.is_dir():
        return []
    return claude_reports() + codex_reports() + gemini_reports() + pi_reports()


REPORTS = all_reports()


# ---------------------------------------------------------------------------
# Part 1: every failure report in the captures
# ---------------------------------------------------------------------------

MOCK = "mock"  # resets_at is what the capture's mock_script made the server say


@dataclass(frozen=True)
class Expect:
    kind: str
    reset: str | float | None = None  # MOCK, a retry-after in seconds, or None (no reset)
    scope: str | None = None


# One line per failure report (what the CLI printed), by "cli/capture/where".
EXPECTED: dict[str, Expect] = {
    # Claude Code 2.1.197
    "claude/d1_429_retries_capped/run1/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/d1_429_retries_capped/run1/result": Expect("rate_limit"),
    "claude/d1_429_retries_capped/run2_text_output/stdout": Expect("rate_limit"),
    "claude/d2_429_default_retries/run1/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/d2_429_default_retries/run1/result": Expect("rate_limit"),
    # retry-after: 3600 made the CLI give up at once; it does not pass the delay on.
    "claude/d3_429_retry_after_too_long/run1/result": Expect("rate_limit"),
    "claude/d4_429_then_success/run1/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/e1_529_overloaded/run1/api_retry:529:overloaded": Expect("overloaded"),
    "claude/e1_529_overloaded/run1/result": Expect("overloaded"),  # status null: wording
    "claude/e1b_529_is_sandbox/run1/api_retry:529:overloaded": Expect("overloaded"),
    "claude/e1b_529_is_sandbox/run1/result": Expect("overloaded"),
    "claude/e2_529_capped_json/run1/result": Expect("overloaded"),
    "claude/e4_400_invalid_request/run1/result": Expect("invalid_request"),
    "claude/e5_401_auth/run1/api_retry:401:authentication_failed": Expect("auth"),
    "claude/e5_401_auth/run1/result": Expect("auth"),
    "claude/e6_500_api_error/run1/api_retry:500:server_error": Expect("overloaded"),
    "claude/e6_500_api_error/run1/result": Expect("overloaded"),
    "claude/e7_529_fallback_model/run1/api_retry:529:overloaded": Expect("overloaded"),
    "claude/f_usage_limit/run1_subscriber_five_hour/result":
        Expect("usage_limit", MOCK, "five_hour"),
    "claude/f_usage_limit/run2_subscriber_seven_day/result":
        Expect("usage_limit", MOCK, "seven_day"),
    "claude/f_usage_limit/run3_subscriber_plain_429/result": Expect("rate_limit"),
    "claude/f_usage_limit/run4_apikey_unified_429/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/f_usage_limit/run4_apikey_unified_429/result": Expect("rate_limit"),
    "claude/f_usage_limit/run6_subscriber_json/result": Expect("usage_limit", MOCK, "five_hour"),
    # Not provider signals: the parser classifies these (resume, budget, max_turns, config).
    "claude/g_resume/run5_resume_unknown/result": Expect("unknown"),
    "claude/i2_max_budget/run1/result": Expect("unknown"),
    "claude/i_max_turns/run1_stream_json/result": Expect("unknown"),
    "claude/i_max_turns/run2_json/result": Expect("unknown"),
    "claude/m_permission_modes/run1_bypass_as_root/stderr": Expect("unknown"),
    "claude/m_permission_modes/run2_skip_permissions_as_root/stderr": Expect("unknown"),
    # A retry with neither status nor a known error code says nothing.
    "claude/n_connection_refused/run1/api_retry:None:unknown": Expect("unknown"),
    "claude/n_connection_refused/run1/result": Expect("network"),
    "claude/q_cli_usage_errors/run1_stream_json_without_verbose/stderr": Expect("unknown"),
    "claude/q_cli_usage_errors/run2_bad_session_id/stderr": Expect("unknown"),
    "claude/q_cli_usage_errors/run4_session_id_reused/stderr": Expect("unknown"),
    "claude/q_cli_usage_errors/run5_no_prompt/stderr": Expect("unknown"),
    "claude/s_api_timeout/run1/api_retry:None:unknown": Expect("unknown"),
    "claude/s_api_timeout/run1/result": Expect("timeout"),
    # Codex CLI 0.171.0
    "codex/c2_sse_rate_limit_then_ok/run1/reconnect": Expect("rate_limit", 1.5),
    "codex/c3_sse_rate_limit_exhausted/run1/reconnect": Expect("rate_limit", 0.5),
    "codex/c3_sse_rate_limit_exhausted/run1/turn.failed": Expect("rate_limit", 0.5),
    "codex/c4_http429_retry_after_only/run1/reconnect": Expect("rate_limit"),
    "codex/c4_http429_retry_after_only/run1/turn.failed": Expect("rate_limit"),
    "codex/c5_http429_message_hint_only/run1/turn.failed": Expect("rate_limit"),
    "codex/c_http429_rate_limit/run1/reconnect": Expect("rate_limit"),
    "codex/c_http429_rate_limit/run1/turn.failed": Expect("rate_limit"),
    "codex/d2_usage_limit_plus_other_day/run1/turn.failed": Expect("usage_limit", MOCK),
    "codex/d3_usage_limit_team/run1/turn.failed": Expect("usage_limit", MOCK),
    "codex/d4_usage_limit_no_reset_info/run1/turn.failed": Expect("usage_limit"),
    # The SSE error carried resets_at, but codex's message drops it.
    "codex/d5_usage_limit_in_sse/run1/reconnect": Expect("usage_limit"),
    "codex/d5_usage_limit_in_sse/run1/turn.failed": Expect("usage_limit"),
    "codex/d6_insufficient_quota_sse/run1/turn.failed": Expect("quota"),
    "codex/d7_usage_limit_human_output/run1/stderr": Expect("usage_limit", MOCK, "five_hour"),
    "codex/d_usage_limit_pro/run1/turn.failed": Expect("usage_limit", MOCK, "five_hour"),
    "codex/e2_http503_server_is_overloaded/run1/turn.failed": Expect("overloaded"),
    "codex/e3_http503_plain_then_ok/run1/reconnect": Expect("overloaded"),
    "codex/e4_http500_default_retries/run1/reconnect": Expect("overloaded"),
    "codex/e4_http500_default_retries/run1/turn.failed": Expect("overloaded"),
    "codex/e5_disconnect_then_ok/run1/reconnect": Expect("network"),
    "codex/e6_idle_timeout/run1/turn.failed": Expect("network"),
    "codex/e_http500_retries/run1/reconnect": Expect("overloaded"),
    "codex/e_http500_retries/run1/turn.failed": Expect("overloaded"),
    "codex/f3_resume_unknown_id/run1/stderr": Expect("unknown"),
    "codex/f4_resume_after_failed_turn/run1/turn.failed": Expect("usage_limit", MOCK),
    "codex/g6_not_a_git_repo/run1/stderr": Expect("unknown"),
    "codex/h2_missing_api_key_env/run1/turn.failed": Expect("unknown"),
    "codex/h4_wire_api_chat/run1/stderr": Expect("unknown"),
    # Gemini CLI 0.61.0
    "gemini/c2_429_rate_limit_exhausted/run1/attempt:1": Expect("rate_limit", 2.0),
    "gemini/c2_429_rate_limit_exhausted/run1/result": Expect("rate_limit", 2.0),
    "gemini/c3_429_plain/run1/attempt:1": Expect("rate_limit"),
    "gemini/c3_429_plain/run1/attempt:2": Expect("rate_limit"),
    "gemini/c3_429_plain/run1/stderr.json": Expect("rate_limit"),
    "gemini/c_429_rate_limit_per_minute/run1/attempt:1": Expect("rate_limit", 2.0),
    "gemini/d2_429_daily_quota_json/run1/stderr.json": Expect("quota", None, "daily"),
    "gemini/d3_429_capacity_exhausted/run1/attempt:1": Expect("overloaded"),
    "gemini/d3_429_capacity_exhausted/run1/result": Expect("overloaded"),
    "gemini/d_429_daily_quota/run1/result": Expect("quota", None, "daily"),
    "gemini/e2_500_then_ok/run1/attempt:1": Expect("overloaded"),
    "gemini/e_503_overloaded/run1/attempt:1": Expect("overloaded"),
    "gemini/e_503_overloaded/run1/attempt:2": Expect("overloaded"),
    "gemini/e_503_overloaded/run1/result": Expect("overloaded"),
    "gemini/g3_untrusted_folder/run1/stderr": Expect("unknown"),
    "gemini/h_missing_api_key/run1/stderr": Expect("auth"),
    # pi 0.73.1: "<status> <message>"; it drops resets_at (d_usage_limit_codex_style).
    "pi/c2_429_exhausted/run1/errorMessage": Expect("rate_limit", 1.0),
    "pi/c2_429_exhausted/run1/finalError": Expect("rate_limit", 1.0),
    "pi/c3_429_text_mode/run1/stderr": Expect("rate_limit", 1.0),
    "pi/c_429_then_ok/run1/errorMessage": Expect("rate_limit", 1.0),
    "pi/d2_insufficient_quota/run1/errorMessage": Expect("quota"),
    "pi/d2_insufficient_quota/run1/finalError": Expect("quota"),
    "pi/d_usage_limit_codex_style/run1/errorMessage": Expect("usage_limit"),
    "pi/d_usage_limit_codex_style/run1/finalError": Expect("usage_limit"),
    "pi/e2_500_then_ok/run1/errorMessage": Expect("overloaded"),
    "pi/e4_503_default_retry_settings/run1/errorMessage": Expect("overloaded"),
    "pi/e4_503_default_retry_settings/run1/finalError": Expect("overloaded"),
    "pi/e_503_overloaded/run1/errorMessage": Expect("overloaded"),
    "pi/e_503_overloaded/run1/finalError": Expect("overloaded"),
}


def _mock_steps(folder: Path) -> list[dict[str, Any]]:
    """The error responses a capture's mock server was scripted to send."""
    path = folder / "mock_script.json"
    if not path.is_file():
        return []
    script = json.loads(path.read_text(encoding="utf-8"))
    steps: list[dict[str, Any]] = []
    for turn in script.get("turns", []):  # claude: {"error": {status, type, message, headers}}
        if isinstance(turn, dict) and isinstance(turn.get("error"), dict):
            error = turn["error"]
            steps.append({"status": error["status"], "headers": error.get("headers", {}),
                          "body": {"type": error["type"], "message": error.get("message")}})
    for step in script.get("steps", []):  # codex, gemini, pi
        if step.get("kind") == "http_error":
            body = step.get("body", {}).get("error") if isinstance(step.get("body"), dict) else None
            steps.append({"status": step["status"], "headers": step.get("headers", {}),
                          "body": body})
        elif step.get("kind") == "sse_failed":
            steps.append({"status": None, "headers": {}, "body": step["error"]})
    return steps


def _resolve_headers(headers: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The claude mock writes "@now+7200" for "7200 s after this request" (epoch seconds)."""
    out: dict[str, Any] = {}
    for name, value in headers.items():
        match = re.fullmatch(r"@now\+(\d+)", str(value))
        out[name] = str(int(now.timestamp()) + int(match.group(1))) if match else value
    return out


def mock_reset(report: Report) -> datetime:
    """When the capture's mock server said the limit resets."""
    for step in _mock_steps(report.folder):
        headers = step["headers"]
        relative = re.fullmatch(r"@now\+(\d+)",
                                str(headers.get("anthropic-ratelimit-unified-reset", "")))
        if relative:
            return report.now + timedelta(seconds=int(relative.group(1)))
        body = step["body"] or {}
        if "resets_at" in body:
            return datetime.fromtimestamp(body["resets_at"], UTC)
    raise AssertionError(f"{report.id}: the mock script names no reset time")


def test_the_captures_are_there() -> None:
    assert len(REPORTS) >= 90, f"failure reports missing under {ROOT}"
    assert {r.cli for r in REPORTS} == {"claude", "codex", "gemini", "pi"}


def test_every_failure_report_is_in_the_table() -> None:
    """No capture's failure goes unchecked, and the table names no report that is not there."""
    found = {r.id for r in REPORTS}
    assert sorted(found - EXPECTED.keys()) == []
    assert sorted(EXPECTED.keys() - found) == []


@pytest.mark.parametrize("report", REPORTS, ids=[r.id for r in REPORTS])
def test_capture_kind_and_reset(report: Report) -> None:
    expect = EXPECTED[report.id]
    signal = report.classify()
    assert signal.kind == expect.kind, signal
    assert signal.text == report.text  # verbatim
    assert signal.provider == report.cli
    assert (signal.source == "none") == (expect.kind == "unknown")
    if expect.scope is not None:
        assert signal.scope == expect.scope
    if expect.reset is None:
        assert (signal.resets_at, signal.retry_after) == (None, None)
    elif expect.reset == MOCK:
        _assert_mock_reset(signal, mock_reset(report))
    else:
        assert signal.retry_after == expect.reset
        assert signal.resets_at == report.now + timedelta(seconds=float(expect.reset))


def _assert_mock_reset(signal: Signal, scripted: datetime) -> None:
    assert signal.resets_at is not None
    if signal.reset_source == "structured":  # an epoch field: to the second
        assert abs(signal.resets_at - scripted) <= timedelta(seconds=1)
    else:  # the wording shows minutes only
        assert timedelta(0) <= scripted - signal.resets_at < timedelta(minutes=1), (
            signal.resets_at, scripted)


@pytest.mark.parametrize("report", [r for r in REPORTS if r.structured],
                         ids=[r.id for r in REPORTS if r.structured])
def test_the_wording_alone_gives_the_same_kind(report: Report) -> None:
    """The structured fields and the text never disagree on a capture."""
    assert report.classify(with_fields=False).kind == report.classify().kind


@pytest.mark.parametrize("capture", [
    "claude/f_usage_limit/run1_subscriber_five_hour/result",
    "claude/f_usage_limit/run2_subscriber_seven_day/result",
    "codex/d_usage_limit_pro/run1/turn.failed",
    "codex/d7_usage_limit_human_output/run1/stderr",
])
def test_structured_reset_is_precise_and_the_wording_agrees(capture: str) -> None:
    report = next(r for r in REPORTS if r.id == capture)
    structured, worded = report.classify(), report.classify(with_fields=False)
    assert structured.reset_source == "structured"
    assert worded.reset_source == "text"
    assert structured.resets_at is not None
    assert worded.resets_at is not None
    assert structured.resets_at.second != 0  # the field has seconds the wording lacks
    assert structured.resets_at - worded.resets_at == timedelta(
        seconds=structured.resets_at.second)


def test_a_window_snapshot_that_disagrees_with_the_error_loses() -> None:
    """Codex d2: the full 5-hour window resets at 13:08, the error says Dec 3 (plus plan)."""
    report = next(r for r in REPORTS
                  if r.id == "codex/d2_usage_limit_plus_other_day/run1/turn.failed")
    assert report.structured["rate_limits"]["primary"]["used_percent"] == 100.0
    signal = report.classify()
    assert signal.reset_source == "text"
    assert signal.resets_at == datetime(2026, 12, 3, 10, 8, tzinfo=UTC)


# ---------------------------------------------------------------------------
# Part 2: what the mock servers sent, as structured fields
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MockCase:
    folder: str  # under fixtures_root()
    kind: str
    reset: str | float | None = None  # MOCK (the scripted time), a delay, or None
    scope: str | None = None


MOCK_CASES = [
    MockCase("claude/captures/d1_429_retries_capped/run1", "rate_limit", 1.0),
    MockCase("claude/captures/d3_429_retry_after_too_long/run1", "rate_limit", 3600.0),
    MockCase("claude/captures/e1_529_overloaded/run1", "overloaded"),
    MockCase("claude/captures/e4_400_invalid_request/run1", "invalid_request"),
    MockCase("claude/captures/e5_401_auth/run1", "auth"),
    MockCase("claude/captures/e6_500_api_error/run1", "overloaded"),
    MockCase("claude/captures/f_usage_limit/run1_subscriber_five_hour", "usage_limit", MOCK,
             "five_hour"),
    MockCase("claude/captures/f_usage_limit/run2_subscriber_seven_day", "usage_limit", MOCK,
             "seven_day"),
    MockCase("claude/captures/f_usage_limit/run3_subscriber_plain_429", "rate_limit", 1.0),
    # The headers say the subscription window is full; Claude Code with an API key
    # ignores them, Relay does not.
    MockCase("claude/captures/f_usage_limit/run4_apikey_unified_429", "usage_limit", MOCK,
             "five_hour"),
    MockCase("codex/captures/c2_sse_rate_limit_then_ok", "rate_limit"),
    MockCase("codex/captures/c4_http429_retry_after_only", "rate_limit", 4.0),
    MockCase("codex/captures/c5_http429_message_hint_only", "rate_limit"),
    MockCase("codex/captures/c_http429_rate_limit", "rate_limit", 2.0),  # retry-after-ms
    # x-codex-primary-used-percent: 100 names the window; error.resets_at (Dec 3) is the reset.
    MockCase("codex/captures/d2_usage_limit_plus_other_day", "usage_limit", MOCK, "five_hour"),
    MockCase("codex/captures/d3_usage_limit_team", "usage_limit", MOCK),
    MockCase("codex/captures/d4_usage_limit_no_reset_info", "usage_limit", 3600.0),
    MockCase("codex/captures/d5_usage_limit_in_sse", "usage_limit", MOCK),
    MockCase("codex/captures/d6_insufficient_quota_sse", "quota"),
    MockCase("codex/captures/d_usage_limit_pro", "usage_limit", MOCK, "five_hour"),
    MockCase("codex/captures/e2_http503_server_is_overloaded", "overloaded"),
    MockCase("codex/captures/e3_http503_plain_then_ok", "overloaded"),
    MockCase("codex/captures/e_http500_retries", "overloaded"),
    MockCase("gemini/captures/c2_429_rate_limit_exhausted", "rate_limit", 2.0, "per_minute"),
    MockCase("gemini/captures/c3_429_plain", "rate_limit"),
    # RetryInfo says 43s, but a per-day quota is terminal (gemini-cli ignores it too).
    MockCase("gemini/captures/d_429_daily_quota", "quota", None, "daily"),
    MockCase("gemini/captures/d3_429_capacity_exhausted", "overloaded", 1.0),
    MockCase("gemini/captures/e_503_overloaded", "overloaded"),
    MockCase("gemini/captures/e2_500_then_ok", "overloaded"),
    MockCase("pi/captures/c2_429_exhausted", "rate_limit", 1.0),
    MockCase("pi/captures/d2_insufficient_quota", "quota"),
    MockCase("pi/captures/d_usage_limit_codex_style", "usage_limit", MOCK),
    MockCase("pi/captures/e_503_overloaded", "overloaded"),
]


@pytest.mark.parametrize("case", MOCK_CASES, ids=[c.folder for c in MOCK_CASES])
def test_mock_server_fields(case: MockCase) -> None:
    folder = ROOT / case.folder
    (step, *_) = _mock_steps(folder)
    now = _last_request_time(folder / "requests.jsonl")
    structured = {"headers": _resolve_headers(step["headers"], now)}
    if step["body"] is not None:
        structured["error"] = step["body"]
    signal = classify(None, http_status=step["status"], structured=structured,
                      provider=case.folder.split("/")[0], now=now, tz=UTC)
    assert signal.kind == case.kind
    assert signal.source == ("http_status" if step["body"] is None else "structured")
    assert signal.scope == case.scope
    if case.reset is None:
        assert (signal.resets_at, signal.retry_after) == (None, None)
    elif case.reset == MOCK:
        report = Report(case.folder.split("/")[0], "", "", None, now=now, folder=folder)
        assert signal.reset_source == "structured"
        assert abs(signal.resets_at - mock_reset(report)) <= timedelta(seconds=1)  # type: ignore[operator]
    else:
        assert signal.retry_after == case.reset
        assert signal.resets_at == now + timedelta(seconds=float(case.reset))


# ---------------------------------------------------------------------------
# Part 3: every wording variant, with a fixed clock
# ---------------------------------------------------------------------------

NOW = datetime(2026, 11, 30, 10, 5, tzinfo=UTC)  # a Monday; 11:05 in Rome, 05:05 in New York
NEW_YORK = ZoneInfo("America/New_York")


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
       second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


@dataclass(frozen=True)
class Wording:
    text: str
    kind: str
    resets_at: datetime | None = None
    retry_after: float | None = None
    scope: str | None = None
    tz: tzinfo | None = UTC
    http_status: int | None = None


WORDINGS = [
    # Claude Code 2.1.x, from the captures and the public tracker
    Wording("You've hit your session limit · resets 12:05pm (UTC)", "usage_limit",
            at(2026, 11, 30, 12, 5), scope="five_hour"),
    Wording("You’ve hit your session limit · resets 12:05pm (UTC)", "usage_limit",
            at(2026, 11, 30, 12, 5), scope="five_hour"),
    Wording("You've hit your session limit · resets 8:50am (UTC)", "usage_limit",
            at(2026, 12, 1, 8, 50), scope="five_hour"),  # already past today: tomorrow
    Wording("You've hit your weekly limit · resets Dec 3, 10:05am (UTC)", "usage_limit",
            at(2026, 12, 3, 10, 5), scope="seven_day"),
    Wording("You've hit your weekly limit · resets Sep 18 at 3am (America/Los_Angeles)",
            "usage_limit", at(2027, 9, 18, 10, 0), scope="seven_day"),
    Wording("weekly limit · resets Sep 18 at 3am (America/Los_Angeles)", "usage_limit",
            at(2027, 9, 18, 10, 0), scope="seven_day"),
    Wording("You've hit your 5-hour limit · resets 4:50am (Europe/Rome)", "usage_limit",
            at(2026, 12, 1, 3, 50), scope="five_hour"),
    Wording("You've hit your limit · resets 4:50am (Europe/Rome)", "usage_limit",
            at(2026, 12, 1, 3, 50)),
    Wording("You've hit your Opus limit · resets 9pm (Asia/Tokyo)", "usage_limit",
            at(2026, 11, 30, 12, 0), scope="seven_day_opus"),
    Wording("You've hit your session limit · resets 5:20am (America/Denver)\n"
            "     /usage-credits to finish what you’re working on.", "usage_limit",
            at(2026, 11, 30, 12, 20), scope="five_hour"),
    Wording("You've reached your Fable limit.", "usage_limit", scope="fable"),
    # A named zone wins over the process zone.
    Wording("You've hit your session limit · resets 12:05pm (UTC)", "usage_limit",
            at(2026, 11, 30, 12, 5), scope="five_hour", tz=NEW_YORK),
    # Claude Code 1.x
    Wording("Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).",
            "usage_limit", at(2026, 11, 30, 16, 0)),
    Wording("Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).",
            "usage_limit", at(2026, 11, 30, 18, 0)),
    Wording("Claude AI usage limit reached|1760000400", "usage_limit", at(2025, 10, 9, 9, 0)),
    Wording("5-hour limit reached ∙ resets 3pm", "usage_limit", at(2026, 11, 30, 20, 0),
            scope="five_hour", tz=NEW_YORK),
    Wording("Session limit reached ∙ resets 9:30pm", "usage_limit", at(2026, 11, 30, 20, 30),
            scope="five_hour", tz=ZoneInfo("Europe/Berlin")),
    Wording("Opus weekly limit reached ∙ resets Oct 31, 9am", "usage_limit",
            at(2027, 10, 31, 9, 0), scope="seven_day_opus"),
    Wording("5-hour limit reached · resets 2am (America/Toronto) · /upgrade to Max 20x or "
            "turn on /extra-usage", "usage_limit", at(2026, 12, 1, 7, 0), scope="five_hour"),
    Wording("You’ve hit your limit for Claude messages. Limits will reset at 9:30 AM.",
            "usage_limit", at(2026, 12, 1, 9, 30)),
    # Claude Code failures
    Wording("API Error: Repeated 529 Overloaded errors. The API is at capacity — this is "
            "usually temporary. Try again in a moment.", "overloaded"),
    Wording("API Error: 529 Overloaded. This is a server-side issue, usually temporary — try "
            "again in a moment.", "overloaded", http_status=529),
    Wording("API Error: Request rejected (429) · This request would exceed the rate limit for "
            "your organization (mock-org) of 50 requests per minute.", "rate_limit"),
    Wording("API Error: Server is temporarily limiting requests (not your usage limit) · Error",
            "rate_limit", http_status=429),
    Wording("API Error: 400 messages.0.content: mock invalid request (field required)",
            "invalid_request"),
    Wording("Invalid API key · Fix external API key", "auth"),
    Wording("Your credit balance is too low to access the Anthropic API.", "quota",
            http_status=400),
    Wording("API Error: Unable to connect to API (ConnectionRefused)", "network"),
    Wording("API Error: Connection refused — a firewall or proxy may be blocking it "
            "(ECONNREFUSED)", "network"),
    Wording("Request timed out", "timeout"),
    Wording("Request timed out. If the API is slow to answer, or a proxy or gateway holds "
            "responses, set API_TIMEOUT_MS above 3000.", "timeout"),
    Wording("API Error: Claude Code is unable to respond to this request, which appears to "
            "violate our Usage Policy (https://www.anthropic.com/legal/aup). Please double "
            "press esc to edit your last message.", "refusal"),
    # Codex CLI (the process zone formats the time; a bare time is today)
    Wording("You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase "
            "more credits or try again at 1:08 PM.", "usage_limit", at(2026, 11, 30, 13, 8)),
    Wording("You've hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase "
            "more credits or try again at 1:08 PM.", "usage_limit", at(2026, 11, 30, 18, 8),
            tz=NEW_YORK),
    Wording("You’ve hit your usage limit. To get more access now, send a request to your admin "
            "or try again at 9:38 AM.", "usage_limit", at(2026, 11, 30, 9, 38)),  # today
    Wording("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), "
            "visit https://chatgpt.com/settings/usage to purchase more credits or try again at "
            "Dec 3rd, 2026 10:08 AM.", "usage_limit", at(2026, 12, 3, 10, 8)),
    Wording("You've hit your usage limit. Upgrade to Plus to continue using Codex "
            "(https://chatgpt.com/explore/plus), or try again at May 11th, 2027 1:36 PM.",
            "usage_limit", at(2027, 5, 11, 11, 36), tz=ZoneInfo("Europe/Paris")),
    Wording("You have reached the usage limit. Upgrade or add credits to continue, or try "
            "again after September 6, 2026, 11:15.", "usage_limit", at(2026, 9, 6, 11, 15)),
    Wording("You’ve hit your usage limit. Try again later.", "usage_limit"),
    Wording("■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) "
            "or try again in 5 days 22 hours 11\nminutes.", "usage_limit",
            NOW + timedelta(days=5, hours=22, minutes=11), 511860.0),
    Wording("🖐  You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) "
            "or try again in 3 hours 2 minutes.", "usage_limit",
            NOW + timedelta(hours=3, minutes=2), 10920.0),
    Wording("🖐 You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing), "
            "or wait for limits to reset (every 5h and every week.).", "usage_limit"),
    # Not understood, not guessed: the kind is known, the time is not.
    Wording("You've hit your usage limit. Upgrade your plan to continue, or try again at "
            "10 de jul. de 2026, 11:52.", "usage_limit"),
    Wording("stream disconnected before completion: The usage limit has been reached",
            "usage_limit"),
    Wording("Quota exceeded. Check your plan and billing details.", "quota"),
    Wording("rate limit exceeded: Rate limit reached for gpt-5.5 on tokens per min (TPM). "
            "Please try again in 1.5s.", "rate_limit", NOW + timedelta(seconds=1.5), 1.5),
    Wording("Rate limit reached. Please try again in 3s.", "rate_limit",
            NOW + timedelta(seconds=3), 3.0),
    Wording("Rate limit reached for gpt-5.5. Please try again in 1m30s.", "rate_limit",
            NOW + timedelta(seconds=90), 90.0),
    Wording("Rate limit reached for gpt-5.5. Please try again in 250ms.", "rate_limit",
            NOW + timedelta(milliseconds=250), 0.25),
    Wording("exceeded retry limit, last status: 429 Too Many Requests, request id: r1",
            "rate_limit"),
    Wording("Selected model is at capacity. Please try a different model.", "overloaded"),
    Wording("We’re currently experiencing high demand, which may cause temporary errors.",
            "overloaded"),
    Wording("We're currently experiencing high demand, which may cause temporary errors.",
            "overloaded"),
    Wording("unexpected status 503 Service Unavailable: upstream connect error", "overloaded"),
    Wording("unexpected status 401 Unauthorized: bad key", "auth"),
    Wording("stream disconnected before completion: idle timeout waiting for SSE", "network"),
    # Gemini CLI
    Wording("[API Error: You exceeded your current quota, please check your plan and billing "
            "details. For more information on this error, head to: https://ai.google.dev/"
            "gemini-api/docs/rate-limits.\nSuggested retry after 2s.]\nPlease wait and try again "
            "later. To increase your limits, request a quota increase through AI Studio, or "
            "switch to another /auth method", "rate_limit", NOW + timedelta(seconds=2), 2.0),
    Wording("[API Error: You have exhausted your daily quota on this model.]\nPlease wait and "
            "try again later.", "quota", scope="daily"),
    Wording("You have reached your daily gemini-2.5-pro quota limit.", "quota", scope="daily"),
    Wording("[API Error: No capacity available for model gemini-2.5-pro on the server]\nPlease "
            "wait and try again later. To increase your limits, request a quota increase "
            "through AI Studio", "overloaded"),
    Wording("[API Error: The model is overloaded. Please try again later.]", "overloaded"),
    Wording("Resource has been exhausted (e.g. check quota).", "rate_limit", http_status=429),
    Wording("You have exhausted your capacity on this model. Your quota will reset after "
            "2h10m46s.", "usage_limit", NOW + timedelta(seconds=7846), 7846.0),
    # "Retrying after 6173ms" is the CLI's own backoff, not the server's.
    Wording("Attempt 1 failed: You have exhausted your capacity on this model. Your quota will "
            "reset after 0s.. Retrying after 6173ms...", "usage_limit", NOW, 0.0),
    Wording("Attempt 2 failed: The model is overloaded. Please try again later.. Retrying after "
            "5829ms...", "overloaded"),
    Wording("When using Gemini API, you must specify the GEMINI_API_KEY environment variable.",
            "auth"),
    # pi: "<status> <message>"
    Wording("429 Rate limit reached for requests. Please try again in 1s.", "rate_limit",
            NOW + timedelta(seconds=1), 1.0),
    Wording("429 The usage limit has been reached", "usage_limit"),
    Wording("429 You exceeded your current quota, please check your plan and billing details.",
            "quota"),
    Wording("503 The server is overloaded. Please try again later.", "overloaded"),
    Wording("500 The server had an error while processing your request.", "overloaded"),
    # Relay's own watchdog, and crashes
    Wording("The agent printed nothing for 300 s.", "inactivity"),
    Wording("thread 'main' panicked at core/src/codex.rs:12:5:\nindex out of bounds", "crash"),
    Wording("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
            "crash"),
]


@pytest.mark.parametrize("wording", WORDINGS, ids=[w.text[:60] for w in WORDINGS])
def test_wording(wording: Wording) -> None:
    signal = classify(wording.text, http_status=wording.http_status, provider="any", now=NOW,
                      tz=wording.tz)
    assert signal.kind == wording.kind
    assert signal.resets_at == wording.resets_at
    assert signal.retry_after == wording.retry_after
    assert signal.scope == wording.scope
    assert signal.text == wording.text
    assert signal.source in (("text", "http_status") if wording.http_status else ("text",))
    assert signal.reset_source == ("none" if wording.resets_at is None else "text")


def test_http_status_is_read_from_the_wording() -> None:
    def status(text: str) -> int | None:
        return classify(text, provider="x", now=NOW, tz=UTC).http_status

    assert status("exceeded retry limit, last status: 429 Too Many Requests") == 429
    assert status("unexpected status 503 Service Unavailable: upstream") == 503
    assert status("API Error: 500 Internal server error.") == 500
    assert status("API Error: Request rejected (429) · Error") == 429
    assert status("Attempt 1 failed with status 503") == 503
    assert status("503 The server is overloaded.") == 503
    assert status("Request timed out") is None
    given = classify("503 x", http_status=500, provider="x", now=NOW, tz=UTC)
    assert (given.http_status, given.source) == (500, "http_status")


def test_usage_limit_wording_needs_a_429_or_no_status() -> None:
    """Like Claude Code: a usage-limit text with a 5xx status is an overload."""
    text = "You've hit your session limit · resets 12:05pm (UTC)"
    assert classify(text, http_status=429, provider="claude", now=NOW, tz=UTC).kind \
        == "usage_limit"
    signal = classify(text, http_status=500, provider="claude", now=NOW, tz=UTC)
    assert (signal.kind, signal.source) == ("overloaded", "http_status")
    assert signal.resets_at == at(2026, 11, 30, 12, 5)  # the time is still what it says


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
        classify("x", provider="x", now=datetime(2026, 11, 30, 10, 5), tz=UTC)


def test_reset_is_returned_in_utc() -> None:
    rome_now = NOW.astimezone(ZoneInfo("Europe/Rome"))
    signal = classify("You've hit your limit · resets 4:50am (Europe/Rome)", provider="claude",
                      now=rome_now, tz=None)
    assert signal.resets_at is not None
    assert signal.resets_at.tzinfo is UTC
    assert signal.resets_at == at(2026, 12, 1, 3, 50)


# ---------------------------------------------------------------------------
# Structured fields
# ---------------------------------------------------------------------------


def fields(structured: dict[str, Any], text: str | None = None,
           status: int | None = None) -> Signal:
    return classify(text, http_status=status, structured=structured, provider="x", now=NOW,
                    tz=UTC)


def test_claude_rate_limit_event() -> None:
    info = {"status": "rejected", "resetsAt": 1796040330, "rateLimitType": "five_hour",
            "overageStatus": "rejected"}
    for structured in ({"rate_limit_info": info}, info):  # nested or the info itself
        signal = fields(structured)
        assert (signal.kind, signal.scope, signal.source, signal.reset_source) == (
            "usage_limit", "five_hour", "structured", "structured")
        assert signal.resets_at == at(2026, 11, 30, 12, 5, 30)
    bare = fields({"rate_limit_info": {"status": "rejected", "isUsingOverage": False}})
    assert (bare.kind, bare.resets_at, bare.scope) == ("rate_limit", None, None)
    allowed = fields({"rate_limit_info": {**info, "status": "allowed"}})
    assert (allowed.kind, allowed.resets_at) == ("unknown", None)


def test_structured_reset_wins_over_the_wording() -> None:
    signal = fields({"rate_limit_info": {"status": "rejected", "resetsAt": 1796040330,
                                         "rateLimitType": "five_hour"}},
                    "You've hit your session limit · resets 1pm (UTC)", 429)
    assert signal.resets_at == at(2026, 11, 30, 12, 5, 30)
    assert signal.reset_source == "structured"


def test_newer_claude_api_error_fields() -> None:
    assert fields({"api_error": "usage_limit_reached"}, "Error", 429).kind == "usage_limit"
    assert fields({"api_error_type": "connection_failed"}, "x").kind == "network"
    assert fields({"api_error": "overloaded_error"}, "x").kind == "overloaded"


def test_the_assistant_error_hint_is_a_last_resort() -> None:
    assert fields({"assistant_error": "rate_limit"}, "odd").kind == "rate_limit"
    assert fields({"error": "authentication_failed"}, "odd").kind == "auth"
    assert fields({"assistant_error": "server_error"}, "Request timed out").kind == "timeout"
    assert fields({"assistant_error": "unknown"}, "odd").kind == "unknown"


def test_headers() -> None:
    signal = fields({"headers": {"Retry-After": "120"}}, status=429)
    assert (signal.kind, signal.retry_after, signal.resets_at) == (
        "rate_limit", 120.0, NOW + timedelta(seconds=120))
    dated = fields({"headers": {"retry-after": "Mon, 30 Nov 2026 10:07:00 GMT"}}, status=503)
    assert (dated.kind, dated.retry_after) == ("overloaded", 120.0)
    millis = fields({"headers": {"retry-after-ms": "1500", "retry-after": "2"}})
    assert millis.retry_after == 1.5
    unified = fields({"headers": {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": "1796040330",
        "anthropic-ratelimit-unified-representative-claim": "seven_day_opus"}}, status=429)
    assert (unified.kind, unified.scope, unified.resets_at) == (
        "usage_limit", "seven_day_opus", at(2026, 11, 30, 12, 5, 30))
    unnamed = fields({"headers": {"anthropic-ratelimit-unified-status": "rejected"}})
    assert unnamed.kind == "rate_limit"
    warning = fields({"headers": {"anthropic-ratelimit-unified-status": "allowed_warning",
                                  "anthropic-ratelimit-unified-reset": "1796040330"}})
    assert (warning.kind, warning.resets_at) == ("unknown", None)


def test_codex_windows() -> None:
    headers = {"x-codex-primary-used-percent": "100", "x-codex-primary-window-minutes": "300",
               "x-codex-primary-reset-at": "1796044119",
               "x-codex-secondary-used-percent": "47", "x-codex-secondary-window-minutes": "10080",
               "x-codex-secondary-reset-at": "1796433319"}
    signal = fields({"headers": headers})
    assert (signal.kind, signal.scope, signal.resets_at) == (
        "usage_limit", "five_hour", at(2026, 11, 30, 13, 8, 39))
    # The wording agrees to the minute: the window adds its seconds.
    agreed = fields({"headers": headers}, "You’ve hit your usage limit. Visit x or try again "
                    "at 1:08 PM.")
    assert (agreed.resets_at, agreed.reset_source) == (at(2026, 11, 30, 13, 8, 39), "structured")
    # Both windows full: usable when the later one empties.
    both = fields({"rate_limits": {
        "primary": {"used_percent": 100.0, "window_minutes": 300, "resets_at": 1796044119},
        "secondary": {"used_percent": 100.0, "window_minutes": 10080, "resets_at": 1796433319}}})
    assert (both.kind, both.scope, both.resets_at) == (
        "usage_limit", "five_hour", datetime.fromtimestamp(1796433319, UTC))
    not_full = fields({"rate_limits": {"primary": {"used_percent": 42.5, "resets_at": 1796040592}}})
    assert (not_full.kind, not_full.resets_at) == ("unknown", None)


def test_api_error_bodies() -> None:
    body = {"type": "usage_limit_reached", "plan_type": "pro", "resets_at": 1796044119,
            "resets_in_seconds": 10800}
    signal = fields({"error": body}, status=429)
    assert (signal.kind, signal.resets_at, signal.retry_after) == (
        "usage_limit", at(2026, 11, 30, 13, 8, 39), 10800.0)
    relative = fields({"error": {"type": "usage_limit_reached", "resets_in_seconds": 3600}})
    assert relative.resets_at == NOW + timedelta(hours=1)
    assert fields({"error": {"code": "insufficient_quota"}}).kind == "quota"
    assert fields({"error": {"type": "server_error", "code": "server_is_overloaded"}}).kind \
        == "overloaded"
    assert fields({"error": {"type": "authentication_error"}}).kind == "auth"


def test_codex_error_info() -> None:
    assert fields({"codex_error_info": "usage_limit_exceeded"}).kind == "usage_limit"
    assert fields({"codexErrorInfo": "usageLimitExceeded"}).kind == "usage_limit"
    assert fields({"codex_error_info": "server_overloaded"}).kind == "overloaded"
    assert fields({"codex_error_info": {"response_too_many_failed_attempts": {
        "http_status_code": 429}}}).kind == "rate_limit"
    assert fields({"codex_error_info": "other"}, "Missing environment variable: `K`.").kind \
        == "unknown"
    # Codex files "Quota exceeded" under usage_limit_exceeded; the wording is more precise.
    assert fields({"codex_error_info": "usage_limit_exceeded"},
                  "Quota exceeded. Check your plan and billing details.").kind == "quota"


def test_google_error_details() -> None:
    def detail(quota_id: str, delay: str = "2s") -> dict[str, Any]:
        return {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
             "violations": [{"quotaId": quota_id}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}}

    minute = fields(detail("GenerateRequestsPerMinutePerProjectPerModel"))
    assert (minute.kind, minute.scope, minute.retry_after) == ("rate_limit", "per_minute", 2.0)
    day = fields(detail("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "43s"))
    assert (day.kind, day.scope, day.retry_after, day.resets_at) == ("quota", "daily", None, None)
    capacity = fields({"error": {"status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "MODEL_CAPACITY_EXHAUSTED"}]}})
    assert capacity.kind == "overloaded"
    assert fields({"error": {"status": "UNAVAILABLE"}}).kind == "overloaded"


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


@pytest.mark.parametrize(("kind", "category", "limit"), [
    ("usage_limit", "usage_limit", "usage_limit"), ("quota", "usage_limit", "quota"),
    ("rate_limit", "rate_limit", "rate_limit"), ("overloaded", "overloaded", "overloaded"),
    ("auth", "auth", None), ("invalid_request", "request", None), ("refusal", "request", None),
    ("crash", "process", None), ("inactivity", "stalled", None), ("network", "network", None),
    ("timeout", "timeout", None), ("unknown", "unknown", None),
])
def test_event_mappings(kind: Any, category: str, limit: str | None) -> None:
    signal = Signal(kind=kind, provider="x")
    assert error_category(signal) == category
    assert limit_kind(signal) == limit
    assert signal.is_limit == (limit is not None)


# ---------------------------------------------------------------------------
# Part 4: unknown wording is kept, never guessed
# ---------------------------------------------------------------------------


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
