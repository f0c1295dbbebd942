"""relay-cli over generated arguments, in-process with a fresh data folder: every run ends
in an exit code — argparse's usage error, a RelayError's one line, or success — and never
in a traceback or the crash path (exit 70 means Relay did not expect what it was given)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay.cli.main import main
from relay.core.crash import CRASH_EXIT
from tests.fuzz.strategies import FUZZ

#: commands that read or only write the data folder (nothing that starts an agent, scans
#: the machine, listens, or writes outside RELAY_HOME), with their words and options
COMMANDS: dict[str, list[str]] = {
    "sessions": ["--limit", "--json"],
    "show": ["--json"],
    "history": ["--json"],
    "diff": ["--stint", "--json"],
    "review": ["--add", "--sha", "--old", "--json"],
    "audit": ["show", "verify", "--limit", "--json"],
    "budget": ["list", "set", "clear", "session", "account", "total", "--account",
               "--session", "--json"],
    "usage": ["--since", "--by", "day", "session", "--json"],
    "prices": ["--json"],
    "pipeline": ["list", "validate", "status", "--log", "--json"],
    "contract": ["show", "verify", "--json"],
}

_numbers = st.sampled_from(["-1", "0", "1", "nan", "inf", "-inf", "1e400", "9" * 5000,
                            "1" + "0" * 30, "7d", "2026-11-01", "$30", "0x10", "1_000"])
_words = st.text(max_size=12) | st.sampled_from(["%", "_", "'", '"', "a:1", "x.py:99999999999999",
                                                 "-", "--", "\udcff", "abc\udce9"])


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    tokens = st.sampled_from(COMMANDS[command]) | _numbers | _words
    return [command, *draw(st.lists(tokens, max_size=6))]


@FUZZ
@given(argv=argvs())
def test_any_arguments_end_in_an_exit_code_never_a_traceback(
        argv: list[str], relay_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # --repo defaults to the working folder: an empty one
    code: object
    try:
        code = main(argv)
    except SystemExit as exited:  # argparse: --help (0) or a usage error (2)
        code = exited.code
    out, err = capsys.readouterr()
    assert isinstance(code, int)
    assert "Traceback" not in err + out
    assert code != CRASH_EXIT, err
