"""The machine tools: agent sessions detected on this machine, and the wallet.

Neither returns a secret: the wallet's views hold no key (keys stay in the OS keyring or
the vault file), a detected session is described by what its transcript says, never by its
process's command line or environment, and every result is scrubbed on the way out.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from relay.detect import present as detect_text
from relay.detect.model import DetectedSession, PlanEntry
from relay.engine.engine import Engine
from relay.mcp.approval import READS
from relay.mcp.results import guarded, ms_iso, ok
from relay.wallet import present as wallet_text
from relay.wallet.model import AccountView, Tokens

#: lists from a transcript are cut to this many items (a long session touches many files)
LIST_CAP = 50


class DetectedAgent(BaseModel):
    """An agent session found on this machine (Relay's own or not)."""

    id: str
    runtime: str
    agent_session_id: str
    account: str
    state: str
    state_text: str
    why: str
    resets_at: str | None
    repo: str | None
    cwd: str | None
    started: str | None
    last_activity: str | None
    #: the live agent process, when one runs it
    pid: int | None
    usage: Tokens | None
    initial_prompt: str
    plan: list[PlanEntry]
    tasks_remaining: list[str]
    files_touched: list[str]
    last_message: str
    problems: list[str]


class DetectReport(BaseModel):
    agents: list[DetectedAgent]
    #: what could not be read (the scan went on)
    problems: list[str]
    elapsed_s: float


class WalletSummary(BaseModel):
    """Every account Relay knows or has seen in use, with its limits, burn, costs, budgets."""

    accounts: list[AccountView]
    now_ms: int


def detected_agent(s: DetectedSession, now: int) -> DetectedAgent:
    i = s.intent
    return DetectedAgent(
        id=s.id, runtime=s.runtime, agent_session_id=s.agent_session_id, account=s.entry,
        state=s.state, state_text=detect_text.state_sentence(s, now), why=s.why,
        resets_at=ms_iso(s.resets_at_ms), repo=s.repo, cwd=s.cwd, started=ms_iso(s.started_ms),
        last_activity=ms_iso(s.last_activity_ms), pid=s.process.pid if s.process else None,
        usage=s.usage, initial_prompt=detect_text.one_line(i.initial_prompt, 500),
        plan=i.plan[:LIST_CAP], tasks_remaining=i.tasks_remaining[:LIST_CAP],
        files_touched=i.files_touched[:LIST_CAP],
        last_message=detect_text.one_line(i.last_message, 500), problems=s.problems)


def agent_line(s: DetectedSession, now: int) -> str:
    live = f" (pid {s.process.pid})" if s.process else ""
    return (f"{s.runtime}:{s.agent_session_id} · {detect_text.state_label(s, now)}{live}"
            f" · {detect_text.repository(s)} · active {detect_text.age(s, now)} ago"
            f" · {detect_text.usage_short(s.usage)} tokens · {s.entry}"
            f" · {detect_text.one_line(s.intent.initial_prompt, 80)!r}")


def account_lines(view: AccountView, now: int) -> list[str]:
    badges = "".join(f" [{b}]" for b, on in (("preferred", view.preferred),
                                               ("paused", view.paused)) if on)
    lines = [f"{view.entry} — {wallet_text.account_subtitle(view, view.registered)}{badges}"]
    lines += [f"  {wallet_text.WINDOW_TITLES[w.kind]}: {wallet_text.used_text(w)} · "
              f"{wallet_text.window_detail(w, now)}" for w in view.windows]
    lines.append(f"  burn {wallet_text.burn(view.burn_tpm)} · today {wallet_text.cost(view.cost_today)}"
                 f" · this week {wallet_text.cost(view.cost_week)}")
    lines += [f"  budget {b.scope}: {wallet_text.money(b.spent_usd)} of "
              f"{wallet_text.money(b.limit_usd)} ({b.state})" for b in view.budgets]
    if view.breaker_until_ms:
        lines.append(f"  out until {wallet_text.clock_ms(view.breaker_until_ms)}: "
                     f"{view.breaker_reason or ''}")
    return lines


class MachineTools:
    """Detected agents and the wallet over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        reads = READS
        server.add_tool(self.detected_agents, name="relay_detected_agents",
                        title="Agent sessions on this machine", annotations=reads)
        server.add_tool(self.wallet_summary, name="relay_wallet_summary",
                        title="Accounts: limits, costs, budgets", annotations=reads)

    @guarded
    async def detected_agents(
        self,
        all_sessions: Annotated[bool, Field(description=(
            "Every session found, however old (default: live ones and those active in the "
            "last 24 hours)."))] = False,
    ) -> Annotated[CallToolResult, DetectReport]:
        """List the coding-agent sessions on this machine (Claude Code, Codex and others,
        started by Relay or not): state (working, needs input, blocked by a limit until
        when, idle), repository, account, token usage and what each was asked to do."""
        # each agent's plan and files are in the answer: every intent lifted whole
        report = await self.engine.detector.scan(all_sessions=all_sessions, whole=True)
        now = self.engine.detector.clock()
        agents = [detected_agent(s, now) for s in report.sessions]
        text = "\n".join(agent_line(s, now) for s in report.sessions) if agents else (
            "No agent sessions found" + ("." if all_sessions else
                                         " in the last 24 hours (all_sessions=true shows older)."))
        text += "".join(f"\ncould not read: {p}" for p in report.problems)
        return ok(DetectReport(agents=agents, problems=report.problems,
                               elapsed_s=round(report.elapsed_s, 3)), text)

    @guarded
    async def wallet_summary(
        self,
        refresh: Annotated[bool, Field(description=(
            "Read new transcript lines first (default; slower on a big history)."))] = True,
    ) -> Annotated[CallToolResult, WalletSummary]:
        """Every account (provider:label): each limit window's use with its source and
        confidence, when it resets or runs out, the burn rate, costs today and this week,
        budgets and circuit breakers. Never includes a key or token."""
        if refresh:
            await self.engine.wallet.refresh_index()
        views = await self.engine.wallet.summary()
        now = self.engine.wallet.clock()
        lines = [line for v in views for line in account_lines(v, now)]
        text = "\n".join(lines) if lines else (
            "No accounts and no usage yet (register one with `relay-cli accounts add`).")
        return ok(WalletSummary(accounts=views, now_ms=now), text)
