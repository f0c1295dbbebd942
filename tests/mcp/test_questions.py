"""An MCP client answers what an agent asks: the open questions of a session another Relay
process runs (a terminal's `relay-cli demo --ask`), and the answer that lets it go on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.cli.test_cli import CLI
from tests.mcp.conftest import Server, call, call_error


def start_asking(relay_home: Path) -> tuple[subprocess.Popen[str], str]:
    """`relay-cli demo --ask` in its own process, once it asks; (the process, its session)."""
    env = {**os.environ, "RELAY_HOME": str(relay_home), "RELAY_DEMO_STEP_DELAY": "0",
           "COLUMNS": "200"}
    asking = subprocess.Popen([*CLI, "demo", "--ask"], stdout=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, env=env)
    assert asking.stdout is not None
    for line in asking.stdout:  # not a terminal: it prints how to answer, and waits
        if "answer with: relay-cli answer " in line:
            return asking, line.split("answer with: relay-cli answer ", 1)[1].split()[0]
    asking.kill()
    raise AssertionError("relay-cli demo --ask ended without asking")


def finish(asking: subprocess.Popen[str]) -> tuple[int, str]:
    assert asking.stdout is not None
    rest = asking.stdout.read()
    return asking.wait(timeout=60), rest


async def test_a_client_reads_the_question_and_answers_it(relay_mcp: Server,
                                                          relay_home: Path) -> None:
    asking, session = start_asking(relay_home)
    try:
        async with relay_mcp() as client:
            asked = await call(client, "relay_open_questions", session_id=session)
            question = asked["questions"][0]
            wrong = await call_error(client, "relay_answer", session_id=session,
                                     request_id=question["request_id"], option="maybe")
            said = await call(client, "relay_answer", session_id=session,
                              request_id=question["request_id"], option="allow")
        code, rest = finish(asking)
    finally:
        if asking.poll() is None:
            asking.kill()
    assert question["tool"] == "write_file"
    assert [o["id"] for o in question["options"]] == ["allow", "reject"]
    assert "is not an answer" in wrong
    assert said["message"].endswith("Allow once")
    assert code == 0, rest
    assert "COMPLETED" in rest
