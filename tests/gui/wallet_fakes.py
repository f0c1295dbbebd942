"""An in-memory wallet for the Wallet dock's tests, and the accounts it starts with."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

from relay.core.errors import AccountError
from relay.engine.account_check import AccountCheck, LoginCommand, NoLogin
from relay.gui.wallet_backend import AccountForm, Progress
from relay.wallet.model import (
    AccountHistory,
    AccountView,
    BudgetState,
    DayCost,
    Figure,
    WindowHistory,
    WindowView,
)
from relay.wallet.usage_refresh import RefreshReport

#: the tests' clock: 2026-11-29 12:00 UTC
NOW = 1_795_953_600_000
MIN = 60_000
HOUR = 60 * MIN


def window(kind: str = "five_hour", used: float | None = 0.42, projected: float | None = 0.71,
           *, source: str = "official", age_ms: int = 2 * MIN, resets_in: int | None = 3 * HOUR
           + 12 * MIN, exhausts_in: int | None = None, confidence: str = "high") -> WindowView:
    return WindowView(
        kind=kind,  # type: ignore[arg-type]
        used=Figure(used, source if used is not None else "unknown",  # type: ignore[arg-type]
                    NOW - age_ms, "claude rate_limit_event"),
        tokens=Figure(1_234_567, "estimate", NOW),
        projected=Figure(projected, "estimate" if projected is not None else "unknown", NOW),
        resets_at=Figure(NOW + resets_in if resets_in is not None else None,
                         source if resets_in is not None else "unknown",  # type: ignore[arg-type]
                         NOW),
        exhausts_at_ms=NOW + exhausts_in if exhausts_in is not None else None,
        confidence=confidence,  # type: ignore[arg-type]
        why="burn over the last 30 min")


def work() -> AccountView:
    """claude:work — preferred, an official 5-hour window and an estimated 7-day one."""
    return AccountView(
        entry="claude:work", provider="claude", label="work", auth_kind="cli_login",
        config_dir="/home/me/.claude-work", preferred=True, paused=False,
        windows=[window(),
                 window("seven_day", 0.18, 0.30, source="estimate", resets_in=4 * 24 * HOUR,
                        confidence="medium")],
        burn_tpm=Figure(1234.0, "recorded", NOW),
        cost_today=Figure(3.2, "estimate", NOW), cost_week=Figure(18.4, "official", NOW),
        budgets=[BudgetState("day", 5.0, 3.2, "ok"), BudgetState("week", 20.0, 18.4, "warn")])


def personal() -> AccountView:
    """claude:personal — paused, nothing known, an open circuit breaker."""
    return AccountView(
        entry="claude:personal", provider="claude", label="personal", auth_kind="cli_login",
        config_dir=None, preferred=False, paused=True,
        windows=[window(used=None, projected=None, resets_in=None, confidence="none")],
        breaker_until_ms=NOW + 30 * MIN, breaker_reason="usage limit reached")


def codex_key() -> AccountView:
    """codex:ci — an API-key account near its limit."""
    return AccountView(
        entry="codex:ci", provider="codex", label="ci", auth_kind="api_key", config_dir=None,
        preferred=False, paused=False,
        windows=[window(used=0.96, projected=1.2, exhausts_in=20 * MIN, resets_in=HOUR)],
        cost_today=Figure(0.004, "estimate", NOW), warnings=3)


def history(entry: str = "claude:work") -> AccountHistory:
    """The plots' series of an account: a 5-hour window (the one :func:`window` describes,
    resetting in 3h 12m) climbing to 42 %, a 7-day one of counted tokens only, a burn, two
    weeks of costs and a $5 day budget."""
    reset = NOW + 3 * HOUR + 12 * MIN
    start = reset - 5 * HOUR
    five = WindowHistory("five_hour", start, reset, "share",
                         [(NOW - (6 - i) * 18 * MIN, 0.07 * i) for i in range(7)], "official")
    seven = WindowHistory("seven_day", NOW - 3 * 24 * HOUR, NOW + 4 * 24 * HOUR, "tokens",
                          [(NOW - 2 * 24 * HOUR, 1e6), (NOW - HOUR, 3e6)], "estimate")
    burn = [(NOW - 5 * HOUR + i * 15 * MIN, 100.0 * (i % 5)) for i in range(20)]
    days = [DayCost(f"2026-11-{16 + i:02d}", Figure(0.5 * i, "estimate", NOW)) for i in range(14)]
    return AccountHistory(entry, NOW, [five, seven], burn, days, day_budget_usd=5.0,
                          day_budget_scope=entry)


class FakeWallet:
    """A :class:`~relay.gui.wallet_backend.WalletBackend` over a list of accounts.

    ``scan_gate``: when set, the index refresh reports half its files and waits for
    it (so a test can look at the progress mid-scan).
    """

    def __init__(self, accounts: list[AccountView] | None = None) -> None:
        self.accounts = list(accounts if accounts is not None else [work(), personal()])
        self.mark = 0.95
        self.summaries = 0
        #: the entries whose plots' series were read, in order
        self.histories: list[str] = []
        self.calls: list[tuple[str, object]] = []
        self.saved: list[AccountForm] = []
        self.check_result = AccountCheck("claude:work", "ok", "The account answered.",
                                         model="claude-sonnet-4", latency_s=1.2)
        self.fail_with: Exception | None = None
        self.login: LoginCommand | NoLogin = LoginCommand(
            ["claude", "auth", "login"], {"CLAUDE_CONFIG_DIR": "/home/me/.claude-work"},
            frozenset({"ANTHROPIC_API_KEY"}), "Sign in in the browser that opens.")
        self.scan_gate: threading.Event | None = None
        #: thread ids the scans ran in (get_ident: current_thread() would register a QThread)
        self.scan_threads: list[int] = []
        self.scan_total = 8
        self.scan_error: Exception | None = None
        #: one per index refresh: whether it reported progress (False: a quiet one)
        self.scans: list[bool] = []

    async def watermark(self) -> float:
        return self.mark

    async def summary(self) -> list[AccountView]:
        self.summaries += 1
        await asyncio.sleep(0)
        return list(self.accounts)

    async def registered(self) -> set[str]:
        return {a.entry for a in self.accounts if a.label is not None}

    async def history(self, entry: str) -> AccountHistory:
        self.histories.append(entry)
        await asyncio.sleep(0)
        return history(entry)

    async def refresh_index(self, progress: Progress | None) -> RefreshReport:
        self.scans.append(progress is not None)
        return await asyncio.to_thread(self._scan, progress)

    def _scan(self, progress: Progress | None) -> RefreshReport:
        self.scan_threads.append(threading.get_ident())
        if self.scan_error is not None:
            raise self.scan_error
        for done in range(self.scan_total + 1):
            if progress is not None:
                progress(done, self.scan_total)
            if done == self.scan_total // 2 and self.scan_gate is not None:
                self.scan_gate.wait(10)
        return RefreshReport(files_seen=120, files_changed=self.scan_total,
                             bytes_read=3 << 20, entries_added=450,
                             warnings={"truncated_line": 2}, elapsed_s=0.42)

    async def _do(self, name: str, arg: object) -> None:
        self.calls.append((name, arg))
        await asyncio.sleep(0)
        if self.fail_with is not None:
            raise self.fail_with

    def _replace(self, entry: str, **changes: object) -> None:
        self.accounts = [dataclasses.replace(a, **changes) if a.entry == entry else a  # type: ignore[arg-type]
                         for a in self.accounts]

    async def save(self, form: AccountForm) -> None:
        await self._do("save", form.original)
        self.saved.append(form)
        if form.original is None:
            self.accounts.append(AccountView(
                entry=f"{form.provider}:{form.label}", provider=form.provider, label=form.label,
                auth_kind=form.auth_kind, config_dir=str(form.config_dir or "") or None,
                preferred=False, paused=False))

    async def remove(self, entry: str) -> None:
        await self._do("remove", entry)
        self.accounts = [a for a in self.accounts if a.entry != entry]

    async def set_preferred(self, entry: str) -> None:
        await self._do("set_preferred", entry)
        provider = entry.partition(":")[0]
        self.accounts = [dataclasses.replace(a, preferred=a.entry == entry)
                         if a.provider == provider else a for a in self.accounts]

    async def set_paused(self, entry: str, paused: bool) -> None:
        await self._do("set_paused", (entry, paused))
        self._replace(entry, paused=paused)

    async def check(self, entry: str) -> AccountCheck:
        await self._do("check", entry)
        return self.check_result

    async def login_command(self, entry: str) -> LoginCommand | NoLogin:
        await self._do("login_command", entry)
        return self.login


def refused() -> AccountError:
    return AccountError("No account claude:gone.", "List them with `relay-cli accounts list`.")


def default_codex() -> AccountView:
    """codex — no account registered: the CLI's default login, seen in the transcripts."""
    return AccountView(
        entry="codex", provider="codex", label=None, auth_kind="cli_login", config_dir=None,
        preferred=False, paused=False,
        windows=[window(used=0.3, projected=0.4, source="estimate", confidence="low")])

#: how the fake's index refresh reads in the dock
SCAN_TEXT = ("120 transcript files: 8 read (3.0 MB), 450 new calls · 2 skipped (see the log) · "
             "0.4 s")
