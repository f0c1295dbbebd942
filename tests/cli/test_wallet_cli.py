"""relay-cli usage and demo --quota, as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import fixtures_root

CLI = [sys.executable, "-m", "relay.cli.main"]


def relay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120,
                          check=False, env=os.environ.copy())


def expected_totals(transcript: Path) -> dict[str, int]:
    """The oracle: Claude's usage counted once per message.id + requestId."""
    seen: dict[tuple[str, str], dict[str, int]] = {}
    for line in transcript.read_text().splitlines():
        obj = json.loads(line)
        message = obj.get("message") or {}
        if obj.get("type") != "assistant" or message.get("model") == "<synthetic>":
            continue
        usage = message["usage"]
        seen[(message["id"], obj["requestId"])] = {
            "input": usage["input_tokens"], "output": usage["output_tokens"],
            "cache_write": usage.get("cache_creation_input_tokens", 0),
            "cache_read": usage.get("cache_read_input_tokens", 0)}
    return {k: sum(u[k] for u in seen.values()) for k in ("input", "output", "cache_write",
                                                           "cache_read")}


def test_usage_per_day_counts_each_message_once(tmp_path: Path) -> None:
    folder = tmp_path / "claude-work"
    shutil.copytree(fixtures_root() / "claude" / "captures" / "b_write_tool" / "config", folder)
    (transcript,) = folder.glob("projects/*/*.jsonl")
    added = relay("accounts", "add", "claude", "work", "--config-dir", str(folder))
    assert added.returncode == 0, added.stderr

    done = relay("usage", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert len(rows) == 1  # one day
    tokens = rows[0]["tokens"]
    want = expected_totals(transcript)
    assert {k: tokens[k] for k in want} == want
    assert rows[0]["models"] == ["claude-opus-4-8"]
    assert rows[0]["cost_source"] == "estimate"

    by_session = json.loads(relay("usage", "--by", "session", "--json").stdout)["rows"]
    assert [r["session"] for r in by_session] == [f"claude:work {transcript.stem}"]
    blocks = json.loads(relay("usage", "--by", "block", "--json").stdout)["rows"]
    assert sum(r["tokens"]["total"] for r in blocks) == sum(want.values())

    bad = relay("usage", "--since", "last tuesday")
    assert bad.returncode == 2
    assert "--since" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_demo_with_a_filling_window_hands_off_before_the_limit(vault_env: None) -> None:
    done = relay("demo", "--quota", "40,96,99", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    steps = [e for e in events if e["kind"] == "handoff_step"]
    assert steps[0]["reason"].startswith("pre-emptive: demo:primary's five-hour window")
    assert steps[-1]["state"] == "done"
    assert not [e for e in events if e["kind"] == "limit_hit"]
    bad = relay("demo", "--quota", "40,170")
    assert bad.returncode == 2
    assert "percentages between 0 and 100" in bad.stderr
