"""Budgets per task (run), session, day and week: warn at 80 %, stop new work at 100 %.

Where budgets live:

- ``day`` / ``week`` — the ``budgets`` table (migration 4), for all of Relay's work
  (entry ``*``) or one account (``provider:label``). A day is the local calendar day, a
  week the local calendar week from Monday; a run counts on the day it started.
- ``session`` / ``task`` — :class:`~relay.core.models.SessionSpec`'s ``budget_usd`` and
  ``task_budget_usd`` (a task is one run: one prompt on one entry).

:class:`BudgetGuard` is the runner's :class:`~relay.sessions.run_types.TurnGuard`:
before a run it stops new work when a budget is spent; after each turn it warns once per
budget crossing 80 % and stops the session at 100 %. Costs are what the CLI reported,
else estimates from the price table, and the reasons say which. A budget is checked
between turns, so calls already in flight can take the spend past it; the reasons say
that too.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from relay.core.errors import RelayError
from relay.core.store.db import Store, now_ms
from relay.core.store.writer import EventWriter, WriteOp
from relay.wallet.costs import Costs, CostSum, RunCost, day_bounds, week_bounds
from relay.wallet.model import BudgetState, Figure, GuardVerdict
from relay.wallet.pricing import Pricing

#: the share of a budget at which Relay warns
WARN_AT = 0.8
Period = Literal["day", "week"]
PERIODS: tuple[Period, ...] = ("day", "week")
ALL = "*"

Clock = Callable[[], datetime]


def local_now() -> datetime:
    return datetime.now().astimezone()


@dataclass(frozen=True, slots=True)
class Budget:
    """A row of the ``budgets`` table."""

    scope: str
    entry: str
    limit_usd: float
    updated_ms: int


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """One budget against what was spent on it."""

    #: "day", "week" (all of Relay), "day:claude:work", "session:<id>", "task:<run id>"
    scope: str
    #: how the reasons name it: "Today's budget", "This week's budget for claude:work", …
    title: str
    limit_usd: float
    spent: Figure
    #: the command that raises it
    raise_with: str
    #: what a warning is remembered by: the scope and its period (a day, a week)
    period: str = ""

    @property
    def spent_usd(self) -> float:
        return self.spent.value or 0.0

    @property
    def used(self) -> float:
        """The share used (``inf`` for a spent budget of 0)."""
        if self.limit_usd > 0:
            return self.spent_usd / self.limit_usd
        return float("inf") if self.spent_usd > 0 else 1.0

    @property
    def state(self) -> Literal["ok", "warn", "over"]:
        return "over" if self.used >= 1 else "warn" if self.used >= WARN_AT else "ok"

    def as_state(self) -> BudgetState:
        return BudgetState(self.scope, self.limit_usd, self.spent_usd, self.state)

    def spend_text(self) -> str:
        """``"$24.10 of $30.00 (80 %; 3 runs: …)"``."""
        pct = "" if self.limit_usd <= 0 else f"{self.used * 100:.0f} %; "
        return f"{usd(self.spent_usd)} of {usd(self.limit_usd)} ({pct}{self._basis()})"

    def _basis(self) -> str:
        basis = {"recorded": "as reported by the CLI",
                 "estimate": "costs are estimates unless the CLI reported them",
                 "unknown": "no run could be priced"}[self.spent.source]
        return f"{self.spent.detail}; {basis}" if self.spent.detail else basis


class BudgetBook:
    """The ``budgets`` table and the session budgets, read through the store and written
    through the writer."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.store = store
        self.writer = writer

    async def all(self) -> list[Budget]:
        return await read_budgets(self.store)

    async def set(self, scope: str, limit_usd: float, entry: str = ALL) -> Budget:
        """Set the day or week budget of all work (``*``) or of one account."""
        _check_budget(scope, limit_usd)
        row = Budget(scope, entry, float(limit_usd), now_ms())
        await self.writer.write(WriteOp("", statements=[(
            "INSERT INTO budgets (scope, entry, limit_usd, updated_ms) VALUES (?,?,?,?)"
            " ON CONFLICT(scope, entry) DO UPDATE SET limit_usd=excluded.limit_usd,"
            " updated_ms=excluded.updated_ms", (row.scope, row.entry, row.limit_usd, row.updated_ms))]))
        return row

    async def clear(self, scope: str, entry: str = ALL) -> bool:
        """Remove a budget; False when there was none."""
        if not any(b.scope == scope and b.entry == entry for b in await self.all()):
            return False
        await self.writer.write(WriteOp("", statements=[(
            "DELETE FROM budgets WHERE scope=? AND entry=?", (scope, entry))]))
        return True

    async def set_session(self, session_id: str, field: Literal["budget_usd", "task_budget_usd"],
                          limit_usd: float | None) -> str:
        """Change a session's own budget (or its per-task budget); None clears it.

        Returns the full session id. The running session sees it at its next turn.
        """
        if limit_usd is not None:
            _check_budget("session", limit_usd)
        row = await self.store.sessions.get(session_id)
        await self.writer.write(WriteOp("", statements=[
            self.store.sessions.spec_field(row.id, field, limit_usd)]))
        return row.id


class BudgetGuard:
    """Budgets as the runner's turn guard (see the module docstring).

    Args:
        store: The main database.
        pricing: Prices for runs whose CLI reports no cost.
        clock: Now, as an aware datetime; its zone decides where days and weeks begin.
        flush: Waits until the events submitted so far are committed (the engine's
            ``writer.flush``): a turn's usage is then counted in the check after it.
    """

    def __init__(self, store: Store, pricing: Pricing, clock: Clock = local_now,
                 flush: Callable[[], Awaitable[None]] | None = None) -> None:
        self.store = store
        self.costs = Costs(store, pricing)
        self.clock = clock
        self.flush = flush
        self._warned: set[tuple[str, str, str]] = set()

    async def before_run(self, session_id: str, entry: str) -> GuardVerdict | None:
        """"stop" when the session's, the day's or the week's budget is spent."""
        for check in await self._checks(session_id, entry):
            if check.state == "over":
                return GuardVerdict("stop", (
                    f"{check.title} is spent: {check.spend_text()}. Relay starts no "
                    f"new work on it. Raise it with `{check.raise_with}`"))
        return None

    async def after_turn(self, session_id: str, run_id: str, entry: str) -> GuardVerdict | None:
        """"stop" at 100 % of any budget; "warn" once per budget and session at 80 %."""
        if self.flush is not None:
            await self.flush()
        checks = await self._checks(session_id, entry, run_id)
        for check in checks:
            if check.state == "over":
                return GuardVerdict("stop", (
                    f"{check.title} is spent: {check.spend_text()}. Relay stops the "
                    "agent now; calls already in flight can take the spend past the budget. "
                    f"Raise it with `{check.raise_with}`"))
        for check in checks:
            key = (session_id, check.scope, check.period)
            if check.state == "warn" and key not in self._warned:
                self._warned.add(key)
                return GuardVerdict("warn", (
                    f"{check.title} is {check.used * 100:.0f} % used: "
                    f"{check.spend_text()}. Relay stops new work at 100 %; raise it with "
                    f"`{check.raise_with}`"))
        return None

    async def states(self, entry: str | None = None) -> list[BudgetState]:
        """The day and week budgets (all of Relay's, and ``entry``'s or every account's)."""
        return [c.as_state() for c in await self.period_checks(entry)]

    async def session_states(self, session_id: str, run_id: str | None = None) -> list[BudgetState]:
        """A session's own budget and, for ``run_id``, its task budget."""
        return [c.as_state() for c in await self._session_checks(session_id, run_id)]

    async def period_checks(self, entry: str | None = None) -> list[BudgetCheck]:
        """Day and week budgets that apply to ``entry`` (None: every budget set)."""
        budgets = [b for b in await read_budgets(self.store)
                   if entry is None or b.entry in (ALL, entry)]
        if not budgets:
            return []
        now = self._now()
        week_start, week_end = week_bounds(now.date(), now.tzinfo)
        day_start, _ = day_bounds(now.date(), now.tzinfo)
        runs = await self.costs.runs_between(week_start, week_end)
        out = []
        for budget in budgets:
            start = day_start if budget.scope == "day" else week_start
            spent = _sum(r for r in runs if r.started_ms >= start
                         and budget.entry in (ALL, r.entry))
            period = now.date().isoformat() if budget.scope == "day" \
                else "W" + now.strftime("%G-%V")
            out.append(BudgetCheck(
                scope=budget.scope if budget.entry == ALL else f"{budget.scope}:{budget.entry}",
                title=_period_title(budget), limit_usd=budget.limit_usd, spent=spent,
                raise_with=_raise_period(budget, spent), period=period))
        return out

    async def _checks(self, session_id: str, entry: str,
                      run_id: str | None = None) -> list[BudgetCheck]:
        return [*await self._session_checks(session_id, run_id),
                *await self.period_checks(entry)]

    async def _session_checks(self, session_id: str, run_id: str | None) -> list[BudgetCheck]:
        try:
            spec = await self.store.sessions.spec(session_id)
        except RelayError:
            return []
        out = []
        if run_id is not None and spec.task_budget_usd is not None:
            spent = await self.costs.run(run_id)
            out.append(BudgetCheck(
                f"task:{run_id}", "This task's budget", spec.task_budget_usd, spent,
                f"relay-cli budget set task {suggest(spec.task_budget_usd, spent.value or 0)}"
                f" --session {session_id}", period=run_id))
        if spec.budget_usd is not None:
            spent = await self.costs.session(session_id)
            out.append(BudgetCheck(
                f"session:{session_id}", "This session's budget", spec.budget_usd, spent,
                f"relay-cli budget set session {suggest(spec.budget_usd, spent.value or 0)}"
                f" --session {session_id}", period=session_id))
        return out

    def _now(self) -> datetime:
        now = self.clock()
        return now if now.tzinfo is not None else now.astimezone()


async def read_budgets(store: Store) -> list[Budget]:
    async with store.conn.execute(
            "SELECT scope, entry, limit_usd, updated_ms FROM budgets"
            " ORDER BY CASE scope WHEN 'day' THEN 0 ELSE 1 END, entry") as cur:
        rows = await cur.fetchall()
    return [Budget(r[0], r[1], float(r[2]), int(r[3])) for r in rows]


def usd(value: float) -> str:
    """Dollars as people read them: cents from $1 up, four places below."""
    return f"${value:,.2f}" if abs(value) >= 1 or value == 0 else f"${value:.4f}"


def _sum(runs: Iterable[RunCost]) -> Figure:
    acc = CostSum()
    for run in runs:
        acc.add(run.cost)
    return acc.figure()


def suggest(limit_usd: float, spent_usd: float) -> str:
    """A round figure half as much again as the larger of the budget and the spend."""
    target = max(limit_usd, spent_usd) * 1.5
    if target >= 1:
        return f"{math.ceil(target):d}"
    return f"{max(math.ceil(target * 100) / 100, 0.01):g}"


def _check_budget(scope: str, limit_usd: float) -> None:
    if scope not in (*PERIODS, "session"):
        raise RelayError(f"Unknown budget {scope!r}.", "Budgets are day, week, session or task.")
    if not limit_usd >= 0 or limit_usd == float("inf"):
        raise RelayError(f"A budget must be a number of USD ≥ 0, not {limit_usd!r}.",
                         "For example: relay-cli budget set day 30")


def _period_title(budget: Budget) -> str:
    title = "Today's budget" if budget.scope == "day" else "This week's budget"
    return title if budget.entry == ALL else f"{title} for {budget.entry}"


def _raise_period(budget: Budget, spent: Figure) -> str:
    account = "" if budget.entry == ALL else f" --account {budget.entry}"
    amount = suggest(budget.limit_usd, spent.value or 0.0)
    return f"relay-cli budget set {budget.scope} {amount}{account}"
