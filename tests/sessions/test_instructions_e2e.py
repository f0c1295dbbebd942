"""Instruction files reach the agents that do not read them — and only those — end to end."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.core.vault import Vault
from relay.engine.engine import Engine
from relay.runtimes.demo import NOTES_FILE
from relay.sessions.contract import ContractV2, read_envelope
from relay.sessions.handoff import HandoffJournal
from tests.conftest import make_repo

CLAUDE_RULE = "Always run make lint before you commit."
AGENTS_RULE = "Name branches feature/<topic>."
SECRET = "sk-ant-api03-" + "aB3dE5fG7h" * 9 + "AA"


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


@pytest.fixture
def fake_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fakes_on_path: Path) -> Path:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "a_text_stream_json")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    return log


def calls(log: Path, name: str) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [e for e in entries if Path(e["argv"][0]).name == name]


def developer_instructions(argv: list[str]) -> str | None:
    values = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-c"]
    return next((v for v in values if v.startswith("developer_instructions=")), None)


async def test_the_demo_gets_them_in_its_prompt(engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"CLAUDE.md": f"{CLAUDE_RULE}\n"})
    row = await engine.run_session(SessionSpec(repo=repo, task="Add a greeting"))
    assert row.state == "completed", row.reason
    notes = (Path(row.workdir or "") / NOTES_FILE).read_text()
    assert "<project-instructions>" in notes
    assert CLAUDE_RULE in notes
    assert notes.index(CLAUDE_RULE) < notes.index("Add a greeting")
    messages = [r.event.message for r in await engine.session_events(row.id)
                if r.event.kind == "notice"]
    assert "Instructions passed on to demo in the prompt: CLAUDE.md." in messages


async def test_claude_reads_claude_md_itself_and_gets_agents_md(
        engine: Engine, tmp_path: Path, fake_log: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"CLAUDE.md": f"{CLAUDE_RULE}\n",
                                         "AGENTS.md": f"{AGENTS_RULE}\n"})
    row = await engine.run_session(SessionSpec(repo=repo, task="Add a greeting", runtime="claude"))
    assert row.state == "completed", row.reason
    (call,) = calls(fake_log, "claude")
    assert "--append-system-prompt-file" in call["argv"]
    appended = call["append_system_prompt"]
    assert AGENTS_RULE in appended
    assert CLAUDE_RULE not in appended
    assert "Add a greeting" in call["prompt"]  # the first stdin line
    assert not any(AGENTS_RULE in arg for arg in call["argv"])


async def test_nothing_is_added_when_the_runtime_reads_every_file(
        engine: Engine, tmp_path: Path, fake_log: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": f"{AGENTS_RULE}\n"})
    row = await engine.run_session(SessionSpec(repo=repo, task="Add a greeting", runtime="codex"))
    assert row.state == "completed", row.reason
    (call,) = calls(fake_log, "codex")
    assert developer_instructions(call["argv"]) is None
    assert not any(AGENTS_RULE in arg for arg in call["argv"])


async def test_codex_gets_claude_md_scrubbed_as_developer_instructions(
        engine: Engine, tmp_path: Path, fake_log: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"CLAUDE.md": f"{CLAUDE_RULE}\nDeploy key: {SECRET}\n"})
    row = await engine.run_session(SessionSpec(repo=repo, task="Add a greeting", runtime="codex"))
    assert row.state == "completed", row.reason
    (call,) = calls(fake_log, "codex")
    given = developer_instructions(call["argv"])
    assert given is not None
    assert CLAUDE_RULE in given
    assert "[REDACTED:anthropic_key]" in given
    assert SECRET not in fake_log.read_text()
    assert call["argv"][-1] == "Add a greeting"
    stored = json.dumps([r.event.model_dump(mode="json")
                         for r in await engine.session_events(row.id)])
    assert SECRET not in stored
    assert CLAUDE_RULE not in stored


async def test_a_handoff_from_claude_to_codex_carries_claude_md(
        engine: Engine, tmp_path: Path, fake_log: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "f_usage_limit/run1_subscriber_five_hour")
    repo = make_repo(tmp_path / "repo", {"CLAUDE.md": f"{CLAUDE_RULE}\n"})
    spec = SessionSpec(repo=repo, task="Add a greeting", chain=["claude:work", "codex"])
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason
    (claude,) = calls(fake_log, "claude")
    assert "--append-system-prompt-file" not in claude["argv"]  # it reads CLAUDE.md itself
    (codex,) = calls(fake_log, "codex")
    given = developer_instructions(codex["argv"])
    assert given is not None
    assert CLAUDE_RULE in given  # the project's instructions …
    assert "Continuation contract" in given  # … and the contract, in one channel
    assert given.index(CLAUDE_RULE) < given.index("Continuation contract")
    # the signed contract says which files were in force, and how
    handoff = (await HandoffJournal(engine.store, engine.writer).for_session(row.id))[0]
    key = Vault.open(engine.config).signing_key(create=False)
    contract = read_envelope(Path(handoff.contract_dir or ""), key)
    assert isinstance(contract, ContractV2)
    assert [(i.runtime, i.path, i.how) for i in contract.instructions] == [
        ("claude", "CLAUDE.md", "native")]
    assert "`CLAUDE.md` read by claude itself" in given


def test_relay_cli_run_prints_one_instructions_line(tmp_path: Path) -> None:
    from tests.cli.test_cli import cli

    repo = make_repo(tmp_path / "repo", {"AGENTS.md": f"{AGENTS_RULE}\n",
                                         "CLAUDE.md": f"{CLAUDE_RULE}\n"})
    proc = cli("run", "Add a greeting", "--repo", str(repo), "--provider", "demo")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("instructions:")]
    assert lines == ["instructions: AGENTS.md (passed on), CLAUDE.md (passed on)"]
    out = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(out) if line.startswith("Relay session "))
    assert out[header + 1] == lines[0]  # right under the session header
