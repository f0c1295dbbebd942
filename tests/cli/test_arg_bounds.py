"""Numbers and command lines on the command line are refused at parse time with one line
(argparse's usage error, exit 2), never accepted as nan / infinity / negative, never a crash."""

from __future__ import annotations

import pytest

from relay.cli.main import main
from relay.cli.parser import build_parser

HUGE = "9" * 5000  # int() of it raises ValueError: Exceeds the limit (4300 digits)
BIG = "1" + "0" * 30  # past SQLite's 64-bit integers


@pytest.mark.parametrize("argv", [
    ["pipeline", "run", "p", "--budget", "-1"],
    ["pipeline", "run", "p", "--budget", "nan"],
    ["pipeline", "run", "p", "--budget", "Infinity"],
    ["pipeline", "run", "p", "--budget", "1e400"],
    ["run", "t", "--budget", "1e400"],
    ["run", "t", "--budget", "-1"],
    ["run", "t", "--task-budget", "nan"],
    ["run", "t", "--budget", "1e9"],  # absurd: more than the largest budget
    ["pipeline", "crash-demo", "--lease", "nan"],
    ["pipeline", "crash-demo", "--lease", "inf"],
    ["pipeline", "crash-demo", "--lease", "0"],
    ["pipeline", "crash-demo", "--step-delay", "-1"],
    ["daemon", "--interval", "nan"],
    ["daemon", "--interval", "-5"],
    ["sessions", "--limit", BIG],
    ["sessions", "--limit", HUGE],
    ["sessions", "--limit", "-1"],
    ["audit", "show", "--limit", HUGE],
    ["retrieve", "q", "--limit", BIG],
    ["demo", "--limit-after", BIG],
    ["demo", "--limit-after", "-3"],
    ["usage", "--since", f"{BIG}d"],
    ["usage", "--since", f"{HUGE}d"],
    ["usage", "--since", "yesterday"],
    ["run", "t", "--verify", "pytest 'unclosed"],
    ["run", "t", "--setup", 'make "unclosed'],
    ["run", "t", "--verify", ""],
])
def test_a_bad_number_or_command_line_is_a_usage_error(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert "Traceback" not in err
    assert len(err) < 2000  # the 5,000 digits are not echoed back


@pytest.mark.parametrize(("argv", "attr", "value"), [
    (["pipeline", "run", "p", "--budget", "12.5"], "budget", 12.5),
    (["run", "t", "--budget", "$30"], "budget", 30.0),
    (["run", "t", "--budget", "0"], "budget", 0.0),
    (["sessions", "--limit", "7"], "limit", 7),
    (["demo", "--limit-after", "0"], "limit_after", 0),
    (["usage", "--since", "7d"], "since", "7d"),
    (["usage", "--since", "2026-11-01"], "since", "2026-11-01"),
    (["pipeline", "crash-demo", "--step-delay", "0"], "step_delay", 0.0),
])
def test_good_values_still_parse(argv: list[str], attr: str, value: object) -> None:
    assert getattr(build_parser().parse_args(argv), attr) == value


def test_verify_and_setup_arrive_split(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["run", "t", "--verify", "pytest -q 'a b'",
                                      "--setup", "make deps"])
    assert args.verify == [["pytest", "-q", "a b"]]
    assert args.setup == ["make", "deps"]


def test_an_unbalanced_quote_creates_no_session(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "t", "--verify", "pytest 'x"])
    assert exited.value.code == 2
    assert "closing quotation" in capsys.readouterr().err


@pytest.mark.parametrize("line", ["9" * 5000, "1" + "0" * 30, "0"], ids=["5000-digits", "31-digits", "0"])
def test_a_path_line_out_of_range_is_one_line(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "abc", "--add", f"src/a.py:{line}", "fix this"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert "PATH:LINE" in err or "line" in err.lower()
    assert "crashed" not in err
    assert len(err) < 2000
