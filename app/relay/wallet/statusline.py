"""Claude Code's status line hook: the rate limits it pipes in, kept as wallet readings.

``relay-cli statusline`` is run by Claude Code after every turn: with a host running it sends
the readings to the host; with none it opens the store and the writer alone (no engine, no
recovery, no control loop, no host for a moment) and closes them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relay.core.accounts import AccountBook
from relay.core.agent_homes import claude_home
from relay.core.bus import EventBus
from relay.core.config import Config
from relay.core.store.db import Store, now_ms
from relay.core.store.writer import EventWriter
from relay.wallet.limits import LimitBook, from_statusline
from relay.wallet.model import LimitSnapshot


async def record_statusline(config: Config, payload: Mapping[str, Any],
                            env: Mapping[str, str]) -> tuple[str, list[LimitSnapshot]]:
    """Record the readings in ``payload`` for the account Claude Code runs as (its config
    folder in ``env``); returns that account's entry and the readings."""
    store = await Store.open(config.db_path)
    writer = EventWriter(store, EventBus())
    writer.start()
    try:
        return await record_readings(AccountBook(store, writer), LimitBook(store, writer),
                                     payload, claude_home(env).root)
    finally:
        await writer.close()
        await store.close()


async def record_readings(accounts: AccountBook, limits: LimitBook, payload: Mapping[str, Any],
                          config_dir: Path) -> tuple[str, list[LimitSnapshot]]:
    """Record ``payload``'s readings for the account whose Claude folder is ``config_dir``
    (a host does it with its engine's books: ``POST /api/v1/wallet/statusline``)."""
    entry = await _entry_of(accounts, config_dir)
    readings = from_statusline(entry, payload, now_ms())
    await limits.record(readings)
    return entry, readings


async def _entry_of(book: AccountBook, config_dir: Path) -> str:
    """The account whose configuration folder Claude Code runs with (else plain "claude")."""
    folder = config_dir.resolve()
    for account in await book.all():
        if account.provider == "claude" and account.config_dir == folder:
            return account.entry
    return "claude"
