"""``/api/v1/integrations/claude``: Claude Code's hooks and Relay's MCP server in a
configuration folder — what is in place and what setting it up would do (GET), and setting it
up or taking it out again (POST) — for the window's Integrations page
(:class:`relay.board.integrations.Integrations`; the host's own URL is the one registered).
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict

from relay.api.context import HostDep
from relay.api.schemas import ERRORS
from relay.board.claude_setup import Applied
from relay.board.integrations import ClaudeIntegration

router = APIRouter(prefix="/api/v1/integrations", tags=["integrations"], responses=ERRORS)


class ClaudeSetupBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: an absolute folder, or a Claude account of the wallet (``work``); neither: the default
    #: folder and every Claude account's
    config_dir: str | None = None
    account: str | None = None
    action: Literal["apply", "remove"]


@router.get("/claude", response_model=list[ClaudeIntegration])
async def claude(ctx: HostDep, config_dir: str | None = None,
                 account: str | None = None) -> list[ClaudeIntegration]:
    """Each folder's plan and check (reads only)."""
    return await ctx.engine.integrations.claude(config_dir, account, url=ctx.url or None)


@router.post("/claude", response_model=list[Applied])
async def claude_setup(body: ClaudeSetupBody, ctx: HostDep) -> list[Applied]:
    """Set the folder(s) up or take Relay's entries out (a backup of each file first)."""
    integrations = ctx.engine.integrations
    if body.action == "remove":
        return await integrations.claude_remove(body.config_dir, body.account)
    return await integrations.claude_apply(body.config_dir, body.account, url=ctx.url or None)
