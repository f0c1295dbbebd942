"""Claude Code's hooks reach a real Relay host, for real.

A real host (``relay-cli serve`` in its own process, its own data folder, any free port),
``relay-cli setup claude --config-dir <cfg>`` run for real, then the real Claude Code
2.1.197 started directly (not through Relay) in a git repo against ``mock_anthropic`` on
loopback. What the host hears is read over its API (``client.board``, the events).

What these tests found about the CLI is in /work/notes/claude-hooks-findings.md; the
shapes the assertions rely on:

* a PreToolUse ``permissionDecision: "deny"`` reaches the model as the call's
  ``tool_result`` — ``is_error: true``, the reason as its whole content;
* additionalContext of SessionStart / UserPromptSubmit lands in the first request's
  ``role: "system"`` message ("UserPromptSubmit hook additional context: …"), of
  PreToolUse / PostToolUse after the next tool_result ("<system-reminder>…");
* a Stop ``{"decision": "block", "reason": R}`` makes Claude ask the model again with
  "Stop hook feedback:\\nR";
* only the interactive CLI fires ``PermissionRequest`` (when its dialog shows); print mode
  never asks, so that test drives Claude on a pseudo-terminal (:mod:`claude_tty`);
* Claude hands the model an MCP tool's ``structuredContent``, and calls a user-scope MCP
  tool in print mode only when it is allowed (the ``permissions.allow`` rules setup adds).

Each test has its own host, data folder, Claude configuration and mock; the waits are polls
of the host with a deadline (another process's state).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relay.api.client import RelayClient
from relay.board.claude_setup import ALLOW_RULES, ALLOW_WHAT, HOOK_EVENTS
from relay.core.events import BOARD_SESSION
from relay.core.guard import Environment, EnvRefs
from relay.core.live import HookedSession
from tests.api import conftest as api_conftest
from tests.api.test_host_process import _serve as serve
from tests.api.test_host_process import _stop as stop
from tests.fakes import mock_anthropic
from tests.integration.claude_tty import ENTER, ClaudeTty
from tests.integration.helpers import (
    RELAY,
    CliRun,
    claude_env,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    relay_env,
    run_cli,
)

pytestmark = pytest.mark.integration

#: print mode, Bash allowed by Claude's own rules: whatever is refused, the hooks refused
PRINT = ["--output-format", "stream-json", "--verbose",
         "--permission-mode", "acceptEdits", "--allowedTools", "Bash"]
#: what a poll of the host waits at most (the scripted runs take about a second)
WITHIN_S = 30.0


@dataclass
class Hooked:
    """The real Claude with a configuration folder (set up for the test's data folder) in a
    repository; :meth:`run` is one print-mode run."""

    claude: Path
    env: dict[str, str]         # Claude's (and relay-cli's) environment
    config: Path                # CLAUDE_CONFIG_DIR
    repo: Path

    def run(self, *args: str, prompt: str = "Do the task.") -> CliRun:
        return run_cli([self.claude, "-p", prompt, *PRINT, *args], env=self.env,
                       cwd=self.repo, timeout=90)


#: a ``relay-cli serve`` of the test's data folder, stopped after the test
host = api_conftest.host_proc


@pytest.fixture
async def client(host: subprocess.Popen[str], relay_home: Path) -> AsyncIterator[RelayClient]:
    found = RelayClient.for_home(relay_home)
    assert found is not None
    async with found:
        yield found


def hooked(real_claude: Path, tmp_path: Path, relay_home: Path, repo: Path,
           mock: mock_anthropic.MockAnthropic, *, setup: bool = True) -> Hooked:
    """Claude's environment against ``mock``; ``relay-cli setup claude`` run on its config."""
    agent = claude_env(tmp_path, mock)
    env = relay_env(agent, relay_home, "claude", real_claude)
    config = Path(env["CLAUDE_CONFIG_DIR"])
    if setup:
        done = run_cli([*RELAY, "setup", "claude", "--config-dir", str(config)], env=env,
                       cwd=repo)
        assert done.returncode == 0, done.describe()
        assert "hooks" in json.loads((config / "settings.json").read_text())
    return Hooked(real_claude, env, config, repo)


async def eventually(probe: Callable[[], Awaitable[Any]], what: str,
                     within: float = WITHIN_S, show: Callable[[], str] = str) -> Any:
    """``await probe()`` until it is truthy (another process's state: nothing signals us)."""
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {within}s for {what}\n{show()}", pytrace=False)
        await asyncio.sleep(0.05)


async def live_of(client: RelayClient, session_id: str) -> HookedSession | None:
    return next((s for s in await client.board.live() if s.agent_session_id == session_id),
                None)


async def board_events(client: RelayClient, kind: str) -> list[Any]:
    """The host's events of ``kind`` on the board's stream (``session_id`` "board")."""
    return [r.event for r in await client.events_after(0, None, 5000)
            if r.session_id == BOARD_SESSION and r.event.kind == kind]


def states_of(events: list[Any], session_id: str) -> list[str]:
    return [e.state for e in events if e.agent_session_id == session_id]


def started_session(run: CliRun) -> str:
    (init,) = [e for e in run.events() if e.get("subtype") == "init"]
    return str(init["session_id"])


def tool_results(mock: mock_anthropic.MockAnthropic) -> list[dict[str, Any]]:
    """The tool_result blocks Claude sent back to the model, in order."""
    found: list[dict[str, Any]] = []
    for request in mock.message_requests():
        content = request["body"]["messages"][-1]["content"]
        if isinstance(content, list):
            found += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return found


def messages_text(request: dict[str, Any]) -> str:
    return json.dumps(request["body"]["messages"])


def fake_kubectl(tmp_path: Path, env: dict[str, str]) -> Path:
    """A ``kubectl`` first on Claude's PATH that leaves a mark when it runs."""
    bin_dir, mark = tmp_path / "bin", tmp_path / "kubectl-ran"
    bin_dir.mkdir()
    exe = bin_dir / "kubectl"
    exe.write_text(f"#!/bin/sh\necho \"$@\" > {mark}\n")
    exe.chmod(0o755)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    return mark


# --------------------------------------------------------------------------- tests


async def test_the_host_follows_a_session_and_its_guard_refuses_a_live_environment(
        real_claude: Path, tmp_path: Path, relay_home: Path, git_repo: Path,
        client: RelayClient) -> None:
    project = await client.board.project_for(git_repo)
    await client.board.set_environment(project.slug, Environment(
        "prod", "live", "none", EnvRefs(kube_contexts=("prod",))))
    command = "kubectl --context prod delete pod x"
    script = {"turns": [
        {"tool_use": {"name": "Bash", "id": "toolu_guard_1",
                      "input": {"command": command, "description": "delete the pod"}}},
        {"tool_use": {"name": "Bash", "id": "toolu_guard_2",
                      "input": {"command": "echo still-here", "description": "echo"}}},
        {"text": "Could not delete it."}]}
    with mock_anthropic.serve(script) as mock:
        h = hooked(real_claude, tmp_path, relay_home, git_repo, mock)
        ran = fake_kubectl(tmp_path, h.env)
        run = h.run()

    assert run.returncode == 0, run.describe()
    sid = started_session(run)
    assert not ran.exists(), "the guarded command ran"
    refused, allowed = tool_results(mock)
    (decision,) = [e for e in await board_events(client, "guard_decision")
                   if e.agent_session_id == sid]
    assert (decision.decision, decision.where, decision.environment) == ("deny", "hook", "prod")
    assert "prod" in decision.reason
    assert refused["is_error"] is True
    # the model is told who refused and why, word for word
    assert refused["content"] == f"Relay guard (prod): {decision.reason}"
    assert "still-here" in json.dumps(allowed)
    assert not allowed.get("is_error")

    states = states_of(await board_events(client, "live_state"), sid)
    assert states[0] in ("idle", "working"), states
    assert "working" in states, states
    assert states[-1] == "ended", states
    live = await live_of(client, sid)
    assert live is not None
    assert live.state == "ended"
    assert live.cwd == str(git_repo)


async def test_a_permission_dialog_shows_on_the_board_as_needs_input(
        real_claude: Path, tmp_path: Path, relay_home: Path, git_repo: Path,
        client: RelayClient) -> None:
    target = git_repo / "asked.txt"
    agent = {"has_tools": True}  # not the title the interactive CLI asks for besides
    script = {"turns": [
        {"match": agent, "tool_use": {"name": "Bash", "id": "toolu_ask_1",
                                      "input": {"command": f"echo asked > {target.name}",
                                                "description": "write a file"}}},
        {"match": agent, "text": "Written."}],
        "default": {"text": "Writing a file"}}
    with mock_anthropic.serve(script) as mock:
        h = hooked(real_claude, tmp_path, relay_home, git_repo, mock)
        tty = ClaudeTty(real_claude, h.env, git_repo)
        try:
            tty.submit("Write the file.")

            async def asking() -> HookedSession | None:
                found = [s for s in await client.board.live() if s.state == "needs_input"]
                return found[0] if found else None

            waiting = await eventually(asking, "the session to need input", show=tty.tail)
            assert waiting.needs == "permission"
            assert "Bash" in waiting.detail or "permission" in waiting.detail.lower()
            tty.wait_for_text("Do you want to proceed?")
            assert not target.exists()

            tty.key(ENTER)  # "1. Yes"
            sid = waiting.agent_session_id
            idle = await eventually(
                lambda: _in_state(client, sid, "idle"), "the session to be idle after Stop")
            assert idle.needs is None
            assert target.read_text() == "asked\n"
            assert tty.quit() == 0
            await eventually(lambda: _in_state(client, sid, "ended"), "the session to end")
        finally:
            tty.close()
    assert len([r for r in mock.message_requests() if r["body"].get("tools")]) == 2
    states = states_of(await board_events(client, "live_state"), sid)
    assert "needs_input" in states
    assert states.index("needs_input") < states.index("ended")
    assert states[states.index("needs_input") + 1] == "working", states  # answered: it goes on


async def _in_state(client: RelayClient, sid: str, state: str) -> HookedSession | None:
    live = await live_of(client, sid)
    return live if live is not None and live.state == state else None


async def test_an_owner_comment_reaches_the_linked_session_and_is_acknowledged_over_mcp(
        real_claude: Path, tmp_path: Path, relay_home: Path, git_repo: Path,
        client: RelayClient) -> None:
    """The comment arrives as context with the first prompt; Claude stops without
    acknowledging it and is reminded once; it acknowledges with the board's MCP tool (the
    user-scope server setup registered, its bearer header from the headersHelper) and may
    stop."""
    sid = str(uuid.uuid4())  # Claude's session id, chosen here so the task is linked first
    task = await client.board.create_task(str(git_repo), "Fix the flaky test", stage="dev")
    await client.board.link(task.key, sid, actor="owner")
    body = "Owner: please also run the linter (note 5521)."
    comment = await client.board.comment(task.key, body)
    ack = {"key": task.key, "ids": [comment.id], "session_id": sid}
    script = {"turns": [
        {"tool_use": {"name": "Bash", "id": "toolu_c_1",
                      "input": {"command": "echo working", "description": "echo"}}},
        {"text": "Done."},  # stops without acknowledging: reminded
        {"tool_use": {"name": "mcp__relay__board_ack_comments", "id": "toolu_c_2",
                      "input": ack}},
        {"text": "Acknowledged, done."}]}
    with mock_anthropic.serve(script) as mock:
        h = hooked(real_claude, tmp_path, relay_home, git_repo, mock)
        # MCP tools need the user's permission like any other: setup's allow rules grant it
        assert "mcp__relay__board_ack_comments" in ALLOW_RULES
        run = h.run("--session-id", sid)

    assert run.returncode == 0, run.describe()
    first, *_, last = requests = mock.message_requests()
    assert len(requests) == 4, [messages_text(r)[-300:] for r in requests]
    start = messages_text(first).split("SessionStart hook additional context: ", 1)
    assert sid in start[1][:400], "SessionStart did not tell Claude its session id"
    prompt_context = messages_text(first).split("UserPromptSubmit hook additional context: ", 1)
    assert body in prompt_context[1][:600]
    reminders = [i for i, r in enumerate(requests)
                 if "Stop hook feedback" in json.dumps(r["body"]["messages"][-1])]
    assert reminders == [2]
    assert body in json.dumps(requests[2]["body"]["messages"][-1])
    (acked,) = tool_results(mock)[1:]
    assert not acked.get("is_error"), acked
    # Claude Code 2.1.197 hands the model a tool's structuredContent, not its text
    assert json.loads(acked["content"]) == {"task": task.key, "acked": 1}
    (stored,) = [c for c in await client.board.comments(task.key) if c.id == comment.id]
    assert stored.delivered_to == sid
    assert stored.delivered_ms
    assert stored.acked_ms
    assert "Stop hook feedback" not in json.dumps(last["body"]["messages"][-1])


#: a user's own settings.json as Claude Code users write them (two-space JSON, their own hook)
USER_SETTINGS = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
    "deny": ["Read(./.env)"]
  },
  "env": {"TEAM": "core"},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "echo user-hook >> \\"$USER_HOOK_LOG\\""}]
      }
    ]
  },
  "includeCoAuthoredBy": false
}
"""


def test_with_the_host_down_claude_runs_as_fast_as_without_hooks_and_setup_undoes_itself(
        real_claude: Path, tmp_path: Path, relay_home: Path, git_repo: Path,
        record_property: Callable[[str, object], None]) -> None:
    """Setup next to a user's own settings while a host runs; the host stops; the same
    Claude run with Relay's hooks (every hook client finds no host, the MCP server is
    refused) against one without any: both exit 0, the hooks print nothing and cost less
    than 3 s. Then ``--check`` only reads, and ``--remove`` gives the user's file back
    byte for byte although Claude ran with it meanwhile."""
    script = {"turns": [
        {"tool_use": {"name": "Bash", "id": "toolu_d_1",
                      "input": {"command": "echo hi", "description": "echo"}}},
        {"text": "Done."}]}
    proc = serve(relay_home)
    with mock_anthropic.serve(script) as unused:
        config = Path(claude_env(tmp_path / "hooked", unused)["CLAUDE_CONFIG_DIR"])
        (config / "settings.json").write_text(USER_SETTINGS)
        h = hooked(real_claude, tmp_path / "hooked", relay_home, git_repo, unused)
    stop(proc)
    user_log = tmp_path / "user-hook.log"
    h.env["USER_HOOK_LOG"] = str(user_log)
    walls: dict[str, list[float]] = {"no hooks": [], "host down": []}
    for _ in range(2):  # alternately, so that a warm cache favours neither
        for label in walls:
            with mock_anthropic.serve(script) as mock:
                if label == "no hooks":
                    run = hooked(real_claude, tmp_path / "plain", relay_home, git_repo, mock,
                                 setup=False).run()
                else:
                    h.env["ANTHROPIC_BASE_URL"] = mock.base_url
                    run = h.run()
                context = [r for r in mock.message_requests()
                           if "hook additional context" in messages_text(r)]
            assert run.returncode == 0, run.describe()
            assert not context  # nobody answered
            answers = [e for e in run.events() if e.get("subtype") == "hook_response"]
            assert answers or label == "no hooks"
            for answer in answers:  # the hook client says nothing, fails nothing
                assert (answer["exit_code"], answer["stdout"], answer["stderr"]) == (0, "", "")
            walls[label].append(round(run.elapsed_s, 2))
    assert user_log.read_text() == "user-hook\n" * 2  # the user's own hook still runs
    record_property("claude_wall_s", walls)
    print(f"\nclaude -p wall time (s): {walls}")
    assert min(walls["host down"]) - min(walls["no hooks"]) < 3.0, walls

    settings = config / "settings.json"
    wired = settings.read_bytes()
    assert wired != USER_SETTINGS.encode()
    checked = run_cli([*RELAY, "setup", "claude", "--config-dir", str(config), "--check",
                       "--json"], env=h.env, cwd=git_repo)
    (check,) = json.loads(checked.stdout)["checks"]
    states = {item["what"]: item["state"] for item in check["items"]}
    assert all(states[f"hook {event}"] == "ok" for event in HOOK_EVENTS), states
    assert states[ALLOW_WHAT] == "ok", states
    # the MCP server names the stopped host's port; which port the next host takes is
    # unknown while none runs: only reported, not a failure
    (server,) = [i for i in check["items"] if i["what"] == "mcp server relay"]
    assert server["state"] == "info", states
    assert server["detail"].startswith("host not running — the MCP server connects when a "
                                       "host runs at http://127.0.0.1:"), server
    assert checked.returncode == 0, checked.describe()
    assert settings.read_bytes() == wired
    removed = run_cli([*RELAY, "setup", "claude", "--config-dir", str(config), "--remove"],
                      env=h.env, cwd=git_repo)
    assert removed.returncode == 0, removed.describe()
    assert settings.read_bytes() == USER_SETTINGS.encode()
    assert list(config.glob("settings.json.relay-backup-*"))
    # the state file Claude itself wrote to after setup: Relay's server out, Claude's keys in
    state = json.loads((config / ".claude.json").read_text())
    assert "relay" not in state.get("mcpServers", {})
    assert {"userID", "firstStartTime"} <= set(state)
