"""benchmarks/rows.py: the one run that measures every performance row."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import rows  # noqa: E402
from benchmarks.machine import verdict  # noqa: E402


def test_every_row_runs_a_harness_that_exists_and_takes_load() -> None:
    for row in rows.ROWS:
        harness = ROOT / "benchmarks" / row.args[0]
        assert harness.is_file(), row.name
        if row.loads:
            assert '"--load"' in harness.read_text(), f"{row.name}: no --load option"


def test_the_verdict_lines_are_what_the_summary_keeps() -> None:
    text = "\n".join(["warming up", verdict("fan-out", 2.5, 3, baseline="one commit"),
                      "  p99 12 ms", verdict("chain", 5.0, 4, baseline="one commit"),
                      "summary:", verdict("chain", 5.0, 4, baseline="one commit")])
    assert rows.verdicts(text) == [
        "fan-out: 2.50× vs one commit (target ≤ 3×: met)",
        "chain: 5.00× vs one commit (target ≤ 4×: MISSED)"]


def test_an_unknown_row_is_refused_with_the_way_to_list_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        rows.main(["--only", "nope"])
    assert exc.value.code == 2
    assert "--list shows them" in capsys.readouterr().err
