"""Nothing an agent, a transcript or a repository says reaches the terminal as a control
character: relay-cli's bytes carry no ESC, no BEL and no C1, and the text still shows,
escaped (``\\x1b[2J``). A hostile agent (the fake claude with RELAY_FAKE_INJECT_HOSTILE)
clears the screen, sets the window title, writes the clipboard (OSC 52) and prints binary
garbage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_cli import CLI
from tests.conftest import make_repo
from tests.fakes.replay import fixtures_root

#: what the hostile fake says, as relay-cli must show it
SHOWN = (
    "\\x1b[2Jcleared \\x1b]0;pwned-title\\x07 \\x1b]52;c;cGF3bmVk\\x07 "
    "\\x9b31mc1-csi\\x9c \\x07bell\\x0doverwritten \\x7f"
)
#: the hostile text itself (the fake's HOSTILE_TEXT)
HOSTILE = (
    "\x1b[2Jcleared \x1b]0;pwned-title\x07 \x1b]52;c;cGF3bmVk\x07 "
    "\x9b31mc1-csi\x9c \x07bell\roverwritten \x7f"
)
#: the garbage is 200 KB; what relay-cli prints of it stays far below
MAX_OUTPUT = 64_000


def relay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "COLUMNS": "200", "RELAY_DEMO_STEP_DELAY": "0", **(env or {})}
    return subprocess.run(
        [*CLI, *args], capture_output=True, env=env, stdin=subprocess.DEVNULL, timeout=180, check=False
    )


def assert_terminal_safe(data: bytes) -> str:
    """``data`` holds no ESC, no BEL, no C1 character (nor DEL); returns it decoded."""
    assert b"\x1b" not in data
    assert b"\x07" not in data
    text = data.decode("utf-8")  # relay-cli's own output is valid UTF-8 (garbage was replaced)
    bad = sorted({hex(ord(c)) for c in text if 0x7F <= ord(c) <= 0x9F or (ord(c) < 0x20 and c not in "\n\t")})
    assert bad == [], bad
    return text


@pytest.fixture
def hostile(fakes_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_INJECT_HOSTILE", "1")


@pytest.mark.usefixtures("hostile")
def test_a_hostile_agent_reaches_the_terminal_as_text(git_repo: Path) -> None:
    run = relay("run", "say hello", "--repo", str(git_repo), "--provider", "claude")
    assert run.returncode == 0, run.stderr
    out = assert_terminal_safe(run.stdout)
    assert_terminal_safe(run.stderr)
    assert SHOWN in out
    assert "more are ignored without a report" in out
    assert len(run.stdout) < MAX_OUTPUT

    session = out.split("COMPLETED session ")[1].split()[0]
    for command in (["show", session], ["history", session], ["sessions"]):
        again = relay(*command)
        assert again.returncode == 0, (command, again.stderr)
        shown = assert_terminal_safe(again.stdout)
        assert_terminal_safe(again.stderr)
        if command[0] == "show":
            assert SHOWN in shown
            assert len(again.stdout) < MAX_OUTPUT


@pytest.mark.usefixtures("hostile")
def test_json_output_keeps_the_text_and_no_byte_a_terminal_acts_on(git_repo: Path) -> None:
    run = relay("run", "say hello", "--repo", str(git_repo), "--provider", "claude", "--json")
    assert run.returncode == 0, run.stderr
    lines = assert_terminal_safe(run.stdout).splitlines()
    said = [json.loads(line)["event"] for line in lines if line.startswith("{")]
    assert any(e.get("text", "").startswith(HOSTILE) for e in said)
    listed = relay("sessions", "--json")
    assert_terminal_safe(listed.stdout)


def test_a_hostile_transcript_read_by_detect_is_shown_as_text(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    folder = tmp_path / "claude-hostile"
    shutil.copytree(fixtures_root() / "claude" / "captures" / "a_text_stream_json" / "config", folder)
    hostile = json.dumps(HOSTILE)[1:-1]
    for transcript in folder.rglob("*.jsonl"):
        transcript.write_text(
            transcript.read_text()
            .replace("<CWD>", str(repo))
            .replace("Say hello", f"Say {hostile} hello")
            .replace("Hello from the mock.", hostile)
        )
    assert relay("accounts", "add", "claude", "work", "--config-dir", str(folder)).returncode == 0

    listed = relay("detect", "--all")
    assert listed.returncode == 0, listed.stderr
    out = assert_terminal_safe(listed.stdout)
    assert_terminal_safe(listed.stderr)
    assert "\\x1b[2Jcleared" in out
    as_json = relay("detect", "--all", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_terminal_safe(as_json.stdout)
    assert HOSTILE in json.loads(as_json.stdout)["sessions"][0]["intent"]["initial_prompt"]
