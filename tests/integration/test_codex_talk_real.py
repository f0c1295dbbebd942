"""Talking to the real Codex CLI (0.171.0) through Relay's CodexAdapter, against the
loopback Responses-API mock (issue 22): a follow-up continues the same conversation, an
interrupt (SIGINT) ends the turn and ``exec resume`` continues it, a fork (``exec fork``) is
its own thread with the parent's turns. The mock's requests are the evidence: codex sends
the whole conversation with every request."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from relay.core.capabilities import Cap, Level
from relay.core.config import load_config
from relay.core.events import AgentEvent, LimitHit, SessionStarted, ToolCall, TurnCompleted
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest
from relay.runtimes.codex import CodexAdapter, find_rollout
from tests.fakes import mock_openai
from tests.integration.helpers import (
    codex_env,
    real_codex_fixture,  # noqa: F401  (fixture "real_codex")
)
from tests.runtimes.run_helpers import collect, ended, only

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def said(request: dict[str, Any]) -> list[str]:
    """The conversation in one request: "u:"/"a:" + text, codex's own context left out."""
    out = []
    for item in request["body"]["input"]:
        role = item.get("role")
        if role not in ("user", "assistant"):
            continue
        for part in item.get("content") or []:
            text = str(part.get("text") or "")
            if text and not text.startswith("<"):
                out.append(f"{role[0]}:{text}")
    return out


def env_cwd(request: dict[str, Any]) -> str:
    """The cwd of codex's last ``<environment_context>`` message (the one in force)."""
    found = ""
    for item in request["body"]["input"]:
        for part in item.get("content") or []:
            text = str(part.get("text") or "")
            if text.startswith("<environment_context>") and "<cwd>" in text:
                found = text.split("<cwd>", 1)[1].split("</cwd>", 1)[0]
    return found


def codex(env: dict[str, str]) -> CodexAdapter:
    return CodexAdapter(env)


async def test_a_follow_up_continues_the_same_conversation(
        real_codex: Path, tmp_path: Path, repo: Path) -> None:
    script = [{"text": "Noted: PINEAPPLE."}, {"text": "The word was PINEAPPLE."}]
    with mock_openai.serve(script) as mock:
        env = {**codex_env(tmp_path, mock), "RELAY_CODEX_BIN": str(real_codex)}
        first = codex(env)
        done = await collect(first, RunRequest(prompt="Remember PINEAPPLE", cwd=repo))
        assert ended(done).outcome == "completed", done
        follow = await collect(codex(env), RunRequest(prompt="What was the word?", cwd=repo,
                                                      resume_id=first.thread_id))
        requests = mock.response_requests()
    assert ended(follow).outcome == "completed"
    assert only(follow, SessionStarted)[0].agent_session_id == first.thread_id
    assert said(requests[1]) == ["u:Remember PINEAPPLE", "a:Noted: PINEAPPLE.",
                                 "u:What was the word?"]


async def test_interrupt_ends_the_turn_and_resume_continues(
        real_codex: Path, tmp_path: Path, repo: Path) -> None:
    script = [{"text": "never delivered", "delay_s": 60}, {"text": "Picking up again."}]
    with mock_openai.serve(script) as mock:
        env = {**codex_env(tmp_path, mock), "RELAY_CODEX_BIN": str(real_codex)}
        first = codex(env)
        events: list[AgentEvent] = []
        started = time.monotonic()
        async for event in first.run(RunRequest(prompt="Start the long job", cwd=repo)):
            events.append(event)
            if isinstance(event, SessionStarted):
                asyncio.get_running_loop().create_task(interrupt_once_asked(first, mock))
        assert time.monotonic() - started < 45  # not the 60 s the answer would take
        end = ended(events)
        assert (end.outcome, end.reason, end.exit_code) == ("interrupted", INTERRUPTED_REASON, 1)
        thread = first.thread_id
        assert thread is not None
        rollout = find_rollout(Path(env["CODEX_HOME"]), thread)
        assert rollout is not None
        assert '"turn_aborted"' in rollout.read_text(encoding="utf-8")  # NOTES e8

        resumed = await collect(codex(env), RunRequest(prompt="Go on, briefly", cwd=repo,
                                                       resume_id=thread))
        requests = mock.response_requests()
    assert ended(resumed).outcome == "completed"
    assert only(resumed, SessionStarted)[0].agent_session_id == thread
    # the interrupted turn's prompt is part of the conversation the resumed run sends
    assert said(requests[-1]) == ["u:Start the long job", "u:Go on, briefly"]


async def interrupt_once_asked(adapter: CodexAdapter, mock: Any) -> None:
    deadline = time.monotonic() + 30
    while not mock.response_requests():  # mid-turn: codex is waiting on the model
        assert time.monotonic() < deadline, "codex never asked the model"
        await asyncio.sleep(0.05)
    await adapter.interrupt()


async def test_a_fork_is_its_own_thread_with_the_parents_turns(
        real_codex: Path, tmp_path: Path, repo: Path) -> None:
    script = [{"text": "One."}, {"text": "Two."}, {"text": "Forked."}, {"text": "Three."}]
    worktree = tmp_path / "fork-worktree"  # a fork runs in its own worktree
    shutil.copytree(repo, worktree)
    with mock_openai.serve(script) as mock:
        env = {**codex_env(tmp_path, mock), "RELAY_CODEX_BIN": str(real_codex)}
        parent = codex(env)
        await collect(parent, RunRequest(prompt="Turn one", cwd=repo))
        parent_id = parent.thread_id
        await collect(codex(env), RunRequest(prompt="Turn two", cwd=repo, resume_id=parent_id))
        fork = codex(env)
        forked = await collect(fork, RunRequest(prompt="A variant", cwd=worktree,
                                                resume_id=parent_id, fork=True))
        # the original goes on without the fork's turn
        await collect(codex(env), RunRequest(prompt="Turn three", cwd=repo,
                                             resume_id=parent_id))
        requests = mock.response_requests()
    assert ended(forked).outcome == "completed"
    fork_id = only(forked, SessionStarted)[0].agent_session_id
    assert fork_id is not None
    assert parent_id is not None
    assert fork_id != parent_id
    assert fork.thread_id == fork_id
    assert said(requests[2]) == ["u:Turn one", "a:One.", "u:Turn two", "a:Two.", "u:A variant"]
    assert requests[2]["headers"].get("session-id") == fork_id
    assert said(requests[3]) == ["u:Turn one", "a:One.", "u:Turn two", "a:Two.",
                                 "u:Turn three"]
    home = Path(env["CODEX_HOME"])
    assert find_rollout(home, fork_id) not in (None, find_rollout(home, parent_id))
    # the fork works in its own worktree: codex adds an environment context with the
    # new cwd after the parent's (the last one counts), the original stays in its own
    assert Path(env_cwd(requests[2])).resolve() == worktree.resolve()
    assert Path(env_cwd(requests[3])).resolve() == repo.resolve()


async def test_a_message_queued_during_a_slow_turn_arrives_after_it_once(
        real_codex: Path, tmp_path: Path, git_repo: Path, relay_home: Path, vault_env: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Engine level: ``engine.talk.say`` while a Codex turn is running queues the message;
    the turn ends on its own and the runner resumes the thread with it (how="resume")."""
    script = [{"text": "First part done.", "delay_s": 4}, {"text": "Noted the extra."},
              {"error": {"status": 400, "body": {"error": {"message": "one request too many"}}}}]
    with mock_openai.serve(script) as mock:
        for key, value in codex_env(tmp_path, mock).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("RELAY_CODEX_BIN", str(real_codex))
        engine = await Engine.open(load_config())
        try:
            sid = await engine.start_session(SessionSpec(repo=git_repo, task="Do the first part",
                                                         runtime="codex", model="gpt-5.5"))
            deadline = time.monotonic() + 60
            while not mock.response_requests():  # the slow turn is with the model
                assert time.monotonic() < deadline, "codex never asked the model"
                await asyncio.sleep(0.05)
            queued = await engine.talk.say(sid, "Also add the extra bit", source="cli")
            assert queued.state == "queued"
            row = await engine.wait_session(sid)
            message = await engine.inbox.get(sid, queued.id)
        finally:
            await engine.close()
        requests = mock.response_requests()
    assert row.state == "completed", row.reason
    assert (message.state, message.how) == ("delivered", "resume")
    assert len(requests) == 2  # the slow turn, then the resumed thread with the message
    assert not any("extra bit" in t for t in said(requests[0]))
    later = said(requests[1])
    assert [t for t in later if "extra bit" in t] == ["u:Also add the extra bit"]
    assert "a:First part done." in later
    assert later.index("a:First part done.") < later.index("u:Also add the extra bit")
    assert requests[1]["headers"].get("session-id") == requests[0]["headers"].get("session-id")


# ----------------------------------------------------------- over app-server (opted in)


def app_env(tmp_path: Path, mock: Any, real_codex: Path) -> dict[str, str]:
    return {**codex_env(tmp_path, mock), "RELAY_CODEX_BIN": str(real_codex),
            "RELAY_CODEX_PROTOCOL": "app-server"}


def answers(*texts: str | None) -> Callable[[], Awaitable[str | None]]:
    """A ``next_input`` that hands out ``texts`` in order, then None."""
    left = list(texts)

    async def ask() -> str | None:
        return left.pop(0) if left else None

    return ask


async def test_app_server_steer_reaches_the_running_turn(
        real_codex: Path, tmp_path: Path, repo: Path) -> None:
    script = [{"items": [{"type": "function_call", "name": "exec_command",
                          "arguments": {"cmd": "sleep 2; echo slept"}}]},
              {"text": "Done, with the steer."}]
    with mock_openai.serve(script) as mock:
        adapter = codex(app_env(tmp_path, mock, real_codex))
        events: list[AgentEvent] = []
        async for event in adapter.run(RunRequest(prompt="Run the slow command", cwd=repo)):
            events.append(event)
            if isinstance(event, ToolCall):  # mid-turn: the command is running
                assert adapter.capabilities.level(Cap.STEER) == Level.YES
                await adapter.steer("Also say STEERED")
        requests = mock.response_requests()
    assert ended(events).outcome == "completed", events[-3:]
    assert len(requests) == 2  # one turn: the steer went into its second model request
    assert said(requests[1]) == ["u:Run the slow command", "u:Also say STEERED"]
    kinds = [i.get("type") or i.get("role") for i in requests[1]["body"]["input"]]
    assert kinds.index("function_call_output") < len(kinds) - 1
    assert ended(events).result_text == "Done, with the steer."
    assert only(events, TurnCompleted)[0].usage.input_tokens == 2400  # both requests


async def test_app_server_keeps_the_process_for_the_next_message(
        real_codex: Path, tmp_path: Path, repo: Path) -> None:
    script = [{"text": "First."}, {"text": "Second."}]
    with mock_openai.serve(script) as mock:
        adapter = codex(app_env(tmp_path, mock, real_codex))
        events = await collect(adapter, RunRequest(prompt="One", cwd=repo,
                                                   next_input=answers("Two")))
        requests = mock.response_requests()
    assert ended(events).outcome == "completed"
    assert len(only(events, SessionStarted)) == 1  # one process, one thread, two turns
    assert said(requests[1]) == ["u:One", "a:First.", "u:Two"]
    assert [t.usage.input_tokens for t in only(events, TurnCompleted)] == [1200, 1200]


async def test_app_server_interrupt_then_the_queued_message_goes_in_the_same_process(
        real_codex: Path, tmp_path: Path, repo: Path) -> None:
    script = [{"text": "never delivered", "delay_s": 60}, {"text": "Going on."}]
    with mock_openai.serve(script) as mock:
        adapter = codex(app_env(tmp_path, mock, real_codex))
        events: list[AgentEvent] = []
        async for event in adapter.run(RunRequest(prompt="Start long", cwd=repo,
                                                  next_input=answers("Change of plan"))):
            events.append(event)
            if isinstance(event, SessionStarted):
                asyncio.get_running_loop().create_task(interrupt_once_asked(adapter, mock))
        requests = mock.response_requests()
    assert ended(events).outcome == "completed"
    assert ended(events).result_text == "Going on."
    assert said(requests[-1]) == ["u:Start long", "u:Change of plan"]


async def test_app_server_interrupt_with_nothing_queued_ends_interrupted_and_resumes(
        real_codex: Path, tmp_path: Path, repo: Path) -> None:
    script = [{"text": "never delivered", "delay_s": 60}, {"text": "Back."}]
    with mock_openai.serve(script) as mock:
        env = app_env(tmp_path, mock, real_codex)
        adapter = codex(env)
        events: list[AgentEvent] = []
        async for event in adapter.run(RunRequest(prompt="Start long", cwd=repo)):
            events.append(event)
            if isinstance(event, SessionStarted):
                asyncio.get_running_loop().create_task(interrupt_once_asked(adapter, mock))
        end = ended(events)
        assert (end.outcome, end.reason) == ("interrupted", INTERRUPTED_REASON)
        resumed = await collect(codex(env), RunRequest(prompt="Continue", cwd=repo,
                                                       resume_id=adapter.thread_id))
        requests = mock.response_requests()
    assert ended(resumed).outcome == "completed"
    assert said(requests[-1]) == ["u:Start long", "u:Continue"]


async def test_app_server_failure_reads_like_exec(real_codex: Path, tmp_path: Path,
                                                  repo: Path) -> None:
    script = [{"error": {"status": 429, "body": {"error": {
        "type": "usage_limit_reached", "plan_type": "pro", "resets_at": "@now+10800"}}}}]
    with mock_openai.serve(script) as mock:
        events = await collect(codex(app_env(tmp_path, mock, real_codex)),
                               RunRequest(prompt="x", cwd=repo))
    end = ended(events)
    assert end.outcome == "failed"
    assert (end.reason or "").startswith("You’ve hit your usage limit")
    assert only(events, LimitHit)


async def test_engine_interrupt_and_send_over_app_server_goes_on_in_process(
        real_codex: Path, tmp_path: Path, git_repo: Path, relay_home: Path, vault_env: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Engine level: "interrupt and send" on a Codex run over app-server stops the turn and
    the message is the next turn of the same process (how="turn"); the session completes."""
    script = [{"text": "never delivered", "delay_s": 60}, {"text": "Changed course."}]
    with mock_openai.serve(script) as mock:
        for key, value in app_env(tmp_path, mock, real_codex).items():
            monkeypatch.setenv(key, value)
        engine = await Engine.open(load_config())
        try:
            sid = await engine.start_session(SessionSpec(repo=git_repo, task="Start the long job",
                                                         runtime="codex", model="gpt-5.5"))
            deadline = time.monotonic() + 60
            while not mock.response_requests():
                assert time.monotonic() < deadline, "codex never asked the model"
                await asyncio.sleep(0.05)
            abilities = await engine.talk.abilities(sid)
            sent = await engine.talk.say(sid, "Do the short one instead", mode="interrupt")
            row = await engine.wait_session(sid)
            message = await engine.inbox.get(sid, sent.id)
        finally:
            await engine.close()
        requests = mock.response_requests()
    assert abilities.steer == "yes"
    assert row.state == "completed", row.reason
    assert (message.state, message.how) == ("delivered", "turn")
    assert len(requests) == 2
    assert said(requests[1])[-1] == "u:Do the short one instead"
