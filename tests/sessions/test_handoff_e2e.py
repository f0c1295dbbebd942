"""End to end with fake CLIs: a usage limit on one provider, the task finishes on the next."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest

from relay.core.audit import iter_entries, verify
from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.core.vault import Vault
from relay.engine.engine import Engine
from relay.sessions.contract import read_envelope
from relay.sessions.handoff import HandoffJournal
from relay.sessions.snapshot import trailers_of

STEPS = ["pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done"]


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def test_claude_usage_limit_hands_off_to_codex(engine: Engine, git_repo: Path,
                                                     fakes_on_path: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "f_usage_limit/run1_subscriber_five_hour")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    spec = SessionSpec(repo=git_repo, task="Add a greeting", chain=["claude:work", "codex"])
    row = await engine.run_session(spec)

    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [(r.runtime, r.outcome) for r in runs] == [("claude", "failed"), ("codex", "completed")]

    records = await engine.session_events(row.id)
    steps = [r.event for r in records if r.event.kind == "handoff_step"]
    assert [s.state for s in steps] == STEPS
    assert (steps[0].from_entry, steps[0].to_entry, steps[0].reason) == (
        "claude:work", "codex", "usage_limit")
    kinds = [r.event.kind for r in records]
    assert kinds.index("limit_hit") < kinds.index("handoff_step")

    handoff = (await HandoffJournal(engine.store, engine.writer).for_session(row.id))[0]
    assert handoff.state == "done"
    assert handoff.to_run_id == runs[1].id
    # the snapshot is a commit on the session's branch naming both ends
    repo = pygit2.Repository(str(row.workdir))
    snap = repo.revparse_single(handoff.snapshot_sha or "").peel(pygit2.Commit)
    assert trailers_of(snap)["Relay-To"] == "codex"
    assert repo.head.shorthand == f"relay/{row.id}"
    # the signed contract verifies and is what codex was given
    key = Vault.open(engine.config).signing_key(create=False)
    contract = read_envelope(Path(handoff.contract_dir or ""), key)
    assert contract.task_goal == "Add a greeting"
    assert contract.snapshot_commit_sha == handoff.snapshot_sha
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    codex_argv = next(c for c in calls if Path(c["argv"][0]).name == "codex")["argv"]
    assert codex_argv[-1].startswith("You are taking over this task from another agent.")
    # a new codex thread gets the contract as its developer instructions
    instructions = codex_argv[codex_argv.index("-c") + 1]
    assert instructions.startswith("developer_instructions=")
    assert "Add a greeting" in instructions
    assert contract.contract_id in instructions
    # the audit chain tells the story and verifies
    await engine.close()
    audit = engine.config.audit_path
    assert verify(audit).ok
    audited = [e.data["state"] for e in iter_entries(audit) if e.event == "session.handoff_step"]
    assert audited == STEPS


async def test_a_tampered_contract_is_never_injected(engine: Engine, git_repo: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.sessions import contract, coordinator

    real_write = contract.write_envelope

    def write_then_tamper(folder: Path, *args: object, **kwargs: object) -> object:
        signed = real_write(folder, *args, **kwargs)  # type: ignore[arg-type]
        path = folder / "envelope.json"
        path.write_bytes(path.read_bytes().replace(b"Write the notes", b"Delete the repo!"))
        return signed

    monkeypatch.setattr(coordinator, "write_envelope", write_then_tamper)
    spec = SessionSpec(repo=git_repo, task="Write the notes", chain=["demo", "demo:second"],
                       demo_limit_after=1)
    row = await engine.run_session(spec)
    assert row.state == "failed"
    assert "signature" in (row.reason or "").lower() or "tamper" in (row.reason or "").lower()
    runs = await engine.runs(row.id)
    assert len(runs) == 1  # the receiver never started
    steps = [r.event.state for r in await engine.session_events(row.id)
             if r.event.kind == "handoff_step"]
    assert steps == ["pausing", "snapshotted", "envelope_built", "failed"]


async def test_between_two_claude_accounts_the_conversation_is_carried_natively(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    work, personal = tmp_path / "claude-work", tmp_path / "claude-personal"
    for folder, scenario in ((work, "f_usage_limit/run1_subscriber_five_hour"),
                             (personal, "g_resume/run2_resume")):
        folder.mkdir()
        (folder / ".relay-fake-scenario").write_text(scenario)
        await engine.accounts.add("claude", folder.name.removeprefix("claude-"), folder)
    spec = SessionSpec(repo=git_repo, task="Add a greeting",
                       chain=["claude:work", "claude:personal"])
    row = await engine.run_session(spec)

    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [r.outcome for r in runs] == ["failed", "completed"]
    first_id = runs[0].agent_session_id
    assert first_id
    # the transcript went to the personal account's folder, and claude resumed it there
    carried = list((personal / "projects").glob(f"*/{first_id}.jsonl"))
    assert len(carried) == 1
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    second = [c for c in calls if Path(c["argv"][0]).name == "claude"][1]["argv"]
    assert second[second.index("--resume") + 1] == first_id
    assert "--append-system-prompt-file" in second
    notices = [r.event.message for r in await engine.session_events(row.id)
               if r.event.kind == "notice"]
    assert any(n.startswith("The claude conversation goes on natively under claude:personal")
               for n in notices)
    # the source account's transcript is untouched by the carry
    assert list((work / "projects").glob(f"*/{first_id}.jsonl"))
