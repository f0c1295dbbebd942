"""In-memory detection for the Detect dock's tests, and sessions in each state."""

from __future__ import annotations

import asyncio
from pathlib import Path

from relay.core.errors import RelayError
from relay.detect.model import DetectedSession, DetectState, Intent, LiveProcess, PlanEntry
from relay.gui.detect_backend import AdoptAnswer, DetectScan
from relay.wallet.model import Tokens

#: the tests' clock: 2026-11-29 12:00 UTC
NOW = 1_795_953_600_000
MIN = 60_000
HOUR = 60 * MIN


def session(runtime: str = "claude", sid: str = "0a1b2c3d", state: DetectState = "working", *,
            entry: str | None = None, repo: str | None = "/home/me/src/shop",
            cwd: str | None = None, active_ago: int = MIN, live: bool = True,
            resets_in: int | None = None, why: str = "", prompt: str = "Add a cart page",
            usage: Tokens | None = None, problems: list[str] | None = None,
            source: Path | None = None) -> DetectedSession:
    """A detected session; live sessions have a process."""
    process = (LiveProcess(pid=4242, runtime=runtime, cmdline=(runtime,), cwd=cwd or repo,
                           started_ms=NOW - HOUR, ppid=1) if live else None)
    return DetectedSession(
        runtime=runtime, agent_session_id=sid, entry=entry or runtime,
        source=source or Path(f"/home/me/.{runtime}/projects/{sid}.jsonl"),
        cwd=cwd or repo, repo=repo, started_ms=NOW - 2 * HOUR,
        last_activity_ms=NOW - active_ago, state=state, why=why,
        resets_at_ms=NOW + resets_in if resets_in is not None else None,
        intent=Intent(initial_prompt=prompt), usage=usage, process=process,
        problems=list(problems or []))


def blocked() -> DetectedSession:
    """claude:work, blocked by its limit with a plan half done — the one to adopt."""
    s = session("claude", "b10cked-5e55", "blocked", entry="claude:work", live=False,
                active_ago=20 * MIN, resets_in=2 * HOUR + 10 * MIN,
                why="last turn ended on a usage limit", prompt="Port the billing module to "
                "the new API\nand keep the old endpoints working",
                usage=Tokens(input=12_300, output=4_500, cache_read=1_100_000, cache_write=30_000))
    s.intent = Intent(
        initial_prompt=s.intent.initial_prompt,
        plan=[PlanEntry("Read the billing module", "completed"),
              PlanEntry("Write the adapter", "in_progress"),
              PlanEntry("Run the tests", "pending")],
        tasks_remaining=["Write the adapter", "Run the tests"],
        files_touched=["billing/api.py", "billing/adapter.py"],
        commands=["pytest -q tests/billing", "git status"],
        skills=["refactor"], mcp_servers=["github"], models=["claude-sonnet-4-5"],
        last_message="I'll continue with the adapter once the limit resets.")
    return s


def waiting() -> DetectedSession:
    return session("codex", "c0dex-ask", "needs_input", repo="/home/me/src/api",
                   prompt="Upgrade the ORM", why="asked to run `rm -rf build`",
                   usage=Tokens(input=50_000, output=8_000))


def all_states() -> list[DetectedSession]:
    """One session in each state (blocked first: the order a scan would give is kept)."""
    return [
        session("claude", "w0rking", "working", usage=Tokens(input=900_000, output=300_000)),
        waiting(),
        blocked(),
        session("gemini", "1d1e", "idle", repo="/home/me/src/docs", prompt="Proofread"),
        session("pi", "end3d", "ended", live=False, repo=None, cwd="/home/me/notes",
                active_ago=5 * HOUR, prompt="Summarise the notes"),
        session("cline", "cr4sh", "crashed", live=False, active_ago=3 * HOUR,
                repo="/home/me/src/site", problems=["line 812: not JSON (truncated)"],
                source=Path("/home/me/.config/Code/User/globalStorage/tasks/cr4sh")),
        session("copilot", "unkn0wn", "unknown", live=False, active_ago=10 * HOUR,
                repo=None, prompt="",
                source=Path("/home/me/.config/Code/User/workspaceStorage/ab/state.vscdb")),
    ]


class FakeDetect:
    """A :class:`~relay.gui.detect_backend.DetectBackend` over a list of sessions.

    ``older`` are shown only with "Show all". ``gate``: when set, each scan waits for it.
    """

    def __init__(self, sessions: list[DetectedSession] | None = None) -> None:
        self.sessions = list(sessions if sessions is not None else all_states())
        self.older: list[DetectedSession] = []
        #: id → the session with its whole intent (what ``detail`` lifts for a summary)
        self.whole: dict[str, DetectedSession] = {}
        self.details: list[str] = []
        self.problems: list[str] = []
        self.scans: list[bool] = []
        self.adopted: list[tuple[str, str, bool]] = []
        self.entries = ["claude", "claude:work", "codex", "codex:ci", "demo"]
        self.fail_with: Exception | None = None
        self.adopt_error: Exception | None = None
        self.gate: asyncio.Event | None = None

    async def scan(self, all_sessions: bool) -> DetectScan:
        self.scans.append(all_sessions)
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(0)
        if self.fail_with is not None:
            raise self.fail_with
        shown = [*self.sessions, *(self.older if all_sessions else [])]
        return DetectScan(shown, list(self.problems), 0.04)

    async def detail(self, detected_id: str) -> DetectedSession:
        self.details.append(detected_id)
        await asyncio.sleep(0)
        return self.whole[detected_id]

    async def targets(self) -> list[str]:
        await asyncio.sleep(0)
        return list(self.entries)

    async def adopt(self, detected_id: str, to_entry: str, in_place: bool) -> AdoptAnswer:
        self.adopted.append((detected_id, to_entry, in_place))
        await asyncio.sleep(0)
        if self.adopt_error is not None:
            raise self.adopt_error
        return AdoptAnswer("r3lay-se55", to_entry, Path("/data/adopted/claude-b10cked/c1"))


def refused() -> RelayError:
    return RelayError("The session's folder is not in a git repository.",
                      "Adopt needs a commit to stand on: run `git init` and commit.")
