"""relay-cli board against a live host in another process (``relay-cli serve``): the
commands are its clients — what they change the host's engine has, what they print fits 80
columns, and a bad key is a clear error, never a traceback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from relay.api.client import RelayClient
from relay.core.hostfile import read_host, read_token

CLI = [sys.executable, "-m", "relay.cli.main"]


def cli(relay_home: Path, *args: str, cwd: Path | None = None,
        columns: int = 80) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120,
                          check=False, cwd=cwd,
                          env={**os.environ, "RELAY_HOME": str(relay_home),
                               "COLUMNS": str(columns), "NO_COLOR": "1"})
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def ok(relay_home: Path, *args: str, cwd: Path | None = None) -> str:
    done = cli(relay_home, *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def hook(relay_home: Path, event: dict[str, object]) -> dict[str, object]:
    """Post a hook event to the host as the hook client does."""
    found = read_host(relay_home)
    assert found is not None
    answer = httpx.post(found.url + "/api/v1/hooks/claude", json=event, trust_env=False,
                        headers={"Authorization": f"Bearer {read_token(relay_home)}"})
    assert answer.status_code == 200, answer.text
    result: dict[str, object] = answer.json()
    return result


async def link_and_report(relay_home: Path, key: str, session: str) -> None:
    """What the agent does over MCP (tests/mcp/test_board_tools.py), through the API."""
    client = RelayClient.for_home(relay_home)
    assert client is not None
    async with client:
        await client.board.link(key, session, actor=f"agent:{session}")
        await client.board.add_report(key, "greeting written", author=f"agent:{session}",
                                      session=session)


def test_the_board_from_the_command_line(host_proc: subprocess.Popen[str], relay_home: Path,
                                         git_repo: Path) -> None:
    assert "No tasks on the board" in ok(relay_home, "board")
    created = json.loads(ok(relay_home, "board", "new", "add a greeting to the project",
                            "--repo", str(git_repo), "--json"))
    key = created["key"]
    assert created["stage"] == "plan"
    second = ok(relay_home, "board", "new", "write the release notes", "--stage", "review",
                cwd=git_repo)
    assert "Created" in second
    assert f"{key} is in dev now." in ok(relay_home, "board", "stage", key, "dev")

    # a Claude session started in the repository and linked to the task: its live state
    session = str(uuid.uuid4())
    hook(relay_home, {"session_id": session, "hook_event_name": "SessionStart",
                      "cwd": str(git_repo), "source": "startup"})
    hook(relay_home, {"session_id": session, "hook_event_name": "UserPromptSubmit",
                      "cwd": str(git_repo), "prompt": "go"})
    asyncio.run(link_and_report(relay_home, key, session))

    said = ok(relay_home, "board", "comment", key, "please also say goodbye")
    assert "Comment #" in said

    board = ok(relay_home, "board")
    assert all(len(line) <= 80 for line in board.splitlines()), board
    for text in (key, "dev (1)", "review (1)", session[:8], "working", "greeting written"):
        assert text in board, (text, board)

    shown = ok(relay_home, "board", "show", key)
    for text in ("add a greeting", "please also say goodbye", "greeting written", session[:8]):
        assert text in shown, (text, shown)
    cards = json.loads(ok(relay_home, "board", "--json"))
    assert {c["task"]["key"] for c in cards} >= {key}

    missing = cli(relay_home, "board", "show", "NOPE-9")
    assert missing.returncode != 0
    assert "NOPE-9" in missing.stderr + missing.stdout
    bad = cli(relay_home, "board", "stage", key, "shipping")
    assert bad.returncode == 2  # argparse: not a stage


def test_environments_of_the_guard(host_proc: subprocess.Popen[str], relay_home: Path,
                                   git_repo: Path) -> None:
    assert "has no environments" in ok(relay_home, "board", "env", "list", cwd=git_repo)
    saved = ok(relay_home, "board", "env", "set", "prod", "--kind", "live", "--level", "ask",
               "--kube-context", "prod-eu", "--ssh-host", "db1", "--url",
               "https://api.example.com", "--project", str(git_repo))
    assert "prod (live, ask) saved" in saved
    listed = json.loads(ok(relay_home, "board", "env", "list", "--json", cwd=git_repo))
    assert [(e["name"], e["kind"], e["level"]) for e in listed] == [("prod", "live", "ask")]
    assert listed[0]["refs"]["kube_contexts"] == ["prod-eu"]
    table = ok(relay_home, "board", "env", "list", cwd=git_repo)
    assert "prod-eu" in table
    assert all(len(line) <= 80 for line in table.splitlines()), table
    assert "removed" in ok(relay_home, "board", "env", "remove", "prod", cwd=git_repo)
    assert json.loads(ok(relay_home, "board", "env", "list", "--json", cwd=git_repo)) == []


def test_open_prints_the_sign_in_link_or_says_what_is_missing(
        host_proc: subprocess.Popen[str], relay_home: Path) -> None:
    done = cli(relay_home, "board", "--open")
    found = read_host(relay_home)
    assert found is not None
    if done.returncode == 0:
        assert done.stdout.strip().startswith(found.url)
    else:
        assert "does not serve the web board" in done.stderr
