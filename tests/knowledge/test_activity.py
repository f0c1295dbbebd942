"""Agent activity from real sessions: the engine indexes a session when its runner ends,
and scans its repository when it starts."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from relay.core.events import AssistantText
from relay.core.models import SessionSpec
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine
from relay.knowledge.store import open_store
from relay.runtimes.demo import NOTES_FILE
from relay.sessions import facts
from tests.conftest import make_repo


@pytest.mark.parametrize(("sentence", "kind"), [
    ("Decision: keep the parser streaming.", "decision"),
    ("I'll use SQLite in WAL mode for the index.", "decision"),
    ("We will go with pygit2 rather than the git CLI.", "decision"),
    ("I chose bm25 over a vector index.", "decision"),
    ("Let's stick with the existing schema.", "decision"),
    ("Constraint: the CLI must run without Qt.", "constraint"),
    ("Never write to the user's checkout.", "constraint"),
    ("Do not change the public API.", "constraint"),
    ("The migration must stay backwards compatible.", "constraint"),
    ("Secrets are not allowed in the index.", "constraint"),
    ("I'll look at the repository first.", None),
    ("I do not see a test folder here.", None),
    ("The tests pass now.", None),
    ("We used to never cache.", None),
])
def test_sentences_are_classified_by_the_documented_rules(sentence: str, kind: str | None) -> None:
    assert facts.classify(sentence) == kind


def test_text_is_cut_into_sentences_without_code_or_markup() -> None:
    text = ("Here is the plan.\n\n- **Decision:** use `orjson` for speed. Never block the loop!\n"
            "```python\n# Decision: this is code, not a decision\nx = 1\n```\n"
            "1. I'll keep the old API. Done\n(simulated) We'll use the demo runtime.")
    assert facts.extract(text) == [
        ("decision", "Decision: use `orjson` for speed."),
        ("constraint", "Never block the loop!"),
        ("decision", "I'll keep the old API."),
        ("decision", "We'll use the demo runtime."),
    ]
    assert facts.extract("Never push to main. I'll use rebase.", decisions=False) == [
        ("constraint", "Never push to main.")]


def _payloads(store_path: Path, session_id: str, node_type: str) -> list[dict[str, object]]:
    store = open_store(store_path)
    try:
        rows = store.conn.execute("SELECT payload FROM nodes WHERE session_id=? AND node_type=?"
                                  " ORDER BY created_at, rowid", (session_id, node_type))
        return [json.loads(r[0]) for r in rows]
    finally:
        store.close()


async def test_a_demo_session_is_indexed_when_it_ends(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(
        repo=git_repo, task=f"Write the notes. Never edit README.md. Keep {NOTES_FILE} short.",
        runtime="demo"))
    assert row.state == "completed"
    await engine.knowledge.wait_idle()  # the runner's end started an ingest

    found = await engine.knowledge.facts(row.id)
    assert [(f.kind, f.text, f.files) for f in found if f.kind == "constraint"] == [
        ("constraint", "Never edit README.md.", ("README.md",))]
    assert [f.text for f in found if f.kind == "do_not_redo"] == [
        f"write_file: {NOTES_FILE}", f"edit_file: {NOTES_FILE}"]
    path = engine.knowledge.path
    tools = _payloads(path, row.id, "tool_use")
    assert [(t["name"], t["ok"]) for t in tools] == [
        ("list_files", True), ("write_file", True), ("edit_file", True)]
    store = open_store(path)
    try:
        touches = store.conn.execute(
            "SELECT e.to_id, e.weight FROM edges e WHERE e.from_id=? AND e.edge_type='touches'",
            (f"task:{row.id}",)).fetchall()
        assert [(t.rsplit(":", 1)[-1], w) for t, w in touches] == [(NOTES_FILE, 2.0)]
        task = store.conn.execute("SELECT payload FROM nodes WHERE id=?",
                                  (f"task:{row.id}",)).fetchone()
        assert json.loads(task[0])["state"] == "completed"
        cursor = store.cursor()
    finally:
        store.close()
    assert cursor == await engine.last_event_id()
    # the constraint is a chunk retrieval finds, under the file it names
    hits = await engine.knowledge.retrieve("edit README")
    assert (hits[0].kind, hits[0].path, hits[0].session_id) == ("constraint", "README.md", row.id)


async def test_ingest_is_incremental_and_idempotent(engine: Engine, git_repo: Path) -> None:
    first = await engine.run_session(SessionSpec(repo=git_repo, task="One. Never push.",
                                                 runtime="demo"))
    await engine.knowledge.wait_idle()
    before = await engine.knowledge.stats()

    again = await engine.knowledge.ingest(engine.store)  # nothing new
    assert again.sessions == 0
    assert await engine.knowledge.stats() == before

    # what an agent says later is added to its session, once
    said = "Decision: keep the notes in one file."
    for _ in range(2):
        await engine.writer.write(WriteOp(first.id, None, AssistantText(text=said)))
    report = await engine.knowledge.ingest(engine.store)
    assert (report.sessions, report.cursor) == (1, await engine.last_event_id())
    decisions = await engine.knowledge.facts(first.id, ["decision"])
    assert [d.text for d in decisions] == [said]

    # rebuilt from scratch, the graph is the same
    store = open_store(engine.knowledge.path)
    store.conn.execute("UPDATE meta SET value='0' WHERE key='cursor'")
    store.close()
    counts = (await engine.knowledge.stats()).nodes
    await engine.knowledge.ingest(engine.store)
    assert (await engine.knowledge.stats()).nodes == counts


async def test_a_session_start_scans_its_repository(engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"src/app.py": "def handle_request(req):\n    return req\n"})
    row = await engine.run_session(SessionSpec(repo=repo, task="Look around", runtime="demo"))
    assert row.state == "completed"
    await engine.knowledge.wait_idle()

    stats = await engine.knowledge.stats()
    assert [r.repo for r in stats.repos] == [str(repo.resolve())]
    hits = await engine.knowledge.retrieve("handle request", repo=repo)
    assert (hits[0].title, hits[0].path, hits[0].start, hits[0].end) == (
        "handle_request", "src/app.py", 1, 2)
    # the session's worktree lives in the data folder and is never scanned
    assert all(not (h.path or "").startswith("worktrees") for h in
               await engine.knowledge.retrieve("handle request", limit=100))


async def test_a_repository_that_cannot_be_scanned_never_fails_the_session(
        engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    caplog.set_level(logging.WARNING, logger="relay.knowledge.service")
    row = await engine.run_session(SessionSpec(repo=plain, task="Look", runtime="demo",
                                               worktree=False))
    await engine.knowledge.wait_idle()
    assert row.state == "completed"
    assert "not scanned" in caplog.text
    assert "not in a git repository" in caplog.text
    assert [f.kind for f in await engine.knowledge.facts(row.id)] == [
        "do_not_redo", "do_not_redo"]  # its activity is still indexed


async def test_a_claude_session_records_the_file_it_wrote(
        engine: Engine, git_repo: Path, fakes_on_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "b_write_tool")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Create hello.txt",
                                               runtime="claude"))
    assert row.state == "completed", row.reason
    await engine.knowledge.wait_idle()

    tools = _payloads(engine.knowledge.path, row.id, "tool_use")
    assert [(t["name"], t["ok"]) for t in tools] == [("Write", True)]
    assert "hello.txt" in str(tools[0]["summary"])
    files = _payloads(engine.knowledge.path, row.id, "do_not_redo")
    assert [f["text"] for f in files] == ["Write: hello.txt"]
    store = open_store(engine.knowledge.path)
    try:
        touched = store.conn.execute(
            "SELECT n.payload FROM edges e JOIN nodes n ON n.id = e.to_id"
            " WHERE e.from_id=? AND e.edge_type='touches'", (f"task:{row.id}",)).fetchall()
    finally:
        store.close()
    assert [json.loads(t[0])["path"] for t in touched] == ["hello.txt"]
