"""``/api/v1/wallet``: every account's usage, windows, costs and budgets; one account's
series for the plots; the usage report;
reading the transcripts appended since the last refresh; setting budgets; the circuit
breakers (an account Relay thinks is out until its reset); Claude Code's status-line
readings."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from relay.api.context import EngineDep
from relay.api.schemas import (
    ERRORS,
    BudgetBody,
    Done,
    SessionBudgetBody,
    Started,
    StatuslineBody,
    StatuslineRecorded,
)
from relay.core.events import utcnow
from relay.sessions.breaker import Breaker
from relay.wallet.budgets import Budget, BudgetCheck
from relay.wallet.model import AccountHistory, AccountView
from relay.wallet.usage_refresh import RefreshReport
from relay.wallet.usage_report import UsageTable, usage_report

router = APIRouter(prefix="/api/v1/wallet", tags=["wallet"], responses=ERRORS)


@router.get("", response_model=list[AccountView])
async def summary(eng: EngineDep) -> list[AccountView]:
    """Every account with its windows, burn, costs and budgets."""
    return await eng.wallet.summary()


@router.get("/history/{entry}", response_model=AccountHistory)
async def history(entry: str, eng: EngineDep) -> AccountHistory:
    """One account's series for the plots: each window's course, the burn of the last five
    hours, the cost of the last days and the day budget."""
    return await eng.wallet.history(entry)


@router.post("/refresh", response_model=RefreshReport)
async def refresh_index(eng: EngineDep) -> RefreshReport:
    """Read the transcripts appended since the last refresh (in a worker thread)."""
    return await eng.wallet.refresh_index()


@router.get("/watermark", response_model=float)
async def watermark(eng: EngineDep) -> float:
    """0–1: a window at or past it is handed off before the wall."""
    return float(eng.wallet.watermark)


@router.get("/usage", response_model=UsageTable)
async def usage(eng: EngineDep, by: Literal["day", "session", "block"] = "day",
                since: Annotated[str | None, Query(max_length=40)] = None,
                account: str | None = None, refresh: bool = False) -> UsageTable:
    """Tokens and cost by day, session or 5-hour block (``since``: a date or ``7d``), from
    the index's aggregate — after reading what was appended first when ``refresh``."""
    if refresh:
        await eng.wallet.refresh_index()
    return await usage_report(eng.wallet, by=by, since=since, account=account)


@router.get("/budgets", response_model=list[BudgetCheck])
async def budgets(eng: EngineDep, entry: str | None = None) -> list[BudgetCheck]:
    """Each period budget with what was spent against it."""
    return await eng.wallet.budgets.period_checks(entry)


@router.put("/budgets/{scope}", response_model=Budget)
async def set_budget(scope: Literal["day", "week"], body: BudgetBody, eng: EngineDep) -> Budget:
    """Set the day or week budget of all work (``entry: "*"``) or of one account."""
    return await eng.wallet.budget_book.set(scope, body.limit_usd, body.entry)


@router.delete("/budgets/{scope}", response_model=bool)
async def clear_budget(scope: Literal["day", "week"], eng: EngineDep,
                       entry: str = "*") -> bool:
    """Remove a budget; false when there was none."""
    return await eng.wallet.budget_book.clear(scope, entry)


@router.put("/session-budgets/{session_id}", response_model=Started)
async def set_session_budget(session_id: str, body: SessionBudgetBody,
                             eng: EngineDep) -> Started:
    """A session's own budget, or its budget per task (run); ``limit_usd: null`` clears it.
    Answers the full session id; the running session sees it at its next turn."""
    return Started(id=await eng.wallet.budget_book.set_session(session_id, body.field,
                                                               body.limit_usd))


@router.get("/breakers/{entry}", response_model=Breaker | None)
async def breaker(entry: str, eng: EngineDep) -> Breaker | None:
    """The entry's circuit breaker, or null when it is closed."""
    return await eng.breakers.get(entry, now=utcnow())


@router.delete("/breakers/{entry}", response_model=Done)
async def reset_breaker(entry: str, eng: EngineDep) -> Done:
    """Close the entry's circuit breaker: the next session tries the account again."""
    await eng.breakers.reset("", entry)
    return Done()


@router.post("/statusline", response_model=StatuslineRecorded)
async def statusline(body: StatuslineBody, eng: EngineDep) -> StatuslineRecorded:
    """Record the rate limits Claude Code piped to its status-line command, for the account
    whose configuration folder it runs with."""
    from relay.wallet.statusline import record_readings

    entry, readings = await record_readings(eng.accounts, eng.wallet.limits, body.payload,
                                            body.config_dir)
    return StatuslineRecorded(entry=entry, readings=readings)
