"""relay-cli say, messages, interrupt and fork: clients of a live host in another process
(``relay-cli serve``), or hosting for the command when none runs — what they print fits 80
columns, a refusal is a clear error with a non-zero exit, never a traceback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from relay.api.client import RelayClient
from relay.core.events import NeedsInput
from relay.core.models import SessionSpec
from tests.api import conftest as api
from tests.cli.test_board_cmd import CLI, cli, ok

#: a ``relay-cli serve`` process of the test's data folder (tests/api)
host_proc = api.host_proc


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")


def fits(text: str) -> None:
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert wide == [], wide


async def asking(relay_home: Path, repo: Path) -> tuple[str, NeedsInput]:
    """A demo session in the host that waits for the user's answer (busy until then)."""
    client = RelayClient.for_home(relay_home)
    assert client is not None
    async with client:
        sid = await client.start_session(SessionSpec(repo=repo, task="notes", runtime="demo",
                                                     demo_ask=True, approvals="ask"))
        async for record in client.follow(sid):
            if isinstance(record.event, NeedsInput):
                return sid, record.event
    raise AssertionError("the session ended without asking")


async def test_talking_to_a_busy_session_through_the_host(
        host_proc: subprocess.Popen[str], relay_home: Path, git_repo: Path) -> None:
    sid, question = await asking(relay_home, git_repo)

    said = ok(relay_home, "say", sid[:8], "also add a changelog")
    fits(said)
    assert f"it goes when session {sid}'s turn ends" in said
    mid = said.split("Queued as message ", 1)[1].split(":", 1)[0]
    assert f"relay-cli messages {sid} --cancel {mid}" in said

    listed = ok(relay_home, "messages", sid)
    fits(listed)
    assert mid in listed
    assert "also add a changelog" in listed
    assert "queued" in listed
    edited = json.loads(ok(relay_home, "messages", sid, "--edit", mid, "a CHANGELOG.md",
                           "--json"))
    assert (edited["id"], edited["text"], edited["state"]) == (mid, "a CHANGELOG.md", "queued")
    assert "Message " + mid + " cancelled." in ok(relay_home, "messages", sid, "--cancel", mid)
    assert "has no queued messages" in ok(relay_home, "messages", sid)
    every = json.loads(ok(relay_home, "messages", sid, "--all", "--json"))
    assert [(m["id"], m["state"], m["source"]) for m in every] == [(mid, "cancelled", "cli")]

    piped = piped_say(relay_home, sid, "from a pipe\n")
    assert piped.returncode == 0, piped.stderr
    queued = json.loads(piped.stdout)
    assert (queued["text"].strip(), queued["state"], queued["source"]) == (
        "from a pipe", "queued", "cli")

    # a running session is talked to, not resumed: the refusal says how
    resumed = cli(relay_home, "run", "more", "--resume", sid)
    assert resumed.returncode == 2
    fits(resumed.stderr)
    assert f"relay-cli say {sid} TEXT" in resumed.stderr

    client = RelayClient.for_home(relay_home)
    assert client is not None
    async with client:
        await client.answer_input(sid, question.request_id, "allow")
        row = await client.wait_session(sid)
        assert row.state == "completed", row.reason
        [*_, delivered] = await client.talk.messages(sid)
        assert (delivered.id, delivered.state) == (queued["id"], "delivered")

    forked = json.loads(ok(relay_home, "fork", sid, "--prompt", "the same, elsewhere",
                           "--json"))
    assert forked["parent_id"] == sid
    assert forked["session_id"] != sid
    text = ok(relay_home, "fork", sid)
    fits(text)
    assert f"Forked session {sid} as " in text


async def test_interrupt_from_the_command_line(host_proc: subprocess.Popen[str],
                                               relay_home: Path, git_repo: Path) -> None:
    sid, _question = await asking(relay_home, git_repo)
    done = json.loads(ok(relay_home, "interrupt", sid, "--json"))
    assert done["session_id"] == sid
    assert done["message"]
    client = RelayClient.for_home(relay_home)
    assert client is not None
    async with client:
        row = await client.wait_session(sid)
    assert row.state == "interrupted", row.reason


def test_a_follow_up_without_a_host_hosts_and_follows_the_run(relay_home: Path,
                                                              git_repo: Path) -> None:
    first = cli(relay_home, "run", "add a greeting", "--repo", str(git_repo), "--json")
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout.splitlines()[0])["session_id"]

    said = cli(relay_home, "say", sid, "now wave as well")
    assert said.returncode == 0, said.stderr
    fits(said.stdout)
    assert f"Session {sid} goes on with your message" in said.stdout
    assert "COMPLETED" in said.stdout  # this command hosted the run: it followed it to its end
    listed = json.loads(ok(relay_home, "messages", sid, "--all", "--json"))
    assert [(m["state"], m["text"]) for m in listed] == [("delivered", "now wave as well")]


def test_refusals_are_one_clear_error(relay_home: Path) -> None:
    for args in (("say", "nosuchsession", "hello"), ("messages", "nosuchsession"),
                 ("interrupt", "nosuchsession"), ("fork", "nosuchsession")):
        done = cli(relay_home, *args)
        assert done.returncode == 2, (args, done.stdout)
        assert done.stderr.startswith("error:"), done.stderr
        fits(done.stderr)
    both = cli(relay_home, "say", "x", "y", "--now", "--interrupt")
    assert both.returncode == 2
    assert "not allowed with argument" in both.stderr


def piped_say(relay_home: Path, sid: str, text: str) -> subprocess.CompletedProcess[str]:
    """``… | relay-cli say SID - --json``."""
    return subprocess.run([*CLI, "say", sid, "-", "--json"], input=text, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "RELAY_HOME": str(relay_home)})


@pytest.fixture
def codex_mid_turn(fakes_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's fake codex stops mid-turn and waits (set before the host starts)."""
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "e7_sigterm_midturn")


async def test_say_now_to_a_runtime_that_cannot_steer_says_what_works(
        codex_mid_turn: None, host_proc: subprocess.Popen[str], relay_home: Path,
        git_repo: Path) -> None:
    client = RelayClient.for_home(relay_home)
    assert client is not None
    async with client:
        sid = await client.start_session(SessionSpec(repo=git_repo, task="hello",
                                                     runtime="codex"))
        deadline = asyncio.get_running_loop().time() + 60
        while not (await client.talk.abilities(sid)).busy:
            assert asyncio.get_running_loop().time() < deadline, "the turn never started"
            await asyncio.sleep(0.05)
        refused = cli(relay_home, "say", sid, "look at the tests", "--now")
        assert await client.talk.messages(sid) == []  # nothing was sent
        await client.cancel_session(sid)
        await client.wait_session(sid)
    assert refused.returncode == 2
    assert refused.stdout == ""
    fits(refused.stderr)
    lines = refused.stderr.splitlines()
    assert lines[0] == "error: codex does not support steer (capability level: no)."
    assert f"    relay-cli say {sid} 'look at the tests'" in lines
    assert f"    relay-cli say {sid} 'look at the tests' --interrupt" in lines
