"""relay_retrieve through the real server: the code of a repository a session ran in, and
what the session did."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_repo
from tests.mcp.conftest import Server, call, call_error
from tests.mcp.test_history import APP, finished_session


async def test_retrieve_finds_code_of_a_repository_a_session_ran_in(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP})
    async with relay_mcp() as client:
        await finished_session(client, repo)
        found = await call(client, "relay_retrieve", query="greet_visitor", limit=5)
        assert found["hits"], found
        best = found["hits"][0]
        assert best["path"] == "app.py"
        assert best["start"] == 1
        assert "greet_visitor" in best["title"] + best["snippet"]
        scoped = await call(client, "relay_retrieve", query="Ledger", repo=str(repo))
        assert any(h["title"].endswith("Ledger") or "Ledger" in h["snippet"] for h in scoped["hits"])
        never = await call_error(client, "relay_retrieve", query="x", repo=str(tmp_path / "other"))
        assert "nothing for" in never
        assert "relative" not in never
        assert "not an absolute path" in await call_error(client, "relay_retrieve", query="x",
                                                          repo="repo")
        assert "word" in await call_error(client, "relay_retrieve", query="!!!")


async def test_retrieve_finds_a_constraint_a_session_was_given(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp() as client:
        session_id = await finished_session(
            client, repo, task="Write the release notes. Never touch the vendored folder.")
        found = await call(client, "relay_retrieve", query="vendored")
        hits = [(h["kind"], h["session_id"]) for h in found["hits"]]
        # the constraint, and (once its run's end is indexed) the session's activity, which
        # quotes its task: nothing from elsewhere
        assert ("constraint", session_id) in hits
        assert set(hits) <= {("constraint", session_id), ("activity", session_id)}
        assert len(hits) == len(set(hits))  # each once
        constraint = next(h for h in found["hits"] if h["kind"] == "constraint")
        assert "Never touch the «vendored» folder." in constraint["snippet"]
