"""Claude Code's hook events (payloads shaped as Claude Code 2.1.197 sends them) through
BoardService.hook: the live state machine, comment delivery and Stop holds (across a host
restart), the link to a Relay-run session, the guard's answer and its audited event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay.core import guard
from relay.core.config import load_config
from relay.core.events import BOARD_SESSION, GuardDecision, LiveStateChanged
from relay.core.guard import Environment, EnvRefs, Verdict
from relay.core.models import SessionSpec
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine

SID = "9f25e57d-8bab-476a-a4b8-cbd87159cd67"


def hook(name: str, cwd: Path, sid: str = SID, **fields: Any) -> dict[str, Any]:
    """A hook payload as Claude Code 2.1.197 sends it (see the captured hooks.jsonl)."""
    base: dict[str, Any] = {
        "session_id": sid, "cwd": str(cwd), "hook_event_name": name,
        "transcript_path": f"/home/u/.claude/projects/-repo/{sid}.jsonl"}
    if name not in ("SessionStart", "SessionEnd"):
        base.update(permission_mode="default", prompt_id="60d5bd34-8281-492b-90c7-6ee426e5e632")
    return {**base, **fields}


def start(cwd: Path, sid: str = SID, source: str = "startup") -> dict[str, Any]:
    return hook("SessionStart", cwd, sid, source=source)


def prompt(cwd: Path, sid: str = SID, text: str = "run echo") -> dict[str, Any]:
    return hook("UserPromptSubmit", cwd, sid, prompt=text)


def pre(cwd: Path, tool: str, tool_input: dict[str, Any], sid: str = SID) -> dict[str, Any]:
    return hook("PreToolUse", cwd, sid, tool_name=tool, tool_input=tool_input,
                tool_use_id="toolu_1", effort={"level": "high"})


def post(cwd: Path, tool: str, tool_input: dict[str, Any], response: Any = "",
         sid: str = SID) -> dict[str, Any]:
    return hook("PostToolUse", cwd, sid, tool_name=tool, tool_input=tool_input,
                tool_response=response, tool_use_id="toolu_1")


def stop(cwd: Path, sid: str = SID, active: bool = False) -> dict[str, Any]:
    return hook("Stop", cwd, sid, stop_hook_active=active, last_assistant_message="done",
                background_tasks=[], session_crons=[])


async def live_events(engine: Engine) -> list[LiveStateChanged]:
    records = await engine.store.events_after(0, session_id=BOARD_SESSION, limit=10_000)
    return [r.event for r in records if isinstance(r.event, LiveStateChanged)]


async def test_the_live_state_walks_through_a_session(engine: Engine, repo: Path) -> None:
    board = engine.board
    walk = [
        (start(repo), ("idle", None)),
        (prompt(repo), ("working", None)),
        (pre(repo, "Bash", {"command": "echo hi > x.txt", "description": "write"}),
         ("working", None)),
        (hook("Notification", repo, message="Claude needs your permission to use Bash",
              notification_type="permission_prompt"), ("needs_input", "permission")),
        (post(repo, "Bash", {"command": "echo hi > x.txt"}, {"stdout": ""}), ("working", None)),
        (pre(repo, "AskUserQuestion", {"questions": [{"question": "Which database?",
                                                      "options": []}]}),
         ("needs_input", "question")),
        (stop(repo), ("idle", None)),
        (hook("Notification", repo, message="Claude is waiting for your input",
              notification_type="idle_prompt"), ("idle", None)),
        (prompt(repo), ("working", None)),
        (hook("StopFailure", repo, error="rate_limit",
              error_details="429 You've hit your usage limit"), ("quota_blocked", None)),
        (prompt(repo), ("working", None)),
        (hook("StopFailure", repo, error="server_error"), ("idle", None)),
        (hook("SessionEnd", repo, reason="other"), ("ended", None)),
    ]
    for payload, (state, needs) in walk:
        await board.hook(payload)
        live = board.live_states().get(SID)
        assert live is not None
        assert (live.state, live.needs) == (state, needs), payload["hook_event_name"]
    live = board.live_states().get(SID)
    assert live is not None
    assert live.source == "startup"
    assert live.cwd == str(repo)
    assert live.detail == "other"
    # an event only when the state (or what it needs) changed
    changes = await live_events(engine)
    assert [(e.previous, e.state) for e in changes] == [
        (None, "idle"), ("idle", "working"), ("working", "needs_input"),
        ("needs_input", "working"), ("working", "needs_input"), ("needs_input", "idle"),
        ("idle", "working"), ("working", "quota_blocked"), ("quota_blocked", "working"),
        ("working", "idle"), ("idle", "ended")]
    assert changes[2].detail == "Claude needs your permission to use Bash"
    assert changes[4].detail == "Which database?"
    assert "usage limit" in changes[7].detail


async def test_the_prompt_is_never_kept_and_a_tool_input_is_summarised(
        engine: Engine, repo: Path) -> None:
    secret_prompt = "my private prompt text 7f3a"
    await engine.board.hook(start(repo))
    await engine.board.hook(prompt(repo, text=secret_prompt))
    long_command = "echo " + "x" * 100_000
    await engine.board.hook(pre(repo, "Bash", {"command": long_command}))
    await engine.board.hook(hook("Notification", repo, message="needs permission",
                                 notification_type="permission_prompt"))
    await engine.writer.flush()
    async with engine.store.conn.execute("SELECT payload FROM events") as cur:
        payloads = [r[0] for r in await cur.fetchall()]
    async with engine.store.conn.execute("SELECT * FROM hooked_sessions") as cur:
        rows = [json.dumps(list(r)) for r in await cur.fetchall()]
    assert not any(secret_prompt in p for p in payloads + rows)
    assert all(len(p) < 4096 for p in payloads + rows)


async def test_session_start_answers_with_the_session_id_and_how_to_link(
        engine: Engine, repo: Path) -> None:
    answer = await engine.board.hook(start(repo))
    spec = answer["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    assert SID in spec["additionalContext"]
    assert "board_link" in spec["additionalContext"]
    assert await engine.board.hook({"hook_event_name": "Stop"}) == {}  # no session id
    assert await engine.board.hook(prompt(repo)) == {}  # nothing to say


async def test_comments_reach_only_the_exactly_linked_session_once(
        engine: Engine, repo: Path) -> None:
    board = engine.board
    task = await board.create_task(str(repo), "Talk", session=SID)
    other = "00000000-0000-0000-0000-000000000002"
    await board.hook(start(repo))
    await board.hook(start(repo, other))
    comment = await board.comment(task.key, "Please use the new API")
    assert await board.hook(prompt(repo, other)) == {}  # same repository, not linked
    answer = await board.hook(pre(repo, "Read", {"file_path": str(repo / "README.md")}))
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "Please use the new API" in context
    assert f"ids=[{comment.id}]" in context
    assert "permissionDecision" not in answer["hookSpecificOutput"]  # never "allow"
    delivered = (await board.comments(task.key))[0]
    assert delivered.delivered_to == SID
    assert delivered.delivered_ms is not None
    assert await board.hook(post(repo, "Read", {"file_path": "README.md"})) == {}  # once
    second = await board.comment(task.key, "Also a test")
    answer = await board.hook(post(repo, "Read", {"file_path": "README.md"}))
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "Also a test" in context
    assert "new API" not in context
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    await board.ack_comments(task.key, [comment.id, second.id], session=SID)
    assert await board.hook(stop(repo)) == {}


async def test_stop_holds_the_session_at_most_three_times_per_comment_set(
        engine: Engine, repo: Path) -> None:
    board = engine.board
    task = await board.create_task(str(repo), "Hold", session=SID)
    await board.hook(start(repo))
    await board.comment(task.key, "Read this before you stop")
    first = await board.hook(stop(repo))
    assert first["decision"] == "block"
    assert "Read this before you stop" in first["reason"]
    assert "board_ack_comments" in first["reason"]
    assert (await board.comments(task.key))[0].delivered_to == SID
    assert (await board.hook(stop(repo, active=True)))["decision"] == "block"
    assert (await board.hook(stop(repo, active=True)))["decision"] == "block"
    assert await board.hook(stop(repo, active=True)) == {}  # three blocks for this set
    await board.comment(task.key, "One more thing")  # a new set: held again
    assert (await board.hook(stop(repo)))["decision"] == "block"
    assert await board.ack_comments(task.key, None, session=SID) == 2
    assert await board.hook(stop(repo)) == {}


async def test_after_a_restart_undelivered_comments_arrive_and_acknowledged_never_again(
        relay_home: Path, repo: Path) -> None:
    first = await Engine.open(load_config())
    try:
        task = await first.board.create_task(str(repo), "Restart", session=SID)
        await first.board.hook(start(repo))
        acked = await first.board.comment(task.key, "Old and acknowledged")
        await first.board.hook(prompt(repo))
        await first.board.ack_comments(task.key, [acked.id], session=SID)
        held = await first.board.comment(task.key, "Delivered, not acknowledged")
        for _ in range(3):
            assert (await first.board.hook(stop(repo)))["decision"] == "block"
        assert await first.board.hook(stop(repo)) == {}
        fresh = await first.board.comment(task.key, "Written while no hook came")
    finally:
        await first.close()
    second = await Engine.open(load_config())
    try:
        answer = await second.board.hook(prompt(repo))
        context = answer["hookSpecificOutput"]["additionalContext"]
        assert "Written while no hook came" in context
        assert "Old and acknowledged" not in context
        assert "Delivered, not" not in context
        # the Stop counter lived in memory: one more reminder, with both open comments
        reminder = await second.board.hook(stop(repo))
        assert reminder["decision"] == "block"
        assert f"comment {held.id}]" in reminder["reason"]
        assert f"comment {fresh.id}]" in reminder["reason"]
        assert "Old and acknowledged" not in reminder["reason"]
    finally:
        await second.close()


async def test_a_relay_run_claude_session_is_linked_and_gets_its_sessions_comments(
        engine: Engine, repo: Path) -> None:
    session_id, run_id = "0123456789ab", "run0123456789"
    repo_sql = engine.store.sessions
    await engine.writer.write(WriteOp(session_id, statements=[
        repo_sql.insert(session_id, SessionSpec(repo=str(repo), task="t", runtime="claude"),
                        simulated=False, owner_pid=0),
        repo_sql.insert_run(run_id, session_id, "claude", "claude", None),
        repo_sql.run_agent_session(run_id, SID, None)]))
    task = await engine.board.create_task(str(repo), "Relay-run", session=session_id)
    await engine.board.comment(task.key, "For the Relay session")
    # a session Relay runs gets its task's comments in its inbox, delivered at a turn's end
    queued = await engine.talk.messages(session_id, pending=True)
    assert [(m.kind, m.text) for m in queued] == [("board", "For the Relay session")]
    answer = await engine.board.hook(start(repo))
    assert engine.board.live_states().get(SID).relay_session_id == session_id  # type: ignore[union-attr]
    changes = await live_events(engine)
    assert changes[-1].relay_session_id == session_id
    assert "For the Relay session" not in json.dumps(answer)
    answer = await engine.board.hook(prompt(repo))
    assert "For the Relay session" not in json.dumps(answer)  # not a second time by a hook
    card = (await engine.board.task(task.key)).card
    assert card.sessions[0].live is not None
    assert card.sessions[0].live.state == "working"


async def test_the_plan_comes_from_the_hooked_sessions_todo_tools(engine: Engine,
                                                                  repo: Path) -> None:
    task = await engine.board.create_task(str(repo), "Plan", session=SID)
    await engine.board.hook(start(repo))
    await engine.board.hook(post(repo, "TaskCreate", {"subject": "Write tests",
                                                      "description": "d"},
                                 "Task #1 created successfully: Write tests"))
    await engine.board.hook(post(repo, "TaskCreate", {"subject": "Ship", "description": "d"},
                                 "Task #2 created successfully: Ship"))
    await engine.board.hook(post(repo, "TaskUpdate", {"taskId": "1", "status": "in_progress"},
                                 "Updated task #1 status"))
    card = (await engine.board.task(task.key)).card
    assert card.plan == [{"content": "Write tests", "status": "in_progress"},
                         {"content": "Ship", "status": "pending"}]
    before = await engine.store.last_event_id()
    await engine.board.hook(post(repo, "TodoWrite", {"todos": [
        {"content": "Only this", "status": "completed", "activeForm": "Doing"}]}))
    assert (await engine.board.task(task.key)).card.plan == [
        {"content": "Only this", "status": "completed"}]
    # a new plan alone (the state stays "working") is still an event: boards refresh the card
    told = [r.event for r in await engine.store.events_after(before, session_id=BOARD_SESSION)]
    assert [(e.kind, e.state, e.previous) for e in told
            if isinstance(e, LiveStateChanged)] == [("live_state", "working", "working")]


@pytest.mark.parametrize(("decision", "key"), [("deny", "permissionDecision"),
                                               ("ask", "permissionDecision")])
async def test_a_guard_verdict_becomes_the_permission_decision(
        engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch, decision: str,
        key: str) -> None:
    seen: list[tuple[str, Any, str | None]] = []

    def decide(policy: Any, tool_name: str, tool_input: Any, cwd: str | None) -> Verdict:
        seen.append((tool_name, dict(tool_input), cwd))
        return Verdict(decision, "touches prod", "env.kubectl", "prod")  # type: ignore[arg-type]

    monkeypatch.setattr(guard, "decide", decide)
    answer = await engine.board.hook(pre(repo, "Bash", {"command": "kubectl delete pod x"}))
    spec = answer["hookSpecificOutput"]
    assert spec[key] == decision
    assert "touches prod" in spec["permissionDecisionReason"]
    assert seen == [("Bash", {"command": "kubectl delete pod x"}, str(repo))]
    records = await engine.store.events_after(0, session_id=BOARD_SESSION)
    verdicts = [r.event for r in records if isinstance(r.event, GuardDecision)]
    assert [(v.decision, v.where, v.agent_session_id, v.rule) for v in verdicts] == [
        (decision, "hook", SID, "env.kubectl")]
    assert "kubectl delete pod x" in verdicts[0].summary


async def test_a_warning_is_a_system_message_and_no_verdict_says_nothing(
        engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "decide", lambda *_: Verdict("warn", "live env", "env.ssh"))
    answer = await engine.board.hook(pre(repo, "Bash", {"command": "ssh prod uptime"}))
    assert "live env" in answer["systemMessage"]
    assert "permissionDecision" not in answer.get("hookSpecificOutput", {})
    monkeypatch.setattr(guard, "decide", lambda *_: None)
    assert await engine.board.hook(pre(repo, "Bash", {"command": "ls"})) == {}


async def test_the_real_guard_refuses_a_live_environment_and_audits_it(
        relay_home: Path, repo: Path) -> None:
    engine = await Engine.open(load_config())
    try:
        project = await engine.board.project_for(repo)
        await engine.board.set_environment(project.slug, Environment(
            "prod", "live", "none", EnvRefs(kube_contexts=("prod-eu",))))
        answer = await engine.board.hook(pre(
            repo, "Bash", {"command": "kubectl --context prod-eu get pods"}))
    finally:
        await engine.close()  # drains the audit trail
    spec = answer["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny"
    assert "prod" in spec["permissionDecisionReason"]
    entries = [json.loads(line) for line in
               engine.config.audit_path.read_text("utf-8").splitlines()]
    audited = [e for e in entries if "guard_decision" in json.dumps(e)]
    assert len(audited) == 1
    assert "kubectl --context prod-eu" in json.dumps(audited[0])
