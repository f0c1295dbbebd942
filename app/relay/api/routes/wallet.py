"""``/api/v1/wallet``: every account's usage, windows, costs and budgets; the usage report;
reading the transcripts appended since the last refresh."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from fastapi import APIRouter, Depends, Query

from relay.api.context import engine
from relay.api.schemas import ERRORS
from relay.wallet.budgets import BudgetCheck
from relay.wallet.model import AccountView
from relay.wallet.usage_refresh import RefreshReport
from relay.wallet.usage_report import UsageTable, usage_report

if TYPE_CHECKING:
    from relay.engine.engine import Engine

router = APIRouter(prefix="/api/v1/wallet", tags=["wallet"], responses=ERRORS)
EngineDep = Annotated["Engine", Depends(engine)]


@router.get("", response_model=list[AccountView])
async def summary(eng: EngineDep) -> list[AccountView]:
    """Every account with its windows, burn, costs and budgets."""
    return await eng.wallet.summary()


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
                account: str | None = None) -> UsageTable:
    """Tokens and cost by day, session or 5-hour block (``since``: a date or ``7d``)."""
    return await usage_report(eng.wallet, by=by, since=since, account=account)


@router.get("/budgets", response_model=list[BudgetCheck])
async def budgets(eng: EngineDep, entry: str | None = None) -> list[BudgetCheck]:
    """Each period budget with what was spent against it."""
    return await eng.wallet.budgets.period_checks(entry)
