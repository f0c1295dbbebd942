"""benchmarks/smoke.py: what ``./dev test`` prints for the benchmark smokes, and when it fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks import smoke


def test_every_smoke_runs_a_harness_that_exists() -> None:
    for entry in smoke.SMOKES:
        assert Path(entry.argv[1]).is_file(), entry.name
        assert entry.what
        assert entry.last >= 1


def test_verdict_words_are_taken_out_and_the_target_kept() -> None:
    out = ("noise\nratio: 5.1% of floor (target ≥ 30%) → MISS\n"
           "ratio source / floor: 9.79× (target ≤ 1.5×: MISSED)\n")
    assert smoke.figures(out, 2) == ["ratio: 5.1% of floor (target ≥ 30%)",
                                     "ratio source / floor: 9.79× (target ≤ 1.5×)"]
    assert smoke.figures("detect refresh: 4 ms (target < 50 ms: met)\n", 1) == [
        "detect refresh: 4 ms (target < 50 ms)"]
    assert smoke.figures("overhead: 27 ms; 0.01× the 2 s target (met)\n", 1) == [
        "overhead: 27 ms; 0.01× the 2 s target"]
    assert smoke.figures("relay-cli doctor   477 ms   34.0×   MISSED\n", 1) == [
        "relay-cli doctor   477 ms   34.0×"]


def test_a_smoke_that_crashes_fails_with_what_it_printed() -> None:
    crash = smoke.Smoke("crash", "a harness that dies",
                        [sys.executable, "-c", "print('half way'); raise SystemExit('boom')"])
    ok, _, lines = smoke.run(crash)
    assert not ok
    assert lines[0] == "exited 1:"
    assert "half way" in lines
    assert "boom" in lines


def test_main_fails_when_one_smoke_fails(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    good = smoke.Smoke("good", "fine", [sys.executable, "-c", "print('x: 1 ms (target < 2 ms) → PASS')"])
    bad = smoke.Smoke("bad", "dies", [sys.executable, "-c", "import sys; sys.exit(3)"])
    monkeypatch.setattr(smoke, "SMOKES", [good, bad])
    monkeypatch.setattr(sys, "argv", ["smoke.py"])
    assert smoke.main() == 1
    out = capsys.readouterr()
    assert "smoke good (ran" in out.out
    assert "x: 1 ms (target < 2 ms)" in out.out
    assert "smoke bad (FAILED" in out.out
    assert "exited 3:" in out.out
    assert "not a verdict" in out.out
    assert "bad" in out.err


def test_a_benchmark_without_its_fixtures_says_so_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "RELAY_FIXTURES": str(tmp_path / "gone")}
    proc = subprocess.run([sys.executable, "benchmarks/stream/bench_stream.py", "--lines", "10"],
                          cwd=smoke.ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"bench_stream: recorded fixtures not found at {tmp_path / 'gone'} "
        "(a full checkout has tests/fixtures; RELAY_FIXTURES overrides)"]
