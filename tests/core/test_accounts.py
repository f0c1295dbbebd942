"""AccountBook: accounts per provider, their flags, their keys in the vault, their environment.

The vault is the encrypted file (``vault_env``); sessions run through the fake CLIs on PATH.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.accounts import (
    CONFIG_ENV,
    CREDENTIAL_ENV,
    KEY_ENV,
    PROVIDERS,
    UNCHANGED,
    Account,
    AccountBook,
    key_name,
    split_entry,
)
from relay.core.config import load_config
from relay.core.errors import AccountError, VaultError
from relay.core.models import SessionSpec
from relay.core.vault import Vault
from relay.engine.engine import Engine
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter

KEY = "sk-ant-api03-" + "k3y" * 30
OTHER_KEY = "sk-ant-api03-" + "0th3r" * 18


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


@pytest.fixture
def book(engine: Engine) -> AccountBook:
    return engine.accounts


def folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir(parents=True)
    return path


def stored(engine: Engine, name: str) -> str | None:
    return Vault.open(engine.config).get(name)


def db_bytes(engine: Engine) -> bytes:
    home = engine.config.db_path.parent
    return b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("relay.db"))


# -- registering ----------------------------------------------------------------------

async def test_an_account_round_trips_with_its_flags(book: AccountBook, tmp_path: Path) -> None:
    work = folder(tmp_path, "claude-work")
    added = await book.add("claude", "work", work)
    assert added == Account("claude", "work", work.resolve(), "cli_login")
    assert await book.get("claude", "work") == added
    assert await book.all() == [added]
    assert added.env() == {"CLAUDE_CONFIG_DIR": str(work.resolve())}
    assert (added.preferred, added.paused, added.has_key) == (False, False, False)


@pytest.mark.parametrize(("provider", "label", "kind", "key", "message"), [
    ("claude", "", "cli_login", None, "not a usable account label"),
    ("claude", "a:b", "cli_login", None, "not a usable account label"),
    ("claude", " work", "cli_login", None, "not a usable account label"),
    ("claude", "x" * 65, "cli_login", None, "not a usable account label"),
    ("cursor", "work", "cli_login", None, "Unknown provider"),
    ("claude", "work", "oauth", None, "Unknown sign-in kind"),
    ("claude", "work", "api_key", None, "needs its API key"),
    ("claude", "work", "cli_login", KEY, "API key was given"),
    ("claude", "work", "api_key", "sk ant with spaces", "not a usable claude API key"),
    ("claude", "work", "api_key", "   ", "not a usable claude API key"),
    ("pi", "work", "api_key", KEY, "cannot use an API key"),
])
async def test_bad_accounts_are_refused(book: AccountBook, provider: str, label: str, kind: str,
                                        key: str | None, message: str) -> None:
    with pytest.raises(AccountError, match=message) as caught:
        await book.add(provider, label, None, kind, key)
    assert caught.value.hint
    assert KEY not in str(caught.value)
    assert await book.all() == []


async def test_a_missing_folder_and_a_second_add_are_refused(book: AccountBook,
                                                             tmp_path: Path) -> None:
    with pytest.raises(AccountError, match="is not a folder"):
        await book.add("codex", "ci", tmp_path / "nowhere")
    await book.add("codex", "ci", None)
    with pytest.raises(AccountError, match="registered already") as caught:
        await book.add("codex", "ci", None)
    assert "accounts edit codex ci" in (caught.value.hint or "")
    assert len(await book.all()) == 1  # and the writer still works (no failed batch)


async def test_an_api_key_goes_to_the_vault_and_never_to_the_database(
        engine: Engine, book: AccountBook) -> None:
    account = await book.add("claude", "api", None, "api_key", f"  {KEY}\n")
    assert account.has_key is True
    assert stored(engine, key_name("claude", "api")) == KEY  # stripped, under its name
    assert account.key_name == "account:claude:api:api_key"
    assert await book.agent_env(account) == {"ANTHROPIC_API_KEY": KEY}
    listed = await book.all()
    assert [(a.entry, a.auth_kind, a.has_key) for a in listed] == [("claude:api", "api_key", True)]
    assert KEY not in repr(listed)
    await engine.writer.flush()
    assert KEY.encode() not in db_bytes(engine)
    with sqlite3.connect(engine.config.db_path) as conn:
        rows = conn.execute("SELECT * FROM accounts").fetchall()
    assert KEY not in json.dumps(rows)


@pytest.mark.parametrize(("provider", "variable"), sorted(KEY_ENV.items()))
async def test_each_cli_gets_the_key_in_the_variable_it_reads(
        book: AccountBook, tmp_path: Path, provider: str, variable: str) -> None:
    home = folder(tmp_path, provider)
    account = await book.add(provider, "api", home, "api_key", KEY)
    env = await book.agent_env(account)
    # the HTTP runtimes (anthropic, openai) have no configuration folder
    folder_env = {CONFIG_ENV[provider]: str(home.resolve())} if provider in CONFIG_ENV else {}
    assert env == {variable: KEY, **folder_env}
    assert variable in account.drop_env()  # an inherited one is replaced, not kept


async def test_a_key_missing_from_the_vault_is_a_clear_error(engine: Engine,
                                                             book: AccountBook) -> None:
    account = await book.add("codex", "api", None, "api_key", KEY)
    Vault.open(engine.config).delete(account.key_name)
    assert (await book.get("codex", "api")) == Account("codex", "api", None, "api_key",
                                                       has_key=False)
    with pytest.raises(AccountError, match="not in the vault") as caught:
        await book.agent_env(account)
    assert "--api-key-stdin" in (caught.value.hint or "")


async def test_listing_works_while_the_vault_is_locked(engine: Engine, tmp_path: Path) -> None:
    await engine.accounts.add("claude", "api", None, "api_key", KEY)

    def locked() -> Vault:
        raise VaultError("The vault file needs a passphrase and none was given.")

    book = AccountBook(engine.store, engine.writer, locked)
    assert [(a.entry, a.has_key) for a in await book.all()] == [("claude:api", None)]
    with pytest.raises(VaultError):
        await book.agent_env((await book.all())[0])
    without = AccountBook(engine.store, engine.writer)
    with pytest.raises(AccountError, match="no vault"):
        await without.add("claude", "other", None, "api_key", KEY)


# -- the environment ------------------------------------------------------------------

def test_config_variables_per_provider(tmp_path: Path) -> None:
    assert Account("codex", "a", tmp_path).env() == {"CODEX_HOME": str(tmp_path)}
    assert Account("pi", "a", tmp_path).env() == {"PI_CODING_AGENT_DIR": str(tmp_path)}
    assert Account("gemini", "a", tmp_path).env() == {"GEMINI_CLI_HOME": str(tmp_path)}
    # gemini-cli's home is the folder that holds .gemini: an existing ~/.gemini is its parent
    gemini_dir = tmp_path / ".gemini"
    assert Account("gemini", "a", gemini_dir).env() == {"GEMINI_CLI_HOME": str(tmp_path)}
    assert Account("claude", "a", None).env() == {}


def test_a_cli_login_account_drops_the_credentials_that_would_override_it() -> None:
    assert Account("claude", "a", None).drop_env() == {
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}
    assert Account("codex", "a", None).drop_env() == {
        "CODEX_API_KEY", "CODEX_ACCESS_TOKEN", "CODEX_AGENT_IDENTITY"}
    assert Account("gemini", "a", None).drop_env() == {"GEMINI_API_KEY", "GOOGLE_API_KEY"}
    assert Account("pi", "a", None).drop_env() == frozenset()
    assert Account("anthropic", "a", None).drop_env() == {"ANTHROPIC_API_KEY",
                                                          "ANTHROPIC_AUTH_TOKEN"}
    assert set(CREDENTIAL_ENV) == set(PROVIDERS)


def test_the_adapter_drops_then_sets(tmp_path: Path) -> None:
    user = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "user-exported", "HOME": "/home/u",
            "CODEX_API_KEY": "other-cli"}
    adapter = ClaudeAdapter(user)
    request = RunRequest(prompt="p", cwd=tmp_path, extra_env={"ANTHROPIC_API_KEY": KEY},
                         drop_env=frozenset({"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}))
    env = adapter.build_env(request)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "CODEX_API_KEY": "other-cli",
                   "ANTHROPIC_API_KEY": KEY}
    login = RunRequest(prompt="p", cwd=tmp_path, drop_env=frozenset({"ANTHROPIC_API_KEY"}))
    assert "ANTHROPIC_API_KEY" not in adapter.build_env(login)
    assert KEY not in repr(request)


# -- changing ---------------------------------------------------------------------------

async def test_edit_changes_only_what_is_given(book: AccountBook, tmp_path: Path) -> None:
    one, two = folder(tmp_path, "one"), folder(tmp_path, "two")
    await book.add("claude", "work", one)
    await book.set_preferred("claude", "work")
    moved = await book.edit("claude", "work", config_dir=two)
    assert moved == Account("claude", "work", two.resolve(), "cli_login", preferred=True)
    same = await book.edit("claude", "work", config_dir=UNCHANGED)
    assert same == moved
    default = await book.edit("claude", "work", config_dir=None)
    assert default.config_dir is None
    with pytest.raises(AccountError, match="No account claude:nope"):
        await book.edit("claude", "nope", config_dir=None)
    with pytest.raises(AccountError, match="is not a folder"):
        await book.edit("claude", "work", config_dir=tmp_path / "missing")


async def test_switching_to_a_key_and_back(engine: Engine, book: AccountBook) -> None:
    await book.add("claude", "work", None)
    with pytest.raises(AccountError, match="needs its API key"):
        await book.edit("claude", "work", auth_kind="api_key")
    keyed = await book.edit("claude", "work", auth_kind="api_key", api_key=KEY)
    assert (keyed.auth_kind, keyed.has_key) == ("api_key", True)
    kept = await book.edit("claude", "work", api_key=None)  # None: keep the stored key
    assert kept.has_key is True
    assert stored(engine, keyed.key_name) == KEY
    replaced = await book.edit("claude", "work", api_key=OTHER_KEY)
    assert stored(engine, replaced.key_name) == OTHER_KEY
    with pytest.raises(AccountError, match="API key was given"):
        await book.edit("claude", "work", auth_kind="cli_login", api_key=KEY)
    back = await book.edit("claude", "work", auth_kind="cli_login")
    assert (back.auth_kind, back.has_key) == ("cli_login", False)
    assert stored(engine, keyed.key_name) is None  # deleted with the switch


async def test_renaming_moves_the_key_and_keeps_the_flags(engine: Engine,
                                                          book: AccountBook) -> None:
    await book.add("codex", "old", None, "api_key", KEY)
    await book.add("codex", "taken", None)
    await book.set_preferred("codex", "old")
    await book.set_paused("codex", "old", True)
    with pytest.raises(AccountError, match="codex:taken is registered already"):
        await book.edit("codex", "old", new_label="taken")
    renamed = await book.edit("codex", "old", new_label="new")
    assert (renamed.entry, renamed.preferred, renamed.paused, renamed.has_key) == (
        "codex:new", True, True, True)
    assert stored(engine, key_name("codex", "new")) == KEY
    assert stored(engine, key_name("codex", "old")) is None
    assert await book.get("codex", "old") is None
    assert await book.agent_env(renamed) == {"CODEX_API_KEY": KEY}


async def test_remove_deletes_the_key_and_leaves_the_folder(engine: Engine, book: AccountBook,
                                                            tmp_path: Path) -> None:
    home = folder(tmp_path, "codex-home")
    (home / "auth.json").write_text("{}")
    account = await book.add("codex", "ci", home, "api_key", KEY)
    await book.remove("codex", "ci")
    assert await book.all() == []
    assert stored(engine, account.key_name) is None
    assert (home / "auth.json").read_text() == "{}"
    with pytest.raises(AccountError, match="No account codex:ci"):
        await book.remove("codex", "ci")


# -- preferred and paused -------------------------------------------------------------------

async def test_one_preferred_account_per_provider(book: AccountBook) -> None:
    for provider, label in (("claude", "a"), ("claude", "b"), ("codex", "c")):
        await book.add(provider, label, None)
    assert await book.for_entry("claude") is None  # none preferred: the CLI's own login
    await book.set_preferred("claude", "a")
    await book.set_preferred("codex", "c")
    await book.set_preferred("claude", "b")
    flags = {a.entry: a.preferred for a in await book.all()}
    assert flags == {"claude:a": False, "claude:b": True, "codex:c": True}
    chosen = await book.for_entry("claude")
    assert chosen is not None
    assert chosen.entry == "claude:b"
    named = await book.for_entry("claude:a")
    assert named is not None
    assert named.entry == "claude:a"
    assert await book.for_entry("claude:zzz") is None
    await book.set_preferred("claude", None)
    assert await book.for_entry("claude") is None
    assert (await book.for_entry("codex")) is not None
    with pytest.raises(AccountError, match="No account claude:zzz"):
        await book.set_preferred("claude", "zzz")


async def test_pause_and_resume(book: AccountBook) -> None:
    await book.add("claude", "work", None)
    await book.set_paused("claude", "work", True)
    account = await book.for_entry("claude:work")
    assert account is not None
    assert account.paused
    await book.set_paused("claude", "work", False)
    account = await book.get("claude", "work")
    assert account is not None
    assert not account.paused
    with pytest.raises(AccountError):
        await book.set_paused("codex", "nope", True)


def test_split_entry() -> None:
    assert split_entry("claude:work") == ("claude", "work")
    assert split_entry("codex") == ("codex", None)


# -- what a session's agent gets ----------------------------------------------------------

def fake_calls(log: Path, binary: str) -> list[dict[str, Any]]:
    """The fake CLI's logged invocations (argv, cwd, the credential digests it got)."""
    calls: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    return [c for c in calls if Path(c["argv"][0]).name == binary]


def digest(value: str) -> str:
    """How the fakes log a credential: a SHA-256 prefix, never the value."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


async def test_an_exported_key_does_not_override_a_cli_login_account(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-user-exported")
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-user-exported")
    work = folder(tmp_path, "claude-work")
    await engine.accounts.add("claude", "work", work)
    await engine.accounts.set_preferred("claude", "work")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="hi", chain=["claude"]))
    assert row.state == "completed", row.reason
    [call] = fake_calls(log, "claude")
    credentials = call["credentials"]
    assert credentials["ANTHROPIC_API_KEY"] is None
    assert credentials["CLAUDE_CODE_OAUTH_TOKEN"] is None
    # the bare entry ran with the preferred account's folder (the transcript went there)
    assert list((work / "projects").glob("*/*.jsonl"))


async def test_an_api_key_account_runs_with_its_own_key(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-user-exported")
    await engine.accounts.add("claude", "api", None, "api_key", KEY)
    row = await engine.run_session(SessionSpec(repo=git_repo, task="hi", chain=["claude:api"]))
    assert row.state == "completed", row.reason
    [call] = fake_calls(log, "claude")
    credentials = call["credentials"]
    assert credentials["ANTHROPIC_API_KEY"] == digest(KEY)


async def test_an_unregistered_label_still_runs_with_the_cli_login(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-user-exported")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="hi", chain=["claude:nope"]))
    assert row.state == "completed", row.reason
    notices = [r.event.message for r in await engine.session_events(row.id)
               if r.event.kind == "notice"]
    assert any("not a registered account" in n for n in notices)
    [call] = fake_calls(log, "claude")
    credentials = call["credentials"]  # the user's environment, untouched
    assert credentials["ANTHROPIC_API_KEY"] == digest("sk-ant-api03-user-exported")
