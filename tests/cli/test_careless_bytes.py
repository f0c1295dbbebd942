"""A careless byte is refused before anything is created: an argument that is not UTF-8
(Python hands it over with surrogate escapes), and a NUL byte in text an agent's command
line would carry (the operating system cannot pass one: subprocess raised ValueError)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from relay.cli.main import main
from relay.core.errors import AgentProcessError
from relay.core.models import SessionSpec
from relay.core.procs import AgentProcess


@pytest.mark.parametrize("argv", [
    ["run", "fix the b\udcffg"],  # b"\xff" from a Latin-1 terminal
    ["run", "t", "--repo", "/tmp/caf\udce9"],
    ["sessions", "--limit", "1\udcff"],
    ["show", "\udcc3"],
])
def test_an_argument_that_is_not_utf8_is_one_line_and_creates_nothing(
        argv: list[str], relay_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "UTF-8" in err
    assert "Traceback" not in err
    assert "crashed" not in err
    db = relay_home / "relay.db"
    assert not db.exists() or sqlite3.connect(db).execute(
        "SELECT count(*) FROM sessions").fetchone() == (0,)


@pytest.mark.parametrize("field", ["task", "model", "setup_command", "verify"])
@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"], ids=["nul", "lone-surrogate"])
def test_a_session_spec_refuses_text_no_command_line_can_carry(
        field: str, bad: str, tmp_path: Path) -> None:
    value: object = {"task": bad, "model": bad, "setup_command": ["make", bad],
                     "verify": [["pytest", bad]]}[field]
    with pytest.raises(ValidationError, match=r"NUL|unicode"):
        SessionSpec(**{"repo": tmp_path, "task": "t", "runtime": "demo", field: value})


async def test_an_agent_argv_with_a_nul_byte_is_a_clear_error(tmp_path: Path) -> None:
    proc = AgentProcess(argv=["echo", "a\x00b"], cwd=tmp_path, env={})
    with pytest.raises(AgentProcessError, match="NUL"):
        await proc.start()
