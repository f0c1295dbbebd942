"""A cloned repository's pipeline file shows what it runs and asks first (issue 18, item 10).

``validate`` and ``list`` show every command; ``run`` asks before the first run of a file
whose commands were not accepted (per SHA-256 of the file, in the data folder), refuses
where nobody can answer unless ``--trust``, and asks again once the file changes.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from relay.pipelines import files
from tests.cli.test_cli import CLI, assert_no_traceback, cli
from tests.conftest import make_repo

MARKER = "relay-trust-marker"
HOSTILE: dict[str, Any] = {"name": "ci", "nodes": [
    {"id": "build", "provider": "demo", "task": "build it",
     "verify": [f"python3 -c \"open('{MARKER}', 'w').write('ran')\""]},
    {"id": "check", "provider": "demo", "task": "check", "dependsOn": ["build"],
     "verify": ["true"]}]}


def _repo(tmp_path: Path, pipeline: dict[str, Any] = HOSTILE) -> Path:
    repo = make_repo(tmp_path / "repo")
    path = files.pipelines_path(repo)
    path.parent.mkdir()
    path.write_text(json.dumps({"pipelines": [pipeline]}))
    return repo


def _runs() -> list[object]:
    runs: list[object] = json.loads(cli("pipeline", "status", "--json").stdout)
    return runs


def test_validate_and_list_show_every_command(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    shown = cli("pipeline", "validate", str(files.pipelines_path(repo)))
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert f"runs: build verify[0]: python3 -c \"open('{MARKER}', 'w').write('ran')\"" in text
    assert "runs: check verify[0]: true" in text
    listed = json.loads(cli("pipeline", "list", "--repo", str(repo), "--json").stdout)
    assert listed[0]["commands"] == [
        {"node": "build", "field": "verify[0]", "line": HOSTILE["nodes"][0]["verify"][0],
         "argv": ["python3", "-c", f"open('{MARKER}', 'w').write('ran')"]},
        {"node": "check", "field": "verify[0]", "line": "true", "argv": ["true"]}]
    table = " ".join(cli("pipeline", "list", "--repo", str(repo)).stdout.split())
    assert "check: true" in table


def test_a_run_with_nobody_to_ask_is_refused_until_trusted_and_again_after_a_change(
        tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    refused = cli("pipeline", "run", "ci", "--repo", str(repo))
    assert refused.returncode != 0
    assert_no_traceback(refused)
    assert "nobody has accepted yet" in refused.stderr
    assert "$ ci · check · verify[0]: true" in refused.stderr
    assert "--trust" in refused.stderr
    assert _runs() == []  # nothing started, nothing ran
    assert not (repo / MARKER).exists()

    ran = cli("pipeline", "run", "ci", "--repo", str(repo), "--trust")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    again = cli("pipeline", "run", "ci", "--repo", str(repo))  # the same file: remembered
    assert again.returncode == 0, again.stdout + again.stderr

    changed = dict(HOSTILE, description="one more thing")
    files.pipelines_path(repo).write_text(json.dumps({"pipelines": [changed]}))
    after = cli("pipeline", "run", "ci", "--repo", str(repo))
    assert after.returncode != 0
    assert "nobody has accepted yet" in after.stderr
    assert len(_runs()) == 2


def test_pipeline_trust_accepts_a_file_without_running_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    accepted = cli("pipeline", "trust", "ci", "--repo", str(repo))
    assert accepted.returncode == 0, accepted.stderr
    assert "Accepted the 2 command(s)" in " ".join(accepted.stdout.split())
    assert _runs() == []
    ran = cli("pipeline", "run", "ci", "--repo", str(repo))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_a_file_without_commands_needs_no_answer(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"name": "ci", "nodes": [{"id": "a", "provider": "demo", "task": "x"}]})
    ran = cli("pipeline", "run", "ci", "--repo", str(repo))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def _at_terminal(args: list[str], answer: str, timeout: float = 60) -> tuple[int, str]:
    """Run relay-cli on a pseudo-terminal; type ``answer`` once it asks."""
    leader, follower = pty.openpty()
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "160"}
    proc = subprocess.Popen([*CLI, *args], stdin=follower, stdout=follower, stderr=follower,
                            env=env, close_fds=True)
    os.close(follower)
    out = b""
    answered = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:
                    break  # the terminal closed: the process ended
                if not chunk:
                    break
                out += chunk
                if not answered and b"[y/N]" in out:
                    os.write(leader, answer.encode() + b"\n")
                    answered = True
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    return code, re.sub(r"\x1b\[[0-9;]*m", "", out.decode(errors="replace"))


def test_at_a_terminal_the_commands_are_listed_and_the_answer_decides(tmp_path: Path) -> None:
    assert sys.platform != "win32"
    repo = _repo(tmp_path)
    code, out = _at_terminal(["pipeline", "run", "ci", "--repo", str(repo)], "n")
    assert code != 0
    assert "ci · check · verify[0]: true" in out
    assert "Not run" in out
    assert _runs() == []
    code, out = _at_terminal(["pipeline", "run", "ci", "--repo", str(repo)], "y")
    assert code == 0, out
    assert "Run" in out
    assert "succeeded" in out
    again = cli("pipeline", "run", "ci", "--repo", str(repo))  # remembered for this file
    assert again.returncode == 0, again.stdout + again.stderr
