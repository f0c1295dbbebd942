"""History, diffs, rewind, review comments and retrieval through the real server."""

from __future__ import annotations

from pathlib import Path

import pygit2
from mcp import ClientSession

from tests.conftest import make_repo
from tests.mcp.conftest import Server, call, call_error

APP = "def greet_visitor(name):\n    return f'hello {name}'\n\n\nclass Ledger:\n    pass\n"


async def finished_session(client: ClientSession, repo: Path, task: str = "Add notes") -> str:
    started = await call(client, "relay_start_session", task=task, repo=str(repo), chain=["demo"])
    done = await call(client, "relay_wait_session", session_id=started["session"]["id"],
                      timeout_s=60)
    assert done["session"]["state"] == "completed", done
    session_id: str = started["session"]["id"]
    return session_id


async def test_history_and_diffs_of_a_session(relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP})
    async with relay_mcp() as client:
        session_id = await finished_session(client, repo)
        history = await client.call_tool("relay_session_history", {"session_id": session_id[:5]})
        assert not history.is_error
        assert history.structured_content is not None
        timeline = history.structured_content["timeline"]
        assert timeline["session_id"] == session_id
        assert timeline["branch"] == f"relay/{session_id}"
        assert [s["entry"] for s in timeline["stints"]] == ["demo"]
        assert timeline["commits"], "the run's end leaves a snapshot commit"
        assert "stint 1: demo" in str(history.content)
        tip = timeline["commits"][-1]["sha"]

        whole = await call(client, "relay_diff", sha_or_session=session_id)
        assert whole["kind"] == "session"
        assert [f["path"] for f in whole["files"]] == ["RELAY_DEMO_NOTES.md"]
        assert "+++ b/RELAY_DEMO_NOTES.md" in whole["diff"]
        assert whole["truncated"] is False
        assert whole["additions"] == whole["files"][0]["additions"] > 0

        cut = await call(client, "relay_diff", sha_or_session=session_id, max_lines=10)
        assert cut["truncated"] is True
        assert len(cut["diff"].splitlines()) == 10
        assert cut["total_lines"] == whole["total_lines"]

        stint = await call(client, "relay_diff", sha_or_session=session_id, stint=1)
        assert stint["kind"] == "stint"
        assert [f["path"] for f in stint["files"]] == ["RELAY_DEMO_NOTES.md"]
        commit = await call(client, "relay_diff", sha_or_session=tip[:12])
        assert commit["kind"] == "commit"
        assert "RELAY_DEMO_NOTES.md" in [f["path"] for f in commit["files"]]

        assert "has no stint 3" in await call_error(client, "relay_diff",
                                                    sha_or_session=session_id, stint=3)
        assert "stint needs a session id" in await call_error(client, "relay_diff",
                                                              sha_or_session=tip, stint=1)
        assert "No commit" in await call_error(client, "relay_diff", sha_or_session="deadbeef")
        assert "No session 'nope'." in await call_error(client, "relay_session_history",
                                                        session_id="nope")


async def test_rewind_makes_a_new_branch_and_can_continue_from_it(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp() as client:
        session_id = await finished_session(client, repo)
        git = pygit2.Repository(str(repo))
        branches_before = {name: str(git.branches[name].target) for name in git.branches.local}
        first = (await call(client, "relay_session_history",
                            session_id=session_id))["timeline"]["commits"][0]["sha"]
        rewound = await call(client, "relay_rewind", sha=first[:10])
        assert rewound == {"branch": f"relay/rewind-{first[:10]}", "sha": first, "session_id": None}
        git = pygit2.Repository(str(repo))
        after = {name: str(git.branches[name].target) for name in git.branches.local}
        assert {k: v for k, v in after.items() if k != rewound["branch"]} == branches_before
        assert after[rewound["branch"]] == first

        again = await call(client, "relay_rewind", sha=first, continue_session=True,
                           prompt="Add a second notes section")
        assert again["branch"] == f"relay/rewind-{first[:10]}-2"
        assert again["session_id"]
        done = await call(client, "relay_wait_session", session_id=again["session_id"],
                          timeout_s=60)
        assert done["session"]["state"] == "completed"
        assert done["session"]["task"].startswith("Add a second notes section")


async def test_a_review_comment_reaches_the_agent_as_its_next_instruction(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp() as client:
        session_id = await finished_session(client, repo)
        timeline = (await call(client, "relay_session_history", session_id=session_id))["timeline"]
        tip = timeline["commits"][-1]["sha"]
        runs_before = len(timeline["stints"][0]["run_ids"])
        answer = await call(client, "relay_review_comment", session_id=session_id, sha=tip,
                            path="RELAY_DEMO_NOTES.md", line=1, body="Name the project here")
        comment = answer["comment"]
        assert (comment["path"], comment["line"], comment["side"]) == ("RELAY_DEMO_NOTES.md", 1, "new")
        assert comment["state"] == "sent"  # the session was finished: it continues at once
        assert comment["excerpt"]
        done = await call(client, "relay_wait_session", session_id=session_id, timeout_s=60)
        assert done["session"]["state"] == "completed"
        later = (await call(client, "relay_session_history", session_id=session_id))["timeline"]
        assert sum(len(s["run_ids"]) for s in later["stints"]) == runs_before + 1
        assert any(e["kind"] == "review" for e in later["entries"])
        assert "The comment is empty." in await call_error(
            client, "relay_review_comment", session_id=session_id, sha=tip,
            path="RELAY_DEMO_NOTES.md", line=1, body="   ")
