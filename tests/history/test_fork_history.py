"""History shows a fork's parent and a session's forks: `relay-cli history` (through the
host's API, in a subprocess) and its JSON."""

from __future__ import annotations

import json
from pathlib import Path

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.cli.test_cli import assert_no_traceback, cli


async def test_relay_cli_history_names_the_parent_and_the_forks(relay_home: Path, vault_env: None,
                                                               git_repo: Path) -> None:
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:
        parent = await engine.run_session(SessionSpec(repo=git_repo, task="write the notes",
                                                      runtime="demo"))
        await engine.continue_session(parent.id, "and a second turn")
        await engine.wait_session(parent.id)
        first_turn = next(r for r in await engine.session_events(parent.id)
                          if r.event.kind == "turn_completed" and r.event.result_text is not None)
        fork = await engine.talk.fork(parent.id, at_event=first_turn.id)
        await engine.wait_session(fork.session_id)
    finally:
        await engine.close()
    assert fork.sha
    assert fork.turns == 1

    child = cli("history", fork.session_id)
    mother = cli("history", parent.id)
    as_json = cli("history", fork.session_id, "--json")

    assert_no_traceback(child)
    assert child.returncode == 0, child.stderr
    assert f"forked from {parent.id} at {fork.sha[:10]} (turn 1, brief)" in child.stdout
    assert mother.returncode == 0, mother.stderr
    assert f"forked as {fork.session_id} at {fork.sha[:10]} (turn 1, brief)" in mother.stdout
    data = json.loads(as_json.stdout)
    assert data["fork_of"]["session_id"] == parent.id
    assert (data["fork_of"]["sha"], data["fork_of"]["turns"]) == (fork.sha, 1)
    assert data["forks"] == []
