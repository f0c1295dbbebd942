"""``engine.integrations``: Claude Code's hooks and MCP server for the window's Integrations
page and the API (``/api/v1/integrations/claude``), over :mod:`relay.board.claude_setup`.

A folder is named by ``config_dir`` (an absolute path), by ``account`` (a Claude account of the
wallet) or by neither: then the default folder and every Claude account's folder. The file
work runs in a worker thread. The host's URL is passed in by the caller (the API knows it:
``HostContext.url``); without one, the running host's (``host.json``), else the default URL.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from relay.board import claude_setup as cs
from relay.core.errors import SetupError
from relay.core.hostfile import read_host

if TYPE_CHECKING:
    from relay.core.accounts import AccountBook


@dataclass(frozen=True)
class ClaudeIntegration:
    """One folder: what setting it up would do, and what is in place now."""

    target: cs.ClaudeTarget
    plan: cs.Plan
    check: cs.Check
    ok: bool


class Integrations:
    def __init__(self, home: Path, accounts: AccountBook) -> None:
        self.home = home
        self.accounts = accounts

    async def claude_targets(self, config_dir: Path | str | None = None,
                             account: str | None = None) -> list[cs.ClaudeTarget]:
        if config_dir is not None and account is not None:
            raise SetupError("Name a configuration folder or an account, not both.")
        if config_dir is not None:
            folder = Path(config_dir)
            if not folder.is_absolute():
                raise SetupError(f"{config_dir!r} is not an absolute path.",
                                 "Give the folder's full path.")
            return [cs.folder_target(folder)]
        accounts = await self.accounts.all()
        if account is not None:
            return [cs.account_target(cs.find_account(accounts, account))]
        return cs.unique_targets([cs.default_target(), *(
            cs.account_target(a) for a in cs.claude_accounts(accounts))])

    def _url(self, url: str | None) -> str | None:
        """The running host's URL (the caller's, else ``host.json``'s); None: no host runs,
        and the default URL is registered."""
        if url:
            return url
        host = read_host(self.home)
        return host.url if host else None

    async def claude(self, config_dir: Path | str | None = None, account: str | None = None,
                     *, url: str | None = None) -> list[ClaudeIntegration]:
        """The plan and the check of each folder (reads only)."""
        targets = await self.claude_targets(config_dir, account)
        running = self._url(url)

        def look() -> list[ClaudeIntegration]:
            wiring = cs.Wiring.make(self.home, running)
            out = []
            for target in targets:
                check = cs.check(target, wiring, running)
                out.append(ClaudeIntegration(target, cs.plan(target, wiring), check, check.ok))
            return out

        return await asyncio.to_thread(look)

    async def claude_apply(self, config_dir: Path | str | None = None,
                           account: str | None = None, *,
                           url: str | None = None) -> list[cs.Applied]:
        """Set the folder(s) up (a backup of each file first)."""
        targets = await self.claude_targets(config_dir, account)
        wanted = self._url(url)

        def run() -> list[cs.Applied]:
            wiring = cs.Wiring.make(self.home, wanted)
            return [cs.apply(t, wiring) for t in targets]

        return await asyncio.to_thread(run)

    async def claude_remove(self, config_dir: Path | str | None = None,
                            account: str | None = None) -> list[cs.Applied]:
        """Take Relay's entries out of the folder(s) (a backup of each file first)."""
        targets = await self.claude_targets(config_dir, account)
        return await asyncio.to_thread(lambda: [cs.remove(t) for t in targets])
