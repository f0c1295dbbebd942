"""relay-cli archive / unarchive / sessions --archived, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import assert_no_traceback, cli


def _ids(*args: str) -> list[str]:
    proc = cli("sessions", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line)["id"] for line in proc.stdout.splitlines()]


def test_archive_hides_a_session_and_unarchive_brings_it_back(git_repo: Path) -> None:
    run = cli("run", "archive me", "--repo", str(git_repo), "--provider", "demo", "--json")
    sid = json.loads(run.stdout.splitlines()[0])["session_id"]

    archived = cli("archive", sid[:6])

    assert archived.returncode == 0, archived.stderr
    assert f"Session {sid} archived" in archived.stdout
    assert _ids() == []
    assert _ids("--archived") == [sid]
    assert sid not in cli("sessions").stdout  # the quick path (relay.db read directly) too
    table = cli("sessions", "--archived").stdout
    assert sid in table
    assert "archived" in table

    back = cli("unarchive", sid)

    assert back.returncode == 0, back.stderr
    assert "back in the list" in back.stdout
    assert _ids() == [sid]
    assert "archived" not in cli("sessions").stdout.replace("--archived", "")


def test_archiving_an_unknown_session_is_a_clear_error(relay_home: Path) -> None:
    proc = cli("archive", "nosuchsession")
    assert proc.returncode != 0
    assert "nosuchsession" in proc.stderr
    assert_no_traceback(proc)
