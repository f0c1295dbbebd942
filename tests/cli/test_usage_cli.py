"""relay-cli usage: without a host it refreshes the index and reads its aggregate in its own
process (the engine and the API never imported); with one, the host answers — the same
table, including what was appended just before."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_host_process import _serve, _stop
from tests.cli.test_cli_startup import loaded_by
from tests.conftest import fixtures_root
from tests.wallet.conftest import claude_line

CLI = [sys.executable, "-m", "relay.cli.main"]
#: what the command without a host must not load (it would be the engine, hosting here)
ENGINE = ("relay.engine", "relay.api", "relay.sessions", "relay.runtimes", "uvicorn", "fastapi",
          "httpx", "aiosqlite")


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A default Claude folder with one recorded session, an empty HOME and data folder."""
    folder = tmp_path / "claude"
    shutil.copytree(fixtures_root() / "claude" / "captures" / "b_write_tool" / "config", folder)
    (tmp_path / "user").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("RELAY_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    monkeypatch.delenv("RELAY_CONNECT", raising=False)
    monkeypatch.setenv("RELAY_WALLET_DEFAULT_FOLDERS", "1")
    monkeypatch.setenv("TZ", "UTC")  # the table's days are local dates
    return folder


def usage_json() -> dict[str, Any]:
    done = subprocess.run([*CLI, "usage", "--json"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    table: dict[str, Any] = json.loads(done.stdout)
    return table


def append_call(folder: Path, output: int) -> None:
    (transcript,) = folder.glob("projects/*/*.jsonl")
    with transcript.open("ab") as handle:
        handle.write(claude_line("m-new", "r-new", "2026-11-30T12:00:00Z", output=output))


def test_usage_without_a_host_imports_neither_engine_nor_api(claude_home: Path,
                                                              tmp_path: Path) -> None:
    code, loaded, out = loaded_by("usage", "--json", heavy=ENGINE)
    assert code == 0, out
    assert loaded == []
    rows = json.loads(out)["rows"]
    assert rows
    assert rows[0]["models"] == ["claude-opus-4-8"]
    assert (tmp_path / "data" / "usage-index.sqlite").is_file()
    assert not (tmp_path / "data" / "host.json").exists()  # it did not host


def test_a_running_host_answers_the_same_table_with_what_was_appended(
        claude_home: Path, tmp_path: Path) -> None:
    alone = usage_json()
    host = _serve(tmp_path / "data")
    try:
        code, loaded, out = loaded_by("usage", "--json", heavy=(
            "relay.wallet.usage_local", "relay.api.client", "httpx", "relay.wallet.usage_report"))
        assert code == 0, out
        # asked the host in one loopback request (no API client), did not read the index here
        assert loaded == []
        assert json.loads(out) == alone
        append_call(claude_home, output=7_000)
        hosted = usage_json()
        # a refused quick request (a stale token here) takes the API client's way, which
        # explains what went wrong and what to do — no traceback, a non-zero exit
        (tmp_path / "data" / "api-token").write_text("not-the-hosts-token")
        bad = subprocess.run([*CLI, "usage", "--json"], capture_output=True, text=True,
                             timeout=120, check=False)
        assert bad.returncode != 0
        assert "refused the token" in bad.stdout + bad.stderr
        assert "Traceback" not in bad.stdout + bad.stderr
    finally:
        _stop(host)
    outputs = {r["day"]: r["tokens"]["output"] for r in alone["rows"]}
    outputs["2026-11-30"] = outputs.get("2026-11-30", 0) + 7_000
    assert {r["day"]: r["tokens"]["output"] for r in hosted["rows"]} == outputs
    assert usage_json() == hosted  # and without the host again: the same index, the same sums
