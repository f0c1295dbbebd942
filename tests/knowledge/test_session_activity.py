"""Searching for what agents did: each session's activity (what its continuation contract
reads — work done, plan, the agents' last words — and its tool calls) is one chunk the
knowledge search finds, kept up to date when a run ends and when a handoff builds its
contract; a hit that several sessions share shows once."""

from __future__ import annotations

from pathlib import Path

from relay.core.events import AssistantText, ToolCall
from relay.core.models import SessionSpec
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine
from relay.runtimes.demo import NOTES_FILE


async def test_a_search_for_an_agents_tool_call_or_summary_finds_its_session(
        engine: Engine, git_repo: Path) -> None:
    other = await engine.run_session(SessionSpec(repo=git_repo, task="Look around only.",
                                                 runtime="demo"))
    row = await engine.run_session(SessionSpec(
        repo=git_repo, task="Write the notes.", runtime="demo",
        chain=["demo:primary", "demo:backup"], demo_limit_after=1))
    assert row.state == "completed", row.reason
    await engine.knowledge.wait_idle()  # the run's end indexed it
    # the work the contract lists as done: the file the agents wrote
    hits = await engine.knowledge.retrieve(f"edit_file {NOTES_FILE}")
    mine = [h for h in hits if h.kind == "activity" and h.session_id == row.id]
    assert mine
    assert mine[0].title == "Write the notes."
    assert "edit_file" in mine[0].snippet or NOTES_FILE.split(".")[0] in mine[0].snippet

    # later words of the agent — a tool call's argument, its summary — once indexed again
    await engine.writer.write(WriteOp(row.id, None, ToolCall(
        call_id="c-late", name="Grep", input={"pattern": "frobnicate_widgets"})))
    await engine.writer.write(WriteOp(row.id, None, AssistantText(
        text="I moved the quokka registry next to the parser.")))
    assert not [h for h in await engine.knowledge.retrieve("quokka") if h.session_id == row.id]
    await engine.knowledge.ingest(engine.store)
    for word in ("frobnicate", "quokka"):
        found = await engine.knowledge.retrieve(word)
        assert [(h.kind, h.session_id) for h in found] == [("activity", row.id)], word
    assert other.id not in {h.session_id for h in await engine.knowledge.retrieve("quokka")}


async def test_a_handoff_indexes_what_the_agent_did_so_far(engine: Engine,
                                                           git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Write notes.",
                                               runtime="demo"))
    await engine.knowledge.wait_idle()
    await engine.writer.write(WriteOp(row.id, None, ToolCall(
        call_id="c-1", name="Bash", input={"command": "make zymurgy"})))
    # what the handoff coordinator calls to build the contract
    await engine.knowledge.contract_facts(engine.store, row.id)
    hits = await engine.knowledge.retrieve("zymurgy")
    assert [(h.kind, h.session_id) for h in hits] == [("activity", row.id)]


async def test_the_same_fact_of_several_sessions_is_one_hit(engine: Engine,
                                                            git_repo: Path) -> None:
    task = "Write the notes. Never edit README.md."
    rows = [await engine.run_session(SessionSpec(repo=git_repo, task=task, runtime="demo"))
            for _ in range(2)]
    await engine.knowledge.wait_idle()
    await engine.knowledge.ingest(engine.store)
    for session in rows:  # each session has the constraint…
        facts = await engine.knowledge.facts(session.id, ["constraint"])
        assert [f.text for f in facts] == ["Never edit README.md."]
    hits = await engine.knowledge.retrieve("Never edit README")
    constraints = [h for h in hits if h.kind == "constraint"]
    assert len(constraints) == 1  # …and the search shows it once
    assert constraints[0].path == "README.md"
    # each session's own activity is its own hit, though
    assert {h.session_id for h in hits if h.kind == "activity"} == {r.id for r in rows}
