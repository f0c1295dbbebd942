"""Reading the failure reports out of the recorded captures (tests/fixtures).

Every failure report of every capture of claude, codex, gemini and pi (result lines,
turn.failed, retry notices, stderr, pi's errorMessage …) as a ``Report``: what Relay
would pass to classify(). Also what each capture's mock_script made the server say
(its error responses and the reset time they name). Shared by test_signals_captures
and test_signals_mock_servers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from relay.core.signals import Signal, classify
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
# What the capture's mock server was scripted to say
# ---------------------------------------------------------------------------

MOCK = "mock"  # resets_at is what the capture's mock_script made the server say


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
