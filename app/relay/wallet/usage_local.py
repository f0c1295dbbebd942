"""``relay-cli usage`` when no host runs: the index refreshed and its aggregate read here.

A host answers from its warm index; without one, starting the engine for a report would
cost more than the report (its imports, the store, the API). The index is its own SQLite
file and its refresh is one write transaction, so this process refreshes it like a host
would (a host or another command refreshing at the same moment waits for it, then finds
little to do), reads the aggregate (:mod:`relay.wallet.usage_agg`) and prices it. What it
needs of the data folder is the registered accounts' folders, read from the store without
writing it. The official readings some transcripts hold stay in the index: the engine
records them at its next refresh, as it reads them all each time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from relay.core.config import Config
from relay.core.store.peek import account_folders
from relay.wallet.pricing import Pricing
from relay.wallet.usage_index import UsageIndex
from relay.wallet.usage_report import UsageTable, build_report, parse_since, report_rows
from relay.wallet.usage_sources import counted_sources


class Registered(NamedTuple):
    """A registered account as the sources need it (``relay.core.accounts.Account``'s fields)."""

    provider: str
    label: str
    config_dir: Path | None

    @property
    def entry(self) -> str:
        return f"{self.provider}:{self.label}"


def registered_accounts(db: Path) -> list[Registered] | None:
    """The accounts of the store at ``db``, read only (none: no store yet); None when the
    store cannot be read this way (the caller asks the engine instead)."""
    if not db.is_file():
        return []
    try:
        rows = account_folders(db)
    except sqlite3.Error:
        return None
    return [Registered(p, label, Path(d) if d else None) for p, label, d in rows]


def local_usage(config: Config, by: str, since: str | None, account: str | None,
                env: Mapping[str, str]) -> UsageTable | None:
    """The usage table, the index refreshed first; None when the store cannot be read here.

    Raises:
        RelayError: a bad ``since``.
        StoreError: the index cannot be written.
    """
    since_ms = parse_since(since)
    accounts = registered_accounts(config.db_path)
    if accounts is None:
        return None
    sources = counted_sources(accounts, env, config.wallet_default_folders)
    index = UsageIndex(config.usage_index_path)
    try:
        index.refresh(sources)
        rows = index.aggregate(account, since_ms, report_rows(by))
    finally:
        index.close()
    return build_report(Pricing.load(config), rows, by)
