"""The verifier gate's single check: real commands in a real folder."""

from __future__ import annotations

import sys
from pathlib import Path

from relay.sessions.verifier import run_check

PY = sys.executable


async def test_a_passing_command_passes(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("yes")
    result = await run_check([PY, "-c", "import pathlib; print(pathlib.Path('ok.txt').read_text())"],
                             tmp_path, limit_s=30)
    assert result.passed
    assert result.exit_code == 0
    assert result.output == "yes"


async def test_a_failing_command_keeps_its_exit_code_and_output(tmp_path: Path) -> None:
    code = "import sys; print('1 failed'); print('boom', file=sys.stderr); sys.exit(3)"
    result = await run_check([PY, "-c", code], tmp_path, limit_s=30)
    assert not result.passed
    assert result.exit_code == 3
    assert "1 failed" in result.output
    assert "boom" in result.output


async def test_a_missing_executable_fails_with_a_problem_not_an_exception(tmp_path: Path) -> None:
    result = await run_check(["no-such-checker-xyz"], tmp_path, limit_s=30)
    assert not result.passed
    assert result.problem is not None
    assert "no-such-checker-xyz" in result.problem


async def test_a_command_that_hangs_is_stopped_and_fails(tmp_path: Path) -> None:
    result = await run_check([PY, "-c", "import time; print('started', flush=True); time.sleep(60)"],
                             tmp_path, limit_s=1)
    assert not result.passed
    assert result.problem == "did not finish within 1 s and was stopped"
    assert "started" in result.output
