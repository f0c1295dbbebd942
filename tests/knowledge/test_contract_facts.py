"""The handoff contract draws the session's decisions and constraints from the knowledge graph."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.events import AssistantText
from relay.core.models import SessionSpec
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine
from relay.sessions.briefing import KnownFacts, build_contract
from relay.sessions.contract import ContractV2, read_envelope
from relay.sessions.demo_key import demo_key

RULE = "Never touch README.md."


@pytest.fixture
async def signing_engine(vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def _handed_off_contract(engine: Engine, repo: Path, task: str) -> ContractV2:
    row = await engine.run_session(SessionSpec(
        repo=repo, task=task, runtime="demo", chain=["demo:primary", "demo:backup"],
        demo_limit_after=1))
    assert row.state == "completed", row.reason
    handoff = (await engine.handoffs(row.id))[0]
    assert handoff.state == "done"
    assert handoff.contract_dir
    folder = Path(handoff.contract_dir)  # a simulation's handoff: signed with its demo key
    contract = read_envelope(folder, demo_key(folder, create=False))
    assert isinstance(contract, ContractV2)
    return contract


async def test_a_constraint_from_the_task_reaches_the_signed_contract(signing_engine: Engine,
                                                                      git_repo: Path) -> None:
    contract = await _handed_off_contract(signing_engine, git_repo,
                                          f"Add a notes file. {RULE} Keep it short.")

    assert contract.constraints.count(RULE) == 1
    assert contract.constraints[0].startswith("Work only in this git worktree")  # its own first
    md = (Path((await signing_engine.handoffs(contract.session_id))[0].contract_dir or "")
          / "envelope.md").read_text()
    assert "## Constraints\n\n- Work only" in md
    assert f"- {RULE}" in md


async def test_the_handoff_goes_on_when_the_knowledge_graph_fails(
        signing_engine: Engine, git_repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def broken(session_id: str) -> KnownFacts:
        raise OSError("disk full")

    signing_engine.coordinator.facts_source = broken
    caplog.set_level(logging.ERROR, logger="relay.sessions.coordinator")
    contract = await _handed_off_contract(signing_engine, git_repo, f"Add notes. {RULE}")
    assert RULE not in contract.constraints
    assert "no decisions/constraints" in caplog.text


async def test_an_agent_decision_is_merged_once(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task=f"Write notes. {RULE}",
                                               runtime="demo"))
    said = "Decision: keep the notes in Markdown."
    later = ["I'll use one heading per section.", "Writing the file now.", "All done."]
    for text in (said, "decision:  keep the notes in markdown", *later):
        await engine.writer.write(WriteOp(row.id, None, AssistantText(text=text)))
    assert row.workdir is not None

    facts = await engine.coordinator.facts_source(row.id)  # type: ignore[misc]
    assert facts == KnownFacts(decisions=(said, later[0]), constraints=(RULE,))

    contract = build_contract(session_id=row.id, task=row.task,
                              records=await engine.session_events(row.id),
                              worktree=Path(row.workdir), branch=row.branch,
                              snapshot_sha=str(pygit2.Repository(row.workdir).head.target),
                              reason="usage_limit", facts=KnownFacts(
                                  decisions=(*facts.decisions, "DECISION: keep the notes in "
                                                               "markdown!"),
                                  constraints=(*facts.constraints, "do not undo or redo the "
                                               "previous agent's work unless it is wrong")))
    # the contract quotes the agent's last messages itself; the graph adds the earlier one
    assert contract.decisions == [f"Earlier agent: {later[0]}", f"Earlier agent: {later[1]}",
                                  said]
    assert contract.constraints[-1] == RULE
    assert sum("undo or redo" in c.lower() for c in contract.constraints) == 1
