"""relay-cli's feature commands against a live host in another process (``relay-cli serve``):
each goes through the host's API, not a store of its own.

The commands run with ``RELAY_CONNECT`` (and ``RELAY_TOKEN``) and a data folder of their own
that stays empty — so whatever they read or change is the host's, and the host's process
does the work: the pipeline run's steps and an adopted session run there. One host serves
the whole module.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from relay.api.client import RelayClient
from relay.core.hostfile import read_host, read_token
from tests.api.test_host_process import _serve, _stop
from tests.cli.test_pipeline_cli import THREE
from tests.conftest import FAKES_DIR, make_repo
from tests.detect.test_adopt import claude_transcript, user_repo

CLI = [sys.executable, "-m", "relay.cli.main"]


@dataclass
class Hosted:
    home: Path
    url: str
    token: str
    proc: subprocess.Popen[str]
    env: dict[str, str]
    #: the commands' own data folder: it must stay empty
    elsewhere: Path

    def cli(self, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*CLI, *args], capture_output=True, text=True, input=stdin,
                              timeout=120, check=False,
                              env={**self.env, "RELAY_HOME": str(self.elsewhere),
                                   "RELAY_CONNECT": self.url, "RELAY_TOKEN": self.token,
                                   "COLUMNS": "200", **env})
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        assert not any(self.elsewhere.iterdir()), list(self.elsewhere.iterdir())
        return done

    def client(self) -> RelayClient:
        return RelayClient(self.url, self.token)


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    root = tmp_path_factory.mktemp("hosted")
    home, elsewhere = root / "host-home", root / "client-home"
    elsewhere.mkdir()
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0", "RELAY_WALLET_DEFAULT_FOLDERS": "0",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
           "RELAY_VAULT_PASSPHRASE": "hosted-test-passphrase", "HOME": str(root / "user"),
           "PATH": f"{FAKES_DIR / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = _serve(home, env)
    info, token = read_host(home), read_token(home)
    assert info is not None
    assert token
    try:
        yield Hosted(home, info.url, token, proc, env, elsewhere)
    finally:
        if proc.poll() is None:
            _stop(proc)


def test_wallet_accounts_budgets_and_knowledge_go_through_the_host(
        hosted: Hosted, tmp_path: Path) -> None:
    folder = tmp_path / "claude-work"
    folder.mkdir()
    assert hosted.cli("accounts", "add", "claude", "work", "--config-dir",
                      str(folder)).returncode == 0
    listed = json.loads(hosted.cli("accounts", "list", "--json").stdout)
    assert [a["entry"] for a in listed] == ["claude:work"]
    assert hosted.cli("budget", "set", "day", "30", "--account", "claude:work").returncode == 0
    budgets = json.loads(hosted.cli("budget", "list", "--json").stdout)["budgets"]
    assert [(b["scope"], b["entry"], b["limit_usd"]) for b in budgets] == [
        ("day", "claude:work", 30.0)]
    # in the host's own data folder, without RELAY_CONNECT: the live host is found and asked
    same = subprocess.run([*CLI, "budget", "list", "--json"], capture_output=True, text=True,
                          timeout=120, check=False, env={**hosted.env, "RELAY_HOME": str(hosted.home)})
    assert json.loads(same.stdout)["budgets"] == budgets, same.stderr
    host = read_host(hosted.home)
    assert host is not None
    assert host.pid == hosted.proc.pid

    line = hosted.cli("statusline", stdin=json.dumps({"rate_limits": {"five_hour": {
        "used_percentage": 42, "resets_at": 2_000_000_000}}}), CLAUDE_CONFIG_DIR=str(folder))
    assert line.stdout.strip() == "claude:work · 5h 42%", line.stdout + line.stderr
    wallet = json.loads(hosted.cli("wallet", "--json").stdout)
    five_hour = [w for v in wallet if v["entry"] == "claude:work" for w in v["windows"]
                 if w["kind"] == "five_hour"]
    assert [w["used"]["value"] for w in five_hour] == [0.42]  # the reading the host recorded
    usage = hosted.cli("usage", "--json")
    assert usage.returncode == 0, usage.stderr
    assert "rows" in json.loads(usage.stdout)
    resumed = hosted.cli("accounts", "resume", "claude", "work")
    assert "claude:work resumed." in resumed.stdout, resumed.stderr

    stats = hosted.cli("knowledge", "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert str(hosted.home) in json.loads(stats.stdout)["path"]
    assert hosted.cli("detect", "--json").returncode == 0


def test_a_pipeline_run_is_driven_by_the_host(hosted: Hosted, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    source = tmp_path / "ship.json"
    source.write_text(json.dumps(THREE))
    assert hosted.cli("pipeline", "import", str(source), "--repo", str(repo)).returncode == 0
    run = hosted.cli("pipeline", "run", "ship", "--repo", str(repo))
    assert run.returncode == 0, run.stdout + run.stderr
    flat = " ".join(run.stdout.split())
    assert "review: result saved by the host" in flat  # the host's pid, not this process's
    assert "this process" not in flat
    runs = json.loads(hosted.cli("pipeline", "status", "--json").stdout)
    assert [(r["name"], r["state"]) for r in runs][:1] == [("ship", "succeeded")]
    steps = {s["id"]: s["session"] for s in runs[0]["steps"]}
    timeline = json.loads(hosted.cli("history", steps["review"], "--json").stdout)
    assert timeline["session_id"] == steps["review"]

    verified = hosted.cli("audit", "verify", "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["ok"] is True
    shown = [json.loads(x) for x in hosted.cli("audit", "show", "--json").stdout.splitlines()]
    assert steps["review"] in {e["data"].get("session_id") for e in shown}  # the host's log


def test_adopt_runs_the_session_in_the_host(hosted: Hosted, fixtures_dir: Path,
                                            tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "project")
    config = tmp_path / "claude-adopt"
    transcript = claude_transcript(fixtures_dir, config, repo)
    assert hosted.cli("accounts", "add", "claude", "adopt", "--config-dir",
                      str(config)).returncode == 0
    done = hosted.cli("adopt", transcript.stem[:12], "--to", "demo")
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert f"adopted claude:{transcript.stem}" in said
    sid = said.split(" as session ")[1].split()[0]

    async def in_the_host() -> tuple[str, str]:
        async with hosted.client() as client:
            row = await client.get_session(sid)
            return row.state, row.task

    state, task = asyncio.run(in_the_host())
    assert state == "completed"
    assert "Add a greeting module" in task
    finished = json.loads(hosted.cli("finish", sid, "--json").stdout)
    assert finished["session_id"] == sid
