"""The commands relay-cli suggests are written as this user can run them (issue 16, item 13)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay.cli import hints
from relay.cli.hints import NAME, program, runnable

SCRIPT = Path(sys.executable).parent / ("relay-cli.exe" if os.name == "nt" else "relay-cli")


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_on_path_it_is_relay_cli(tmp_path: Path) -> None:
    installed = executable(tmp_path / "bin" / "relay-cli")

    assert program(str(installed), path=str(tmp_path / "bin"), cwd=str(tmp_path)) == NAME


def test_not_on_path_it_is_the_path_it_was_started_by(tmp_path: Path) -> None:
    venv = executable(tmp_path / "project" / ".venv" / "bin" / "relay-cli")
    empty = tmp_path / "empty"
    empty.mkdir()

    # started by its absolute path (./dev run) from the project: the shorter relative one
    assert program(str(venv), path=str(empty), cwd=str(tmp_path / "project")) == \
        os.path.join(".venv", "bin", "relay-cli")
    # from elsewhere the absolute path, never ../../project/.venv/bin/relay-cli
    elsewhere = tmp_path / "a" / "b"
    elsewhere.mkdir(parents=True)
    assert program(str(venv), path=str(empty), cwd=str(elsewhere)) == str(venv)
    # started by a relative path: the same, relative to where the user is
    assert program(".venv/bin/relay-cli", path=str(empty), cwd=str(tmp_path / "project")) == \
        os.path.join(".venv", "bin", "relay-cli")


def test_another_relay_cli_on_path_is_not_this_one(tmp_path: Path) -> None:
    executable(tmp_path / "bin" / "relay-cli")  # an older install, say
    mine = executable(tmp_path / "work" / "venv" / "bin" / "relay-cli")

    assert program(str(mine), path=str(tmp_path / "bin"), cwd=str(tmp_path / "work")) == \
        os.path.join("venv", "bin", "relay-cli")


def test_a_program_in_the_working_folder_gets_dot_slash(tmp_path: Path) -> None:
    here = executable(tmp_path / "relay-cli")

    assert program(str(here), path=str(tmp_path / "nowhere"), cwd=str(tmp_path)) == \
        f".{os.sep}relay-cli"


def test_a_path_with_a_space_is_quoted(tmp_path: Path) -> None:
    spaced = executable(tmp_path / "my tools" / "relay-cli")

    shown = program(str(spaced), path=str(tmp_path / "nowhere"), cwd=str(tmp_path / "else"))

    assert shown in (f"'{spaced}'", f'"{spaced}"')


@pytest.mark.parametrize("argv0", ["/x/relay/cli/main.py", "-c", ""])
def test_started_as_a_module_it_is_the_documented_name(argv0: str, tmp_path: Path) -> None:
    assert program(argv0, path=str(tmp_path), cwd=str(tmp_path)) == NAME


def test_runnable_rewrites_each_command_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hints, "program", lambda: ".venv/bin/relay-cli")

    text = runnable("List them with `relay-cli accounts list`; relay-cli's own, relay-cli.")

    assert text == "List them with `.venv/bin/relay-cli accounts list`; relay-cli's own, relay-cli."
    assert hints.cli("demo") == ".venv/bin/relay-cli demo"


def _demo(path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "200"}
    return subprocess.run([str(SCRIPT), "demo"], capture_output=True, text=True, env=env,
                          cwd=SCRIPT.parents[2], stdin=subprocess.DEVNULL, timeout=120,
                          check=False)


@pytest.mark.skipif(not SCRIPT.exists(), reason="relay-cli is not installed beside this Python")
def test_the_next_hint_names_the_venv_script_when_it_is_not_on_path(relay_home: Path) -> None:
    proc = _demo(os.defpath)

    assert proc.returncode == 0, proc.stderr
    shown = os.path.relpath(SCRIPT, SCRIPT.parents[2])
    assert f"next: {shown} history " in proc.stdout


@pytest.mark.skipif(not SCRIPT.exists(), reason="relay-cli is not installed beside this Python")
def test_the_next_hint_says_relay_cli_when_it_is_on_path(relay_home: Path) -> None:
    proc = _demo(f"{SCRIPT.parent}{os.pathsep}{os.defpath}")

    assert proc.returncode == 0, proc.stderr
    assert "next: relay-cli history " in proc.stdout
