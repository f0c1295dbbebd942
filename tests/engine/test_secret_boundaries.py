"""Secrets a user pastes into a task, and an agent prints back, leave the engine nowhere.

A demo session (a simulated limit after one turn, then a handoff to a second demo account)
runs a task carrying a freshly made ``sk-ant-api03-…`` key and a ``ghp_…`` token; the demo
agent writes the task into a file, so the secrets also arrive as the agent's tool call.
Then every byte of the data folder — relay.db and its WAL, the audit log, the handoff's
envelope.json/envelope.md/brief.md, the logs — and the stdout and stderr of the relay-cli
commands a user reads it with (``show``, ``sessions``, ``contract show``, ``audit show``,
``history``, each with ``--json`` too) are searched for them — the worktree too: what a
real agent writes there is its work (docs/security.md), but the demo agent, Relay's own,
writes the task as stored (scrubbed).

Behaviour this pins (docs/architecture.md, "Secrets"): the task is stored scrubbed, so a
handoff's receiver reads the marker, not the key; the first agent got the task as typed.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.core.test_key_leak import VAULT
from tests.secrets.scan import files_under, hits

ANTHROPIC = "sk-ant-api03-" + secrets.token_urlsafe(70)
GITHUB = "ghp_" + "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
                          for _ in range(36))
PLANTED = [ANTHROPIC, GITHUB]
TASK = f"Deploy with ANTHROPIC key {ANTHROPIC} and the token {GITHUB} (see notes)"


def relay_cli(*args: str, env: dict[str, str]) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-m", "relay.cli.main", *args], env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout, proc.stderr


async def test_a_secret_in_the_task_and_the_output_leaves_the_engine_nowhere(
        engine: Engine, git_repo: Path, relay_home: Path) -> None:
    spec = SessionSpec(repo=git_repo, task=TASK, runtime="demo",
                       chain=["demo:primary", "demo:backup"], demo_limit_after=2)
    row = await engine.run_session(spec)

    assert row.state == "completed", row.reason
    events = await engine.session_events(row.id)
    assert [r.event.state for r in events if r.event.kind == "handoff_step"][-1] == "done"
    calls = [r.event for r in events if r.event.kind == "tool_call"]
    assert "[REDACTED:anthropic_key]" in json.dumps([c.input for c in calls])  # it got through
    stored = await engine.store.sessions.get(row.id)
    assert "[REDACTED:anthropic_key]" in stored.task
    assert "[REDACTED:github_token]" in stored.task
    assert stored.repo == str(git_repo)  # paths and ids are kept
    envelopes = list((relay_home / "handoffs").rglob("envelope.json"))
    assert envelopes, "the handoff signed no contract"
    during = files_under(relay_home)
    assert any("worktrees" in name and name.endswith("RELAY_DEMO_NOTES.md") for name in during)
    await engine.close()

    env = {**os.environ, **VAULT, "RELAY_HOME": str(relay_home), "RELAY_DEMO_STEP_DELAY": "0",
           "COLUMNS": "60"}  # narrow: a long token wraps in a table cell
    shown: dict[str, str] = {}
    for args in (("show", row.id), ("show", row.id, "--json"), ("sessions",),
                 ("sessions", "--json"), ("contract", "show", str(envelopes[0])),
                 ("contract", "verify", str(envelopes[0])), ("audit", "show"),
                 ("audit", "show", "--json"), ("history", row.id),
                 ("history", row.id, "--json")):
        out, err = relay_cli(*args, env=env)
        shown[" ".join(args)] = out + err
    assert row.id[:8] in shown[f"show {row.id}"] + shown["sessions"]  # not empty

    after = files_under(relay_home)
    leaks = {name: found for name, data in {**during, **after}.items()
             if (found := hits(data, PLANTED))}
    assert leaks == {}
    printed = {args: hits(text.encode(), PLANTED) for args, text in shown.items()}
    assert {args: found for args, found in printed.items() if found} == {}
