"""The session tools through the real server: start, events, wait, list, stop, hand off, and
the data folder shared with the window's engine."""

from __future__ import annotations

import sys
from pathlib import Path

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.conftest import make_repo
from tests.mcp.conftest import Server, call, call_error


async def test_a_demo_session_runs_and_its_events_can_be_polled(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp() as client:
        started = await call(client, "relay_start_session", task="Add a notes file",
                             repo=str(repo), chain=["demo"])
        session = started["session"]
        assert session["state"] in ("pending", "starting", "running")
        assert session["simulated"] is True
        assert session["running_here"] is True
        assert started["chain"] == ["demo"]
        done = await call(client, "relay_wait_session", session_id=session["id"], timeout_s=60)
        assert done["finished"] is True
        assert done["timed_out"] is False
        assert done["session"]["state"] == "completed"
        assert done["session"]["branch"] == f"relay/{session['id']}"
        assert done["session"]["usage"]["cost_usd"] > 0
        assert done["last_events"][-1]["text"] == "state → completed"

        latest = await call(client, "relay_session_events", session_id=session["id"][:6], limit=3)
        assert latest["finished"] is True
        assert [e["kind"] for e in latest["events"]][-1] == "state_changed"
        assert len(latest["events"]) == 3
        ids = [e["id"] for e in latest["events"]]
        assert ids == sorted(ids)
        assert latest["next_after_id"] == ids[-1]

        first = await call(client, "relay_session_events", session_id=session["id"], after_id=1,
                           limit=4)
        assert first["more"] is True
        assert len(first["events"]) == 4
        rest = await call(client, "relay_session_events", session_id=session["id"],
                          after_id=first["next_after_id"], limit=500)
        assert rest["more"] is False
        assert rest["events"][0]["id"] > first["next_after_id"]
        assert rest["events"][-1]["id"] == ids[-1]
        kinds = {e["kind"] for e in first["events"] + rest["events"]}
        assert {"tool_call", "tool_result", "turn_completed", "session_ended"} <= kinds
        text = (await client.call_tool("relay_session_events",
                                       {"session_id": session["id"], "limit": 2})).content
        assert f"#{ids[-1]} state_changed: [sim] state → completed" in str(text)

        listed = await call(client, "relay_list_sessions", limit=5)
        assert [s["id"] for s in listed["sessions"]] == [session["id"]]
        assert listed["sessions"][0]["task"] == "Add a notes file"
    assert (tmp_path / "relay-home" / "worktrees").is_dir()


async def test_verify_commands_are_split_like_a_shell_but_never_run_by_one(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    check = f"{sys.executable} -c 'import sys; sys.exit(0 if sys.argv[1] == \"a b\" else 3)' 'a b'"
    async with relay_mcp(RELAY_MCP_REQUIRE_APPROVAL="0") as client:  # the user lets it run commands
        started = await call(client, "relay_start_session", task="notes", repo=str(repo),
                             chain=["demo"], verify=[check, "echo shell && false"])
        assert started["verify"][0][-1] == "a b"
        assert started["verify"][1] == ["echo", "shell", "&&", "false"]
        done = await call(client, "relay_wait_session", session_id=started["session"]["id"],
                          timeout_s=60)
        # through a shell `echo shell && false` would fail; as an argv it is one echo
        assert done["session"]["state"] == "completed", done
        events = await call(client, "relay_session_events", session_id=started["session"]["id"],
                            limit=500)
        verdicts = [e["text"] for e in events["events"] if e["kind"] == "verify_result"]
        assert len(verdicts) == 2
        assert all(" passed" in v for v in verdicts)
        assert "verify echo shell && false passed" in verdicts[1]


async def test_the_window_and_the_server_share_one_data_folder(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    window = await Engine.open(load_config())  # as the window does, on the same RELAY_HOME
    try:
        before = await window.run_session(SessionSpec(repo=repo, task="from the window"))
    finally:
        await window.close()
    async with relay_mcp() as client:
        listed = await call(client, "relay_list_sessions")
        assert [(s["id"], s["state"], s["running_here"]) for s in listed["sessions"]] == [
            (before.id, "completed", False)]
        events = await call(client, "relay_session_events", session_id=before.id)
        assert events["events"][-1]["text"] == "state → completed"
        started = await call(client, "relay_start_session", task="from MCP", repo=str(repo),
                             chain=["demo"])
        mcp_id = started["session"]["id"]
        await call(client, "relay_wait_session", session_id=mcp_id, timeout_s=60)
    window = await Engine.open(load_config())
    try:
        row = await window.get_session(mcp_id)
        assert (row.task, row.state, row.runtime) == ("from MCP", "completed", "demo")
        kinds = [r.event.kind for r in await window.session_events(mcp_id)]
        assert kinds[-2:] == ["session_ended", "state_changed"]
    finally:
        await window.close()


async def test_closing_the_server_interrupts_the_sessions_it_runs(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp(RELAY_DEMO_STEP_DELAY="2") as client:
        started = await call(client, "relay_start_session", task="slow", repo=str(repo),
                             chain=["demo"])
        waited = await call(client, "relay_wait_session", session_id=started["session"]["id"],
                            timeout_s=0.5)
        assert waited["timed_out"] is True
        assert waited["session"]["state"] == "running"
    window = await Engine.open(load_config())
    try:
        row = await window.get_session(started["session"]["id"])
        assert row.state == "interrupted"
        assert row.reason is not None
    finally:
        await window.close()


async def test_stop_ends_a_running_session_and_leaves_a_finished_one_alone(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp(RELAY_DEMO_STEP_DELAY="2") as client:
        started = await call(client, "relay_start_session", task="slow", repo=str(repo),
                             chain=["demo"])
        session_id = started["session"]["id"]
        stopped = await call(client, "relay_stop_session", session_id=session_id)
        assert stopped["state"] == "cancelled"
        again = await call(client, "relay_stop_session", session_id=session_id)
        assert again["state"] == "cancelled"
        events = await call(client, "relay_session_events", session_id=session_id)
        assert events["events"][-1]["text"].startswith("state → cancelled")


async def test_a_running_session_is_handed_off_to_the_next_account(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp(RELAY_DEMO_STEP_DELAY="0.3") as client:
        started = await call(client, "relay_start_session", task="notes", repo=str(repo),
                             chain=["demo:primary", "demo:backup"])
        session_id = started["session"]["id"]
        assert started["session"]["runtime"] == "demo"
        # the runner accepts a handoff once its agent works: wait for the first agent event
        events = await call(client, "relay_session_events", session_id=session_id)
        while not any(e["kind"] == "session_started" for e in events["events"]):
            events = await call(client, "relay_session_events", session_id=session_id,
                                after_id=events["next_after_id"])
            if not events["events"]:
                await call(client, "relay_wait_session", session_id=session_id, timeout_s=0.2)
        answer = await call(client, "relay_handoff", session_id=session_id)
        assert answer["to"] is None
        assert "demo:backup" in answer["message"]
        done = await call(client, "relay_wait_session", session_id=session_id, timeout_s=60)
        assert done["session"]["state"] == "completed"
        history = await call(client, "relay_session_events", session_id=session_id, limit=500)
        steps = [e["text"] for e in history["events"] if e["kind"] == "handoff_step"]
        assert any("demo:primary → demo:backup" in s for s in steps), steps
        refused = await call_error(client, "relay_handoff", session_id=session_id)
        assert f"Session {session_id} has completed; nothing is running to hand off." in refused
