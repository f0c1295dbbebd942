"""The fake ``claude`` replays every capture byte for byte (modulo placeholders).

Each recorded run is re-run through the fake with its recorded argv, stdin and
environment; stdout, stderr and the exit code must equal the capture once the
placeholders (<CWD>, <CONFIG>, <PORT> …) are filled in the way the real CLI
would have filled them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES_DIR, fixtures_root, make_repo

CAPTURES = fixtures_root() / "claude" / "captures"
FAKE = FAKES_DIR / "bin" / "claude"
PORT = "43210"


def recorded_runs() -> list[tuple[str, dict[str, Any]]]:
    runs = []
    for scenario in sorted(CAPTURES.glob("*/scenario.json")):
        for run in json.loads(scenario.read_text())["runs"]:
            runs.append((scenario.parent.name, run))
    return runs


# run2_stdin_open_silent needs a pipe held open and silent for 3 s: its own test below.
RUNS = [(s, r) for s, r in recorded_runs() if r["label"] != "run2_stdin_open_silent"]


class Sandbox:
    """A fresh repo, config dir, HOME and TMPDIR like the recording harness used."""

    def __init__(self, root: Path) -> None:
        self.cwd = make_repo(root / "repo")
        self.config = root / "config"
        self.home = root / "home"
        self.tmp = root / "tmp"
        for folder in (self.config, self.home, self.tmp):
            folder.mkdir()

    def placeholders(self) -> dict[str, str]:
        cwd = str(self.cwd.resolve())
        return {"<CWD_ENCODED>": re.sub(r"[^A-Za-z0-9]", "-", cwd), "<CWD>": cwd,
                "<CONFIG>": str(self.config), "<HOME>": str(self.home),
                "<TMPDIR>": str(self.tmp), "<PORT>": PORT}

    def fill(self, text: str) -> str:
        for placeholder, value in self.placeholders().items():
            text = text.replace(placeholder, value)
        return text

    def env(self, recorded: dict[str, str], scenario: str) -> dict[str, str]:
        env = {k: self.fill(v) for k, v in recorded.items()}
        env["PATH"] = os.environ["PATH"]
        env["RELAY_FAKE_SCENARIO"] = scenario
        if "RELAY_FIXTURES" in os.environ:
            env["RELAY_FIXTURES"] = os.environ["RELAY_FIXTURES"]
        return env


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def run_fake(argv: list[str], sandbox: Sandbox, env: dict[str, str], stdin: str | None,
             sent: dict[str, Any] | None) -> subprocess.CompletedProcess[bytes]:
    """Run the fake like the harness ran the CLI (stdin /dev/null unless recorded)."""
    proc = subprocess.Popen([str(FAKE), *argv], cwd=sandbox.cwd, env=env,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if sent:  # wait for the init line, then signal like the harness did
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.send_signal(getattr(signal, f"SIG{sent['signal']}"))
        out, err = proc.communicate(timeout=30)
        return subprocess.CompletedProcess(proc.args, proc.returncode, first + out, err)
    out, err = proc.communicate(stdin.encode() if stdin is not None else None, timeout=30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize(("scenario", "run"), RUNS,
                         ids=[f"{s}/{r['label']}" for s, r in RUNS])
def test_fake_replays_the_capture_faithfully(scenario: str, run: dict[str, Any],
                                             sandbox: Sandbox) -> None:
    folder = CAPTURES / scenario / run["label"]
    if run["label"] == "run4_session_id_reused":  # the first use left a transcript
        transcript = Path(sandbox.fill("<CONFIG>/projects/<CWD_ENCODED>")) / (
            "33333333-3333-4333-8333-333333333333.jsonl")
        transcript.parent.mkdir(parents=True)
        transcript.write_text("{}\n")
    env = sandbox.env(run["env"], f"{scenario}/{run['label']}")
    done = run_fake(run["argv"][1:], sandbox, env, run.get("stdin"), run.get("signal_sent"))
    stdout = next(folder.glob("stdout.*"))
    assert done.stdout.decode() == sandbox.fill(stdout.read_text(encoding="utf-8"))
    assert done.stderr.decode() == sandbox.fill((folder / "stderr.txt").read_text())
    assert done.returncode == int((folder / "exit_code").read_text())


REFUSALS = ["q_cli_usage_errors/run1_stream_json_without_verbose",
            "q_cli_usage_errors/run2_bad_session_id", "q_cli_usage_errors/run4_session_id_reused",
            "q_cli_usage_errors/run5_no_prompt", "m_permission_modes/run1_bypass_as_root",
            "m_permission_modes/run2_skip_permissions_as_root"]


@pytest.mark.parametrize("recorded", REFUSALS)
def test_usage_errors_are_checked_whatever_the_scenario(recorded: str,
                                                        sandbox: Sandbox) -> None:
    """The fake validates argv itself, before replaying (here a successful capture)."""
    folder = CAPTURES / recorded
    scenario = json.loads((folder.parent / "scenario.json").read_text())
    run = next(r for r in scenario["runs"] if r["label"] == folder.name)
    if "root" in folder.name and os.geteuid() != 0:
        pytest.skip("the CLI only refuses bypassPermissions for root")
    if folder.name == "run4_session_id_reused":
        transcript = Path(sandbox.fill("<CONFIG>/projects/<CWD_ENCODED>")) / (
            "33333333-3333-4333-8333-333333333333.jsonl")
        transcript.parent.mkdir(parents=True)
        transcript.write_text("{}\n")
    env = sandbox.env(run["env"], "a_text_stream_json")
    done = run_fake(run["argv"][1:], sandbox, env, None, None)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode() == (folder / "stderr.txt").read_text()


def test_recorded_session_id_becomes_the_one_passed(sandbox: Sandbox) -> None:
    recorded = "11111111-1111-4111-8111-111111111111"
    mine = "abcdef01-2345-4678-89ab-cdef01234567"
    env = sandbox.env({"CLAUDE_CONFIG_DIR": "<CONFIG>"}, "a_text_stream_json")
    done = run_fake(["-p", "Say hello", "--output-format", "stream-json", "--verbose",
                     "--session-id", mine], sandbox, env, None, None)
    expected = sandbox.fill((CAPTURES / "a_text_stream_json/run1/stdout.ndjson").read_text())
    assert done.stdout.decode() == expected.replace(recorded, mine)
    assert done.returncode == 0


def test_write_side_effect_matches_repo_after(sandbox: Sandbox) -> None:
    env = sandbox.env({}, "b_write_tool")
    run_fake(["-p", "x", "--output-format", "stream-json", "--verbose"], sandbox, env, None, None)
    after = CAPTURES / "b_write_tool" / "repo_after"
    for path in after.iterdir():
        assert (sandbox.cwd / path.name).read_bytes() == path.read_bytes()


def test_denied_tools_change_nothing(sandbox: Sandbox) -> None:
    env = sandbox.env({}, "h_permission_denied/run1_stream_json")
    run_fake(["-p", "x", "--output-format", "stream-json", "--verbose"], sandbox, env, None, None)
    assert sorted(p.name for p in sandbox.cwd.iterdir()) == [".git", "README.md"]


def test_open_silent_stdin_gets_the_recorded_warning(sandbox: Sandbox) -> None:
    folder = CAPTURES / "t_stdin_handling" / "run2_stdin_open_silent"
    env = sandbox.env({}, "t_stdin_handling/run2_stdin_open_silent")
    proc = subprocess.Popen([str(FAKE), "-p", "hello", "--output-format", "json"],
                            cwd=sandbox.cwd, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    assert proc.stdin is not None
    warning = proc.stderr.readline()  # arrives while stdin is still open
    assert warning.decode() == (folder / "stderr.txt").read_text()
    out, err = proc.communicate(timeout=30)  # the fake went on without stdin
    assert (proc.returncode, err) == (0, b"")
    assert out.decode() == sandbox.fill((folder / "stdout.json").read_text())


def test_version(sandbox: Sandbox) -> None:
    done = run_fake(["--version"], sandbox, sandbox.env({}, "a_text_stream_json"), None, None)
    assert done.stdout == (CAPTURES / "VERSION.txt").read_bytes()
    assert done.returncode == 0


@pytest.mark.parametrize("argv", [
    ["-p", "x", "--output-format", "stream-json", "--verbose", "--no-such-flag"],
    ["-p", "x", "--output-format", "json"],  # a_text_stream_json was recorded as stream-json
    ["x", "--output-format", "stream-json", "--verbose"],  # interactive mode
])
def test_fake_refuses_what_it_cannot_replay(argv: list[str], sandbox: Sandbox) -> None:
    done = run_fake(argv, sandbox, sandbox.env({}, "a_text_stream_json"), None, None)
    assert (done.returncode, done.stdout) == (97, b"")
    assert b"fake claude" in done.stderr
