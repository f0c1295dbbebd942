"""A planted API key reaches the agent that needs it and nothing else.

Two ``api_key`` accounts hold known, random keys: ``claude:leak`` hits a usage limit
(recorded capture) and hands the task to ``codex:leak``, with a setup command and an
acceptance check that record their environment. Then the things a user exports
(``audit show``, ``accounts list --json``, ``sessions``, ``show --json``, a demo handoff,
``accounts test``) run as real processes. Every file under the data folder (the SQLite
database and its WAL, the audit log, envelopes and briefs, worktrees, the vault index and
the encrypted vault itself), every captured output and every log record is searched for
each key — raw, as base64 at every alignment, as hex, as UTF-16 and by a fragment.
The fakes log only a SHA-256 prefix of each credential they got, which is how the test
knows the right key reached the right agent.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.account_check import check_account
from relay.engine.engine import Engine
from tests.conftest import FAKES_DIR
from tests.secrets.scan import files_under, hits

CLAUDE_KEY = "sk-ant-api03-PLANTED" + secrets.token_urlsafe(64)
CODEX_KEY = "sk-proj-PLANTED" + secrets.token_urlsafe(64)
USER_KEY = "sk-ant-api03-USEREXPORTED" + secrets.token_urlsafe(32)
VAULT = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
         "RELAY_VAULT_PASSPHRASE": "test-vault-passphrase"}
DUMP_ENV = ("import json, os, sys; "
            "open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))")


def test_the_search_finds_every_form() -> None:
    """The search itself must be able to fail: each encoding of the key is found."""
    for prefix in (b"", b"x", b"xy"):
        blob = prefix + CLAUDE_KEY.encode()
        assert hits(base64.b64encode(blob), [CLAUDE_KEY])
        assert hits(base64.urlsafe_b64encode(blob + b"tail"), [CLAUDE_KEY])
    assert hits(CLAUDE_KEY.encode().hex().encode(), [CLAUDE_KEY])
    assert hits(json.dumps({"k": CLAUDE_KEY[5:-5]}).encode(), [CLAUDE_KEY])  # a fragment
    assert not hits(b"nothing here", [CLAUDE_KEY])


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


def relay_cli(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "relay.cli.main", *args], env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


async def test_a_planted_key_lands_only_in_its_agent(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path, relay_home: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "fake.log"
    for name in ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN", "CODEX_API_KEY",
                 "OPENAI_API_KEY", "CODEX_ACCESS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", USER_KEY)  # the user exported another key
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    claude_home, codex_home = tmp_path / "claude-leak", tmp_path / "codex-leak"
    claude_home.mkdir()
    codex_home.mkdir()
    (claude_home / ".relay-fake-scenario").write_text("f_usage_limit/run1_subscriber_five_hour")
    await engine.accounts.add("claude", "leak", claude_home, "api_key", CLAUDE_KEY)
    await engine.accounts.add("codex", "leak", codex_home, "api_key", CODEX_KEY)
    setup_env, verify_env = tmp_path / "setup-env.json", tmp_path / "verify-env.json"
    spec = SessionSpec(repo=git_repo, task="Add a greeting", chain=["claude:leak", "codex:leak"],
                       setup_command=[sys.executable, "-c", DUMP_ENV, str(setup_env)],
                       verify=[[sys.executable, "-c", DUMP_ENV, str(verify_env)]])

    row = await engine.run_session(spec)

    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [(r.runtime, r.outcome) for r in runs] == [("claude", "failed"),
                                                      ("codex", "completed")]
    steps = [r.event.state for r in await engine.session_events(row.id)
             if r.event.kind == "handoff_step"]
    assert steps[-1] == "done"
    assert list((relay_home / "handoffs").rglob("envelope.json"))  # an envelope was written
    # each agent got its own key, and only that one
    calls: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    by_cli = {Path(c["argv"][0]).name: c["credentials"] for c in calls}
    assert by_cli["claude"]["ANTHROPIC_API_KEY"] == digest(CLAUDE_KEY)  # not the user's
    assert by_cli["claude"]["CODEX_API_KEY"] is None
    assert by_cli["codex"]["CODEX_API_KEY"] == digest(CODEX_KEY)
    assert by_cli["codex"]["ANTHROPIC_API_KEY"] == digest(USER_KEY)  # the user's own, untouched
    # the setup command and the acceptance check ran without either key
    for dumped in (setup_env, verify_env):
        seen = dumped.read_bytes()
        assert json.loads(seen)["ANTHROPIC_API_KEY"] == USER_KEY  # it is the user's environment
        assert not hits(seen, [CLAUDE_KEY, CODEX_KEY]), dumped.name
    leaky = await engine.accounts.get("claude", "leak")
    assert leaky is not None
    check = await check_account(leaky, engine.accounts, engine.config)
    assert check.status == "limit"
    shown = [repr(check), check.summary]
    during = files_under(relay_home)  # with the database's WAL as the engine left it
    assert any(name.endswith("relay.db-wal") for name in during) or "relay.db" in during
    await engine.close()

    env = {**os.environ, **VAULT, "RELAY_HOME": str(relay_home), "RELAY_DEMO_STEP_DELAY": "0",
           "PATH": f"{FAKES_DIR / 'bin'}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    for args in (("audit", "show", "--limit", "1000"), ("audit", "show", "--json"),
                 ("audit", "verify"), ("accounts", "list"), ("accounts", "list", "--json"),
                 ("sessions",), ("show", row.id), ("show", row.id, "--json"),
                 ("demo", "--limit-after", "1"), ("accounts", "test", "claude", "leak"),
                 ("accounts", "test", "codex", "leak", "--json"), ("doctor",)):
        shown.append(relay_cli(*args, env=env))
    assert "claude:leak" in shown[-9]  # the exports are not empty
    assert '"status": "ok"' in shown[-2]

    planted = [CLAUDE_KEY, CODEX_KEY]
    leaks = {name: found for name, data in {**during, **files_under(relay_home)}.items()
             if (found := hits(data, planted))}
    assert leaks == {}
    assert "vault.bin" in files_under(relay_home)  # the keys are there, encrypted
    assert [i for i, text in enumerate(shown) if hits(text.encode(), planted)] == []
    records = [f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records]
    assert [r for r in records if hits(r.encode(), planted)] == []
    assert not hits(log.read_bytes(), planted)  # the fakes logged digests only
