"""Accounts: a provider's isolated configuration folders, by label.

A chain entry ``provider:label`` names an account. For the agent CLIs an
account is a configuration folder of the CLI's own (``CLAUDE_CONFIG_DIR`` for
Claude Code, ``CODEX_HOME`` for Codex) holding that account's login; Relay
starts the CLI with it and never rewrites it. An entry whose label is not
registered runs with the CLI's default folder (the user's own login) and the
session says so. Keys and budgets come with the wallet (issue 5); this table
holds pointers only, never a secret.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from relay.core.errors import AccountError
from relay.core.store.db import Store, now_ms
from relay.core.store.writer import EventWriter, WriteOp

#: the environment variable that points each CLI at its configuration folder
CONFIG_ENV: dict[str, str] = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}


@dataclass(frozen=True, slots=True)
class Account:
    provider: str
    label: str
    config_dir: Path | None
    auth_kind: str = "cli_login"

    @property
    def entry(self) -> str:
        return f"{self.provider}:{self.label}"

    def env(self) -> dict[str, str]:
        """What the agent's environment gets for this account."""
        var = CONFIG_ENV.get(self.provider)
        return {var: str(self.config_dir)} if var and self.config_dir else {}


def split_entry(entry: str) -> tuple[str, str | None]:
    """``"claude:work"`` → ``("claude", "work")``; ``"codex"`` → ``("codex", None)``."""
    provider, _, label = entry.partition(":")
    return provider, label or None


class AccountBook:
    """The ``accounts`` table, read through the store and written through the writer."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.store = store
        self.writer = writer

    async def add(self, provider: str, label: str, config_dir: Path | None) -> Account:
        """Register (or update) an account.

        Raises:
            AccountError: the label is empty or has a colon, or the folder does not exist.
        """
        if not label or ":" in label or label != label.strip():
            raise AccountError(f"{label!r} is not a usable account label.",
                               "Use a short name without colons, e.g. work or personal.")
        if config_dir is not None:
            config_dir = config_dir.expanduser().resolve()
            if not config_dir.is_dir():
                raise AccountError(f"{config_dir} is not a folder.",
                                   "Create it and log the CLI in there first, e.g. "
                                   f"{CONFIG_ENV.get(provider, 'CONFIG')}={config_dir} {provider}")
        await self.writer.write(WriteOp("", statements=[(
            "INSERT INTO accounts (provider, label, config_dir, auth_kind, created_ms)"
            " VALUES (?,?,?,?,?) ON CONFLICT(provider, label) DO UPDATE SET"
            " config_dir=excluded.config_dir",
            (provider, label, str(config_dir) if config_dir else None, "cli_login", now_ms()))]))
        return Account(provider, label, config_dir)

    async def remove(self, provider: str, label: str) -> None:
        if await self.get(provider, label) is None:
            raise AccountError(f"No account {provider}:{label}.",
                               "List them with `relay-cli accounts list`.")
        await self.writer.write(WriteOp("", statements=[
            ("DELETE FROM accounts WHERE provider=? AND label=?", (provider, label))]))

    async def get(self, provider: str, label: str) -> Account | None:
        for account in await self.all():
            if account.provider == provider and account.label == label:
                return account
        return None

    async def all(self) -> list[Account]:
        await self.writer.flush()
        async with self.store.conn.execute(
                "SELECT provider, label, config_dir, auth_kind FROM accounts"
                " ORDER BY provider, label") as cur:
            rows = await cur.fetchall()
        return [Account(p, lbl, Path(d) if d else None, k) for p, lbl, d, k in rows]

    async def for_entry(self, entry: str) -> Account | None:
        """The registered account a chain entry names (None: no label, or not registered)."""
        provider, label = split_entry(entry)
        return await self.get(provider, label) if label else None
