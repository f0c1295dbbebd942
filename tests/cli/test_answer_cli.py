"""The CLI and an agent's question: answered from another terminal, prompted on one, and
a clear failure in --json mode."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from relay.cli.questions import Questions
from relay.core.config import load_config
from relay.core.events import NeedsInput
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.cli.test_cli import CLI, assert_no_traceback, cli


def test_another_terminal_answers_a_running_demo() -> None:
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "200"}
    with subprocess.Popen([*CLI, "demo", "--ask"], stdout=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL, env=env) as running:
        assert running.stdout is not None
        command: list[str] = []
        for line in running.stdout:  # not a terminal: it says how to answer, and waits
            if "answer with: relay-cli answer " in line:
                command = line.split("answer with: relay-cli ", 1)[1].split()
                break
        assert command[0] == "answer"
        session, request, option = command[1:4]
        listed = cli("answer", session)
        answered = cli("answer", session, request, "1")
        rest = running.stdout.read()
        code = running.wait(timeout=60)

    assert "Allow write_file to create RELAY_DEMO_NOTES.md?" in listed.stdout
    assert "1. [allow] Allow once" in listed.stdout
    assert option == "allow"
    assert answered.returncode == 0, answered.stderr
    assert "Allow once" in answered.stdout
    assert code == 0
    assert "COMPLETED" in rest
    again = cli("answer", session, request, "allow")
    assert again.returncode == 2
    assert "questions are closed" in again.stderr
    assert_no_traceback(again)


def test_json_mode_cannot_ask_and_says_what_to_do() -> None:
    proc = cli("demo", "--ask", "--json")

    assert proc.returncode == 1
    kinds = [json.loads(line)["event"]["kind"] for line in proc.stdout.splitlines()]
    assert "needs_input" in kinds
    error = json.loads(proc.stderr.strip().splitlines()[-1])
    assert error["error"] == "needs_input"
    assert "--approvals" in error["message"]
    assert_no_traceback(proc)


def test_run_with_a_deny_policy_never_asks(git_repo: Path) -> None:
    proc = cli("run", "notes", "--repo", str(git_repo), "--provider", "demo",
               "--approvals", "deny", "--json")
    assert proc.returncode == 0, proc.stderr
    kinds = [json.loads(line)["event"]["kind"] for line in proc.stdout.splitlines()]
    assert "needs_input" not in kinds  # the demo only asks when told to


@pytest.mark.parametrize(("typed", "expected"), [(["1"], "Allow once"), (["x", "2"], "Reject")])
async def test_a_terminal_prompt_answers_by_number(relay_home: Path, git_repo: Path,
                                                   typed: list[str], expected: str) -> None:
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:
        answers = iter(typed)

        async def reader(_prompt: str) -> str:
            return next(answers)

        console = Console(record=True, width=200)
        questions = Questions(engine, console, as_json=False, interactive=True, reader=reader)
        sub = engine.bus.subscribe()
        session_id = await engine.start_session(SessionSpec(repo=git_repo, task="notes",
                                                            runtime="demo", demo_ask=True,
                                                        approvals="ask"))
        async for record in sub:
            if isinstance(record.event, NeedsInput):
                questions.asked(session_id, record.event)
                break
        sub.close()
        row = await engine.wait_session(session_id)
        await questions.aclose()
    finally:
        await engine.close()
    out = console.export_text()
    assert row.state == "completed"
    assert f": {expected}" in out
    if len(typed) > 1:
        assert "type a number from 1-2" in out


async def _stop(session: str) -> None:
    from relay.api.client import RelayClient

    client = RelayClient.for_home(load_config().home)  # the demo hosts its data folder
    assert client is not None
    async with client:
        await client.cancel_session(session)  # the demo's own process does the stopping


def test_another_process_stops_a_session_that_waits(relay_home: Path) -> None:
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "200"}
    with subprocess.Popen([*CLI, "demo", "--ask"], stdout=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL, env=env) as running:
        try:
            assert running.stdout is not None
            session = ""
            for line in running.stdout:
                if "answer with: relay-cli answer " in line:
                    session = line.split("answer with: relay-cli answer ", 1)[1].split()[0]
                    break
            asyncio.run(_stop(session))
            rest = running.stdout.read()
            code = running.wait(timeout=60)
        finally:
            if running.poll() is None:  # a failed test leaves no demo behind
                running.kill()

    assert code == 1
    assert "CANCELLED" in rest
