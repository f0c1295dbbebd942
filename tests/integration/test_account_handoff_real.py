"""End to end: a usage limit on one Claude account hands the task to a second Claude
account, and the real Claude Code CLI resumes the *same* conversation there.

``relay-cli run --provider claude:work --provider claude:personal`` with two registered
accounts (``relay-cli accounts add claude <label> --config-dir <folder>``). Each folder
holds its own subscriber login — a ``.credentials.json`` with a ``claudeAiOauth`` token,
which the real CLI 2.1.197 reads from ``CLAUDE_CONFIG_DIR`` and sends as
``Authorization: Bearer <token>`` — so the one loopback mock tells the accounts apart by
credential (``match.credential``): ``work`` makes a first step (a Write), then gets the
subscriber usage limit (429 with ``anthropic-ratelimit-unified-*`` headers, reset in
2 h); ``personal`` writes the file and finishes. A subscriber login is needed for the
first account: with an API key Claude Code does not recognise a usage limit
(``tests/fixtures/claude/NOTES.md`` section 6).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import mock_anthropic
from tests.fakes.mock_anthropic import request_credential
from tests.integration.helpers import (
    RELAY,
    CliRun,
    claude_env,
    claude_transcript,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    run_cli,
)

pytestmark = pytest.mark.integration


TOKEN_WORK = "sk-ant-oat01-relay-account-work"
TOKEN_PERSONAL = "sk-ant-oat01-relay-account-personal"
TASK = "Write outline.txt and greeting.txt (RELAY-ACCOUNT-HANDOFF-7731)"


def _login(folder: Path, token: str) -> Path:
    """An account folder holding a subscriber login, as `claude /login` leaves it."""
    folder.mkdir(parents=True)
    credentials = folder / ".credentials.json"
    credentials.write_text(json.dumps({"claudeAiOauth": {
        "accessToken": token,
        "refreshToken": token.replace("oat01", "ort01"),
        "expiresAt": int(time.time() * 1000) + 365 * 24 * 3600 * 1000,  # no refresh attempt
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max"}}))
    return folder


def _events(run: CliRun) -> list[dict[str, Any]]:
    return [json.loads(line)["event"] for line in run.stdout.splitlines() if line.strip()]


def _kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]


def _message_texts(messages: list[dict[str, Any]]) -> list[str]:
    """Every text block (and string content) of a Messages API ``messages`` list."""
    found: list[str] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            found.append(content)
        else:
            found += [str(b["text"]) for b in content if isinstance(b, dict) and "text" in b]
    return found


def _tool_use_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [str(b["id"]) for m in messages if isinstance(m["content"], list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]


def test_usage_limit_on_one_claude_account_resumes_natively_on_the_next(
        real_claude: Path, git_repo: Path, tmp_path: Path, relay_home: Path) -> None:
    resets_at = int(time.time()) + 7200
    usage_limit = {"status": 429, "type": "rate_limit_error", "message": "Error",
                   "headers": {"anthropic-ratelimit-unified-status": "rejected",
                               "anthropic-ratelimit-unified-reset": str(resets_at),
                               "anthropic-ratelimit-unified-representative-claim": "five_hour",
                               "anthropic-ratelimit-unified-overage-status": "rejected"}}
    script = {"turns": [
        {"match": {"credential": TOKEN_WORK}, "text": "First the outline.",
         "tool_use": {"name": "Write", "id": "toolu_mock_work_outline",
                      "input": {"file_path": "outline.txt", "content": "1. greet\n"}}},
        {"match": {"credential": TOKEN_WORK}, "repeat": -1, "error": usage_limit},
        {"match": {"credential": TOKEN_PERSONAL}, "text": "Continuing with the greeting.",
         "tool_use": {"name": "Write", "id": "toolu_mock_personal_greeting",
                      "input": {"file_path": "greeting.txt", "content": "hello from personal\n"}}},
        {"match": {"credential": TOKEN_PERSONAL}, "text": "Wrote greeting.txt."}]}
    work = _login(tmp_path / "accounts" / "work", TOKEN_WORK)
    personal = _login(tmp_path / "accounts" / "personal", TOKEN_PERSONAL)
    personal_login = (personal / ".credentials.json").read_bytes()

    with mock_anthropic.serve(script) as mock:
        env = claude_env(tmp_path, mock)
        # No key in the environment: each account's own login must be what is used
        # (an unregistered entry would run in env's empty CLAUDE_CONFIG_DIR and fail).
        del env["ANTHROPIC_API_KEY"]
        env.update({"RELAY_HOME": str(relay_home), "RELAY_CLAUDE_BIN": str(real_claude),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
                    "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                    "RELAY_VAULT_PASSPHRASE": "integration-passphrase"})
        for label, folder in (("work", work), ("personal", personal)):
            added = run_cli([*RELAY, "accounts", "add", "claude", label, "--config-dir", folder],
                            env=env, cwd=git_repo)
            assert added.returncode == 0, added.describe()
            # (the console wraps long lines: compare without whitespace)
            assert "".join(added.stdout.split()) == f"Accountclaude:{label}:{folder.resolve()}"
        run = run_cli([*RELAY, "run", TASK, "--repo", git_repo, "--provider", "claude:work",
                       "--provider", "claude:personal", "--json"],
                      env=env, cwd=git_repo, timeout=180)
        requests = mock.message_requests()
        unserved = mock.unserved_turns()

    assert run.returncode == 0, run.describe()
    events = _events(run)
    session = str(json.loads(run.stdout.splitlines()[0])["session_id"])
    worktree = (relay_home / "worktrees" / session).resolve()

    # --- the mock: work twice (its step, then the limit), then personal twice
    assert [request_credential(r["headers"]) for r in requests] == [
        TOKEN_WORK, TOKEN_WORK, TOKEN_PERSONAL, TOKEN_PERSONAL], run.describe()
    assert [r["response"]["status"] for r in requests] == [200, 429, 200, 200]
    assert unserved == []

    # --- the limit, and the handoff between the two accounts
    limits = _kinds(events, "limit_hit")
    assert [(e["limit"], e["blocking"]) for e in limits] == [("usage_limit", True)]
    assert limits[0]["resets_at"] is not None
    steps = _kinds(events, "handoff_step")
    assert [e["state"] for e in steps] == [
        "pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done"]
    assert {(e["from_entry"], e["to_entry"]) for e in steps} == {("claude:work", "claude:personal")}
    assert steps[0]["reason"] == "usage_limit"
    notes = [e["message"] for e in _kinds(events, "notice") if e["category"] == "fallback"]
    assert len(notes) == 1, notes
    assert notes[0].startswith("The claude conversation goes on natively under claude:personal ")
    assert "Copied 1 and updated 0 file(s) into the target account." in notes[0]
    started = _kinds(events, "session_started")
    assert len(started) == 2
    agent_session = started[0]["agent_session_id"]
    assert started[1]["agent_session_id"] == agent_session      # the same conversation
    assert _kinds(events, "state_changed")[-1]["state"] == "completed"

    # --- both accounts' work is in the worktree, nothing in the user's checkout
    assert (worktree / "outline.txt").read_text() == "1. greet\n"
    assert (worktree / "greeting.txt").read_text() == "hello from personal\n"
    assert not (git_repo / "greeting.txt").exists()

    # --- personal's first request re-sent work's conversation (native resume) …
    resumed = requests[2]
    assert resumed["headers"]["X-Claude-Code-Session-Id"] == agent_session
    messages = resumed["body"]["messages"]
    texts = _message_texts(messages)
    asked = [i for i, t in enumerate(texts) if TASK in t]
    answered = texts.index("First the outline.")
    taking_over = [i for i, t in enumerate(texts) if "You are taking over this task" in t]
    assert asked, texts
    assert taking_over, texts
    assert asked[0] < answered < taking_over[-1]
    assert _tool_use_ids(messages) == ["toolu_mock_work_outline"]
    # … and had the verified continuation contract appended to its system prompt
    contract_dir = relay_home / "handoffs" / session / steps[0]["handoff_id"]
    brief = (contract_dir / "brief.md").read_text()
    assert brief.startswith("# Continuation contract ")
    system = resumed["body"]["system"][-1]["text"]
    assert brief.strip() in system
    assert "# Continuation contract " not in json.dumps(requests[1]["body"]["system"])

    verified = run_cli([*RELAY, "contract", "verify", contract_dir], env=env, cwd=git_repo)
    assert verified.returncode == 0, verified.describe()

    # --- work's transcript was left alone; personal continued its own copy
    work_transcript = claude_transcript({"CLAUDE_CONFIG_DIR": str(work)}, worktree, agent_session)
    personal_transcript = claude_transcript({"CLAUDE_CONFIG_DIR": str(personal)}, worktree,
                                            agent_session)
    work_bytes = work_transcript.read_bytes()
    personal_bytes = personal_transcript.read_bytes()
    assert personal_bytes.startswith(work_bytes)      # the carried copy, then personal's turns
    assert len(personal_bytes) > len(work_bytes)
    assert b"toolu_mock_personal_greeting" not in work_bytes
    assert b"toolu_mock_personal_greeting" in personal_bytes
    assert (personal / ".credentials.json").read_bytes() == personal_login
    default_dir = Path(env["CLAUDE_CONFIG_DIR"])
    assert not (default_dir / "projects").exists()    # every run used a registered account
