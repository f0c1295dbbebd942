"""Accounts: the user's own logins per provider, by label.

A chain entry ``provider:label`` names an account; a bare ``provider`` entry means that
provider's **preferred** account when one is set, else the CLI's own default login. An
account is a configuration folder of the CLI's own (``CONFIG_ENV``) — possibly one the
user already has; Relay starts the CLI with it and never rewrites it — and how it signs
in (``auth_kind``):

``cli_login``  the CLI's own login stored in that folder (``relay-cli accounts login``
               starts the CLI's login flow there);
``api_key``    an API key, kept in the vault (OS keyring, else the encrypted file) under
               ``account:<provider>:<label>:api_key`` and handed to the CLI in the
               variable it reads (``KEY_ENV``) — never in the database, a log line, an
               export or any other process's environment.

**Environment** (:meth:`AccountBook.agent_env`, :meth:`Account.drop_env`). The CLIs
prefer a credential in the environment to the login in their folder. Measured against
the loopback mocks: Claude Code 2.1.197 with a subscriber login in ``CLAUDE_CONFIG_DIR``
sent an exported ``ANTHROPIC_API_KEY`` (``x-api-key``), ``CLAUDE_CODE_OAUTH_TOKEN`` or
``ANTHROPIC_AUTH_TOKEN`` instead of the folder's token; with both, ``ANTHROPIC_API_KEY``
won. ``codex exec`` 0.171.0 sent ``CODEX_API_KEY`` over ``$CODEX_HOME/auth.json``, used
``CODEX_ACCESS_TOKEN`` instead of auth.json, and ignored ``OPENAI_API_KEY`` entirely.
So an exported key would silently bill every ``cli_login`` account to itself: for a
registered account the agent's environment loses the provider's credential variables
(``CREDENTIAL_ENV``) and gets only the account's own. (Gemini's and Pi's were read from
their help, NOTES and docs, not measured; Pi documents its ``auth.json`` as read before its
environment.)

**Paused** accounts are skipped by sessions (the wallet's guard reads
:attr:`Account.paused`); **preferred** is one account per provider.

The table holds pointers and flags only, never a secret. The vault is synchronous: every
call goes through ``asyncio.to_thread``, one at a time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeVar

from relay.core.agent_homes import HOME_ENV, GeminiHome
from relay.core.errors import AccountError, VaultError
from relay.core.store.db import Store, now_ms
from relay.core.store.writer import EventWriter, WriteOp

if TYPE_CHECKING:  # the vault (keyring, cryptography) loads where one is opened
    from relay.core.vault import Vault

log = logging.getLogger(__name__)

_T = TypeVar("_T")

AuthKind = Literal["cli_login", "api_key"]
AUTH_KINDS: tuple[AuthKind, ...] = ("cli_login", "api_key")

#: the providers an account can be registered for (adapters may come later)
PROVIDERS: tuple[str, ...] = ("claude", "codex", "gemini", "pi", "anthropic", "openai")

#: the environment variable that points each CLI at its configuration folder
#: (:mod:`relay.core.agent_homes`). Gemini's is the folder that *holds* ``.gemini``
#: (gemini-cli's ``homedir()``); an account folder named ``.gemini`` is pointed at through
#: its parent.
CONFIG_ENV: dict[str, str] = HOME_ENV

#: the variable each CLI reads an API key from (Pi has none of its own: it reads the key
#: of whichever of its many model providers runs, so Pi accounts use Pi's own login)
KEY_ENV: dict[str, str] = {"claude": "ANTHROPIC_API_KEY", "codex": "CODEX_API_KEY",
                           "gemini": "GEMINI_API_KEY",
                           # the HTTP runtimes (relay.runtimes.http): the key reaches only
                           # their HTTP client's headers; they have no folder
                           "anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}

#: credentials each CLI takes from the environment *ahead of* the login in its folder;
#: removed from a registered account's agent environment
CREDENTIAL_ENV: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("CODEX_API_KEY", "CODEX_ACCESS_TOKEN", "CODEX_AGENT_IDENTITY"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "pi": (),  # Pi's auth.json in its folder comes before the environment
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "openai": ("OPENAI_API_KEY",),
}

MAX_LABEL = 64
MAX_KEY = 4096


class _Unchanged(enum.Enum):
    UNCHANGED = "unchanged"


#: "leave this as it is" for :meth:`AccountBook.edit`
UNCHANGED: Final = _Unchanged.UNCHANGED


@dataclass(frozen=True, slots=True)
class Account:
    provider: str
    label: str
    config_dir: Path | None
    auth_kind: AuthKind = "cli_login"
    #: used for a chain entry that names only the provider
    preferred: bool = False
    #: skipped by sessions until resumed
    paused: bool = False
    #: the vault holds this account's API key (None: the vault could not be asked)
    has_key: bool | None = False

    @property
    def entry(self) -> str:
        return f"{self.provider}:{self.label}"

    @property
    def key_name(self) -> str:
        """The vault entry of this account's API key."""
        return key_name(self.provider, self.label)

    def env(self) -> dict[str, str]:
        """The configuration-folder variable for this account (never a secret)."""
        var = CONFIG_ENV.get(self.provider)
        if not var or self.config_dir is None:
            return {}
        folder = self.config_dir
        if self.provider == "gemini":
            folder = GeminiHome.for_folder(folder).cli_home
        return {var: str(folder)}

    def drop_env(self) -> frozenset[str]:
        """Inherited variables the agent must not see: the provider's credentials, so the
        account's own login (or key) is the one used."""
        return frozenset(CREDENTIAL_ENV.get(self.provider, ()))


def key_name(provider: str, label: str) -> str:
    return f"account:{provider}:{label}:api_key"


def split_entry(entry: str) -> tuple[str, str | None]:
    """``"claude:work"`` → ``("claude", "work")``; ``"codex"`` → ``("codex", None)``."""
    provider, _, label = entry.partition(":")
    return provider, label or None


def check_label(label: str) -> str:
    """The label if it is usable (raises AccountError otherwise)."""
    if (not label or ":" in label or label != label.strip() or len(label) > MAX_LABEL
            or not label.isprintable()):
        raise AccountError(f"{label!r} is not a usable account label.",
                           f"Use a short name (up to {MAX_LABEL} characters) without colons, "
                           "e.g. work or personal.")
    return label


def check_api_key(provider: str, api_key: str) -> str:
    """The key, stripped of surrounding whitespace, if it can be a key (never echoed)."""
    key = api_key.strip()
    if not key or len(key) > MAX_KEY or not key.isprintable() or any(c.isspace() for c in key):
        raise AccountError(f"That is not a usable {provider} API key (it is empty, too long or "
                           "has spaces or control characters in it).",
                           "Paste the key alone, on one line.")
    return key


def _check_provider(provider: str) -> str:
    if provider not in PROVIDERS:
        raise AccountError(f"Unknown provider {provider!r}.",
                           f"Choose one of: {', '.join(PROVIDERS)}.")
    return provider


def _check_folder(provider: str, config_dir: Path | None) -> Path | None:
    if config_dir is None:
        return None
    folder = config_dir.expanduser().resolve()
    if not folder.is_dir():
        raise AccountError(f"{folder} is not a folder.",
                           "Create it and log the CLI in there first, e.g. "
                           f"{CONFIG_ENV.get(provider, 'CONFIG')}={folder} {provider}")
    return folder


def check_auth_kind(provider: str, auth_kind: str) -> AuthKind:
    """The sign-in kind if the provider's CLI can use it (raises AccountError otherwise)."""
    if auth_kind not in AUTH_KINDS:
        raise AccountError(f"Unknown sign-in kind {auth_kind!r}.",
                           f"Choose one of: {', '.join(AUTH_KINDS)}.")
    if auth_kind == "api_key" and provider not in KEY_ENV:
        raise AccountError(
            f"{provider} accounts cannot use an API key from Relay: {provider} reads the key of "
            "whichever model provider it runs (ANTHROPIC_API_KEY, OPENAI_API_KEY, "
            "GEMINI_API_KEY …).",
            f"Store the key with {provider}'s own /login in the account's folder and register "
            "the folder as a cli_login account.")
    return auth_kind


_COLUMNS = "provider, label, config_dir, auth_kind, preferred, paused"


class AccountBook:
    """The ``accounts`` table (through the store and the writer) and the keys in the vault.

    Args:
        store: Read side.
        writer: The engine's single writer.
        open_vault: Opens the vault (called once, in a worker thread, at the first use of a
            key); None: API keys cannot be used (an :class:`AccountError` says so).
    """

    def __init__(self, store: Store, writer: EventWriter,
                 open_vault: Callable[[], Vault] | None = None) -> None:
        self.store = store
        self.writer = writer
        self._open_vault = open_vault
        self._vault: Vault | None = None
        self._vault_lock = asyncio.Lock()

    # -- changes --------------------------------------------------------------------

    async def add(self, provider: str, label: str, config_dir: Path | None,
                  auth_kind: str = "cli_login", api_key: str | None = None) -> Account:
        """Register an account.

        Raises:
            AccountError: a bad provider, label, folder or kind; no key for an ``api_key``
                account (or a key for a ``cli_login`` one); the account exists already.
            VaultError: the key cannot be stored.
        """
        provider, label = _check_provider(provider), check_label(label)
        folder = _check_folder(provider, config_dir)
        kind = check_auth_kind(provider, auth_kind)
        key = self._key_for(provider, kind, api_key, required=True)
        if await self._row(provider, label) is not None:
            raise AccountError(f"{provider}:{label} is registered already.",
                               f"Change it with `relay-cli accounts edit {provider} {label}`.")
        if key is not None:
            await self._vault_call(lambda v: v.set(key_name(provider, label), key))
        now = now_ms()
        await self._write((
            "INSERT INTO accounts (provider, label, config_dir, auth_kind, created_ms, updated_ms)"
            " VALUES (?,?,?,?,?,?) ON CONFLICT(provider, label) DO NOTHING",
            (provider, label, str(folder) if folder else None, kind, now, now)))
        return Account(provider, label, folder, kind, has_key=key is not None)

    async def edit(self, provider: str, label: str, *,
                   config_dir: Path | _Unchanged | None = UNCHANGED,
                   auth_kind: str | _Unchanged = UNCHANGED,
                   api_key: str | _Unchanged | None = UNCHANGED,
                   new_label: str | _Unchanged = UNCHANGED) -> Account:
        """Change an account; what is not given stays as it is.

        ``api_key`` None (or UNCHANGED) keeps a stored key; switching to ``cli_login``
        deletes it; a new label moves it.

        Raises:
            AccountError: no such account, bad values, the new label is taken, or an
                ``api_key`` account would have no key.
            VaultError: the key cannot be stored, moved or deleted.
        """
        old = await self._require(provider, label)
        folder = (old.config_dir if isinstance(config_dir, _Unchanged)
                  else _check_folder(provider, config_dir))
        kind = (old.auth_kind if isinstance(auth_kind, _Unchanged)
                else check_auth_kind(provider, auth_kind))
        label2 = label if isinstance(new_label, _Unchanged) else check_label(new_label)
        given = None if isinstance(api_key, _Unchanged) else api_key
        key = self._key_for(provider, kind, given, required=old.auth_kind != "api_key")
        if label2 != label and await self._row(provider, label2) is not None:
            raise AccountError(f"{provider}:{label2} is registered already.",
                               "Choose another label, or remove that account first.")
        old_name, new_name = key_name(provider, label), key_name(provider, label2)
        if kind == "api_key" and key is not None:
            await self._vault_call(lambda v: v.set(new_name, key))
        elif kind == "api_key" and new_name != old_name:
            await self._vault_call(lambda v: _move(v, old_name, new_name))
        await self._write((
            "UPDATE OR IGNORE accounts SET label=?, config_dir=?, auth_kind=?, updated_ms=?"
            " WHERE provider=? AND label=?",
            (label2, str(folder) if folder else None, kind, now_ms(), provider, label)))
        if old.auth_kind == "api_key" and (kind != "api_key" or new_name != old_name):
            await self._vault_call(lambda v: v.delete(old_name))
        return await self._require(provider, label2)

    async def remove(self, provider: str, label: str) -> None:
        """Forget an account and delete its key (its folder is left alone)."""
        account = await self._require(provider, label)
        if account.auth_kind == "api_key":
            await self._vault_call(lambda v: v.delete(account.key_name))
        await self._write(("DELETE FROM accounts WHERE provider=? AND label=?",
                           (provider, label)))

    async def set_preferred(self, provider: str, label: str | None) -> None:
        """Make ``label`` the provider's preferred account (None: no preferred account)."""
        if label is not None:
            await self._require(provider, label)
        await self._write(("UPDATE accounts SET preferred = (label IS ?), updated_ms=?"
                           " WHERE provider=?", (label, now_ms(), provider)))

    async def set_paused(self, provider: str, label: str, paused: bool) -> None:
        """Pause (sessions skip it) or resume an account."""
        await self._require(provider, label)
        await self._write(("UPDATE accounts SET paused=?, updated_ms=? WHERE provider=? AND"
                           " label=?", (int(paused), now_ms(), provider, label)))

    # -- reading --------------------------------------------------------------------

    async def get(self, provider: str, label: str) -> Account | None:
        row = await self._row(provider, label)
        return None if row is None else (await self._with_keys([row]))[0]

    async def all(self) -> list[Account]:
        await self.writer.flush()
        async with self.store.conn.execute(
                f"SELECT {_COLUMNS} FROM accounts ORDER BY provider, label") as cur:
            rows = await cur.fetchall()
        return await self._with_keys([_account(tuple(r)) for r in rows])

    async def for_entry(self, entry: str) -> Account | None:
        """The account a chain entry stands for: ``provider:label`` when registered, a bare
        ``provider`` its preferred account (None: not registered / none preferred)."""
        provider, label = split_entry(entry)
        if label is not None:
            return await self.get(provider, label)
        await self.writer.flush()
        async with self.store.conn.execute(
                f"SELECT {_COLUMNS} FROM accounts WHERE provider=? AND preferred=1"
                " ORDER BY label LIMIT 1", (provider,)) as cur:
            row = await cur.fetchone()
        return None if row is None else (await self._with_keys([_account(tuple(row))]))[0]

    async def auth_kind_of(self, entry: str) -> str | None:
        """How the account a chain entry stands for signs in (see :meth:`for_entry`), or
        None when it stands for none — without asking the vault anything."""
        provider, label = split_entry(entry)
        await self.writer.flush()
        query = ("SELECT auth_kind FROM accounts WHERE provider=? AND label=?" if label else
                 "SELECT auth_kind FROM accounts WHERE provider=? AND preferred=1"
                 " ORDER BY label LIMIT 1")
        async with self.store.conn.execute(query, (provider, label) if label else (provider,)
                                           ) as cur:
            row = await cur.fetchone()
        return None if row is None else ("api_key" if row[0] == "api_key" else "cli_login")

    async def agent_env(self, account: Account) -> dict[str, str]:
        """What the agent's environment gets for ``account``: its folder and, for an
        ``api_key`` account, the key in the variable the CLI reads. Remove
        :meth:`Account.drop_env` from the inherited environment first.

        Raises:
            AccountError: an ``api_key`` account whose key is not in the vault.
            VaultError: the vault cannot be opened or unlocked.
        """
        env = account.env()
        if account.auth_kind != "api_key":
            return env
        key = await self._vault_call(lambda v: v.get(account.key_name))
        var = KEY_ENV.get(account.provider)
        if key is None or var is None:
            raise AccountError(f"The API key of {account.entry} is not in the vault.",
                               f"Store it again: relay-cli accounts edit {account.provider} "
                               f"{account.label} --api-key-stdin")
        env[var] = key
        return env

    # -- helpers --------------------------------------------------------------------

    def _key_for(self, provider: str, kind: AuthKind, api_key: str | None, *,
                 required: bool) -> str | None:
        if kind != "api_key":
            if api_key is not None:
                raise AccountError("An API key was given for an account that signs in with "
                                   "the CLI's own login.", "Choose the api_key sign-in kind.")
            return None
        if api_key is None:
            if required:
                raise AccountError(f"An api_key {provider} account needs its API key.",
                                   "Give the key (relay-cli reads it from stdin or asks for it).")
            return None
        return check_api_key(provider, api_key)

    async def _require(self, provider: str, label: str) -> Account:
        account = await self.get(provider, label)
        if account is None:
            raise AccountError(f"No account {provider}:{label}.",
                               "List them with `relay-cli accounts list`.")
        return account

    async def _row(self, provider: str, label: str) -> Account | None:
        await self.writer.flush()
        async with self.store.conn.execute(
                f"SELECT {_COLUMNS} FROM accounts WHERE provider=? AND label=?",
                (provider, label)) as cur:
            row = await cur.fetchone()
        return None if row is None else _account(tuple(row))

    async def _with_keys(self, accounts: list[Account]) -> list[Account]:
        """``has_key`` from the vault's names (asked only when an api_key account is listed)."""
        if not any(a.auth_kind == "api_key" for a in accounts):
            return accounts
        try:
            names: set[str] | None = set(await self._vault_call(lambda v: v.names()))
        except (VaultError, AccountError) as exc:  # listing works with a locked vault
            log.debug("accounts: vault not asked for key names (%s)", type(exc).__name__)
            names = None
        return [a if a.auth_kind != "api_key" else
                dataclasses.replace(a, has_key=None if names is None else a.key_name in names)
                for a in accounts]

    async def _vault_call(self, call: Callable[[Vault], _T]) -> _T:
        async with self._vault_lock:  # the vault is synchronous and not for two threads
            if self._vault is None:
                if self._open_vault is None:
                    raise AccountError("This Relay has no vault for API keys.",
                                       "Use the CLI's own login for this account.")
                self._vault = await asyncio.to_thread(self._open_vault)
            vault = self._vault
            return await asyncio.to_thread(call, vault)

    async def _write(self, statement: tuple[str, tuple[object, ...]]) -> None:
        await self.writer.write(WriteOp("", statements=[statement]))


def _account(row: tuple[object, ...]) -> Account:
    provider, label, folder, kind, preferred, paused = row
    return Account(str(provider), str(label), Path(str(folder)) if folder else None,
                   "api_key" if kind == "api_key" else "cli_login", bool(preferred),
                   bool(paused), has_key=False)


def _move(vault: Vault, old: str, new: str) -> None:
    value = vault.get(old)
    if value is None:
        raise AccountError("The account's API key is not in the vault, so it cannot move to "
                           "the new label.", "Give the key again with the new label.")
    vault.set(new, value)
