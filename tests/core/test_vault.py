"""The vault: the encrypted-file backend in full, the keyring branching, the real keyring.

The keyring is process-global, so every test here starts from keyring's ``fail`` backend
(restored afterwards) and never touches the developer's own keyring. The branching is
tested with an in-memory backend installed through ``keyring.set_keyring``. The real
Secret Service test runs only inside ``scripts/with-keyring.sh`` (a private D-Bus session
with a throwaway, unlocked gnome-keyring), which sets ``RELAY_REAL_KEYRING=1``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.core
import keyring.errors
import pytest
from keyring.backends import chainer, fail, null

from relay.core.accounts import AccountBook, key_name
from relay.core.config import Config, load_config
from relay.core.errors import VaultError
from relay.core.vault import INDEX_FILE, SIGNING_KEY_NAME, VAULT_FILE, ScryptParams, Vault
from relay.engine.engine import Engine

FAST = ScryptParams(log2_n=10, r=8, p=1)  # the file format is the same; only the cost differs
PASS = "correct horse battery staple"
ENV = {"RELAY_VAULT_PASSPHRASE": PASS}
SECRET = "sk-ant-api03-" + "Z" * 48


class MemoryKeyring(keyring.backend.KeyringBackend):
    """An OS keyring stand-in; priority < 0 so keyring's own detection never picks it."""

    priority = -1

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.items.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("not found")


class BrokenKeyring(MemoryKeyring):
    """A keyring that is there but does not work (D-Bus without a Secret Service)."""

    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringError("org.freedesktop.DBus.Error.ServiceUnknown")


class ReadOnlyKeyring(MemoryKeyring):
    """Reads work (the probe passes) but storing fails (a locked collection)."""

    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked(f"cannot store {password}")  # a careless backend


@pytest.fixture(autouse=True)
def no_os_keyring() -> Iterator[None]:
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def config() -> Config:
    return load_config()


def file_vault(config: Config, env: dict[str, str] | None = None) -> Vault:
    return Vault.open(config, env=ENV if env is None else env, kdf=FAST)


def assert_private(path: Path) -> None:
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --- the encrypted file -----------------------------------------------------------------

def test_file_backend_when_no_keyring_round_trips(config: Config) -> None:
    vault = file_vault(config)
    assert vault.backend == "file"
    assert "fail.Keyring" in vault.description
    assert vault.get("account:claude:work") is None
    vault.set("account:claude:work", SECRET)
    vault.set("account:codex", "other")
    vault.set("account:codex", "replaced")
    assert vault.get("account:claude:work") == SECRET
    assert vault.names() == ["account:claude:work", "account:codex"]
    again = file_vault(config)  # another process: only the file and the passphrase
    assert again.get("account:codex") == "replaced"
    again.delete("account:codex")
    again.delete("account:codex")  # idempotent
    assert vault.names() == ["account:claude:work"]
    assert vault.get("account:codex") is None


def test_file_is_private_and_holds_no_plaintext(config: Config) -> None:
    vault = file_vault(config)
    vault.set("account:claude:work", SECRET)
    path = config.home / VAULT_FILE
    assert_private(path)
    data = path.read_bytes()
    for plain in (SECRET.encode(), b"account:claude", PASS.encode(), b"entries"):
        assert plain not in data
    assert not (config.home / INDEX_FILE).exists()  # the file backend lists from the file


def test_file_header_layout(config: Config) -> None:
    file_vault(config).set("a", "b")
    data = (config.home / VAULT_FILE).read_bytes()
    assert data[:4] == b"RLYV"
    assert list(data[4:8]) == [1, FAST.log2_n, FAST.r, FAST.p]
    assert len(data) == 52 + len(b'{"entries": {"a": "b"}}') + 16


def test_default_kdf_parameters_are_written_to_the_header(config: Config) -> None:
    Vault.open(config, env=ENV).set("a", "b")
    assert list((config.home / VAULT_FILE).read_bytes()[4:8]) == [1, 17, 8, 1]
    assert file_vault(config).get("a") == "b"  # an existing file keeps its own parameters


def test_each_write_uses_a_new_nonce(config: Config) -> None:
    vault = file_vault(config)
    vault.set("a", "b")
    first = (config.home / VAULT_FILE).read_bytes()
    vault.set("a", "b")
    second = (config.home / VAULT_FILE).read_bytes()
    assert first[8:40] == second[8:40]  # same salt and check
    assert first[40:52] != second[40:52]


def test_wrong_passphrase_is_a_clear_error(config: Config, caplog: pytest.LogCaptureFixture) -> None:
    file_vault(config).set("k", SECRET)
    wrong = file_vault(config, {"RELAY_VAULT_PASSPHRASE": "not it"})
    with pytest.raises(VaultError, match="Wrong passphrase") as info:
        wrong.get("k")
    assert "RELAY_VAULT_PASSPHRASE" in (info.value.hint or "")
    assert SECRET not in str(info.value)
    assert file_vault(config).get("k") == SECRET  # nothing was damaged


@pytest.mark.parametrize(("where", "message"), [
    (60, "fail authentication"),         # the ciphertext
    (-1, "fail authentication"),         # the tag
    (45, "fail authentication"),         # the nonce (authenticated as associated data)
    (2, "not a Relay vault file"),       # the magic
    (4, "has format"),                   # the version byte
    (5, "out of range"),                 # scrypt N -> an absurd cost is refused, not run
])
def test_tampered_file_is_a_clear_error(config: Config, where: int, message: str) -> None:
    file_vault(config).set("k", SECRET)
    path = config.home / VAULT_FILE
    data = bytearray(path.read_bytes())
    data[where] ^= 0x40 if where == 5 else 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(VaultError, match=message) as info:
        file_vault(config).get("k")
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("content", [b"", b"RLYV", b"RLYV" + bytes(60), b"{}"])
def test_truncated_or_foreign_file_is_damaged(config: Config, content: bytes) -> None:
    config.home.mkdir(parents=True)
    (config.home / VAULT_FILE).write_bytes(content)
    with pytest.raises(VaultError, match="damaged"):
        file_vault(config).names()


def test_passphrase_provider_is_asked_once_and_told_when_creating(config: Config) -> None:
    calls: list[bool] = []

    def provider(creating: bool) -> str:
        calls.append(creating)
        return PASS

    vault = Vault.open(config, provider, env={}, kdf=FAST)
    assert vault.get("x") is None
    assert calls == []  # no file yet: nothing to unlock
    vault.set("x", "1")
    vault.set("y", "2")
    assert calls == [True]
    reopened = Vault.open(config, provider, env={}, kdf=FAST)
    reopened.unlock()
    assert reopened.names() == ["x", "y"]
    assert calls == [True, False]
    assert Vault.open(config, provider, env=ENV, kdf=FAST).get("y") == "2"
    assert calls == [True, False]  # the environment wins


def test_no_passphrase_is_a_clear_error(config: Config) -> None:
    vault = Vault.open(config, lambda creating: None, env={}, kdf=FAST)
    with pytest.raises(VaultError, match="needs a passphrase") as info:
        vault.set("x", "1")
    assert "RELAY_VAULT_PASSPHRASE" in (info.value.hint or "")
    assert not (config.home / VAULT_FILE).exists()


def test_failed_write_keeps_the_old_file(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = file_vault(config)
    vault.set("k", "old")
    before = (config.home / VAULT_FILE).read_bytes()
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        replaced.append((str(src), str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    vault.set("k", "new")
    (src, dst), = replaced
    assert Path(src).parent == Path(dst).parent == config.home
    assert Path(dst).name == VAULT_FILE
    assert_private(config.home / VAULT_FILE)

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    before = (config.home / VAULT_FILE).read_bytes()
    with pytest.raises(VaultError, match="No space left"):
        vault.set("k", "newer")
    assert (config.home / VAULT_FILE).read_bytes() == before
    assert leftovers(config.home) == []
    assert file_vault(config).get("k") == "new"


def test_signing_key_is_created_once_and_kept(config: Config) -> None:
    vault = file_vault(config)
    with pytest.raises(VaultError, match="no contract-signing key"):
        vault.signing_key(create=False)
    key = vault.signing_key()
    assert isinstance(key, bytes)
    assert len(key) == 32
    assert vault.signing_key() == key
    assert file_vault(config).signing_key(create=False) == key
    assert vault.get(SIGNING_KEY_NAME) == key.hex()


def test_damaged_signing_key_is_a_clear_error(config: Config) -> None:
    vault = file_vault(config)
    vault.set(SIGNING_KEY_NAME, "not hex")
    with pytest.raises(VaultError, match="damaged"):
        vault.signing_key()


def test_two_processes_creating_the_signing_key_agree(config: Config) -> None:
    vaults = [file_vault(config) for _ in range(4)]
    start = threading.Barrier(len(vaults))
    keys: list[bytes] = []

    def create(vault: Vault) -> None:
        start.wait()
        keys.append(vault.signing_key())

    threads = [threading.Thread(target=create, args=(v,)) for v in vaults]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 4
    assert len(set(keys)) == 1


@pytest.mark.parametrize("name", ["", "a\nb", "tab\there", "x" * 201])
def test_bad_names_are_refused(config: Config, name: str) -> None:
    with pytest.raises(VaultError, match="Invalid vault entry name"):
        file_vault(config).get(name)


@pytest.mark.parametrize("value", ["", "nul\x00inside"])
def test_bad_values_are_refused_without_echoing_them(config: Config, value: str) -> None:
    with pytest.raises(VaultError, match="non-empty string") as info:
        file_vault(config).set("k", value)
    assert "nul" not in str(info.value)


def test_secrets_never_appear_in_repr_or_logs(config: Config, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    vault = file_vault(config)
    vault.set("account:claude:work", SECRET)
    key = vault.signing_key()
    assert vault.get("account:claude:work") == SECRET
    shown = " ".join([repr(vault), str(vault), vault.description, repr(vault._store),
                      repr(vars(vault)), repr(vars(vault._store)), caplog.text])
    for secret in (SECRET, PASS, key.hex()):
        assert secret not in shown
    assert "account:claude:work" in caplog.text  # names may be logged


# --- the keyring branching (keyring's own test hook: set_keyring) -----------------------

def test_a_working_keyring_is_used_and_only_names_are_indexed(config: Config) -> None:
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    vault = Vault.open(config, env={})
    assert vault.backend == "keyring"
    assert "MemoryKeyring" in vault.description
    vault.set("account:claude:work", SECRET)
    vault.set("account:codex", "other")
    key = vault.signing_key()
    assert memory.items[("relay", "account:claude:work")] == SECRET
    assert memory.items[("relay", SIGNING_KEY_NAME)] == key.hex()
    assert vault.names() == ["account:claude:work", "account:codex", SIGNING_KEY_NAME]
    index = config.home / INDEX_FILE
    assert_private(index)
    text = index.read_text()
    assert SECRET not in text
    assert "other" not in text
    assert key.hex() not in text
    assert json.loads(text) == {"version": 1, "names": {"relay": [
        "account:claude:work", "account:codex", SIGNING_KEY_NAME]}}
    vault.delete("account:codex")
    vault.delete("never-stored")
    assert ("relay", "account:codex") not in memory.items
    assert Vault.open(config).names() == ["account:claude:work", SIGNING_KEY_NAME]
    assert not (config.home / VAULT_FILE).exists()


def test_keyring_service_name_is_configurable(config: Config) -> None:
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    Vault.open(config, service="relay-test").set("a", "b")
    assert memory.items == {("relay-test", "a"): "b"}
    assert Vault.open(config).names() == []


@pytest.mark.parametrize(("backend", "reason"), [
    (fail.Keyring(), "cannot store secrets"),  # type: ignore[no-untyped-call]
    (null.Keyring(), "cannot store secrets"),  # type: ignore[no-untyped-call]
    (BrokenKeyring(), "does not work here"),
])
def test_unusable_keyrings_fall_back_to_the_file(config: Config, backend: keyring.backend.KeyringBackend,
                                                 reason: str) -> None:
    keyring.set_keyring(backend)
    vault = file_vault(config)
    assert vault.backend == "file"
    assert reason in vault.description
    vault.set("a", "b")
    assert (config.home / VAULT_FILE).exists()


def test_an_empty_chainer_falls_back_to_the_file(config: Config,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chainer.ChainerBackend, "backends", [])
    keyring.set_keyring(chainer.ChainerBackend())  # type: ignore[no-untyped-call]
    vault = file_vault(config)
    assert vault.backend == "file"
    assert "chainer" in vault.description


def test_a_keyring_that_fails_later_is_an_error_not_a_silent_fallback(config: Config) -> None:
    keyring.set_keyring(ReadOnlyKeyring())
    vault = Vault.open(config)
    assert vault.backend == "keyring"
    with pytest.raises(VaultError, match="refused to store 'k'") as info:
        vault.set("k", SECRET)
    assert SECRET not in str(info.value)
    assert info.value.__cause__ is None  # no chained traceback could show it either
    assert "KeyringLocked" in info.value.message
    assert vault.names() == []
    assert not (config.home / VAULT_FILE).exists()


def test_a_damaged_index_is_a_clear_error(config: Config) -> None:
    keyring.set_keyring(MemoryKeyring())
    config.home.mkdir(parents=True)
    (config.home / INDEX_FILE).write_text("{not json")
    with pytest.raises(VaultError, match="name index"):
        Vault.open(config).names()


# --- the real Secret Service (scripts/with-keyring.sh) ----------------------------------

@pytest.mark.skipif(os.environ.get("RELAY_REAL_KEYRING") != "1",
                    reason="needs a Secret Service: run under scripts/with-keyring.sh")
def test_real_secret_service(config: Config) -> None:
    keyring.core.init_backend()  # keyring's own detection, as in a fresh process
    backend = keyring.get_keyring()
    assert type(backend).__module__ == "keyring.backends.SecretService", backend
    service = f"relay-test-{os.getpid()}"
    vault = Vault.open(config, env={}, service=service)
    assert vault.backend == "keyring"
    try:
        vault.set("account:claude:work", SECRET)
        key = vault.signing_key()
        assert Vault.open(config, env={}, service=service).signing_key(create=False) == key
        assert vault.get("account:claude:work") == SECRET
        assert vault.names() == ["account:claude:work", SIGNING_KEY_NAME]
        if shutil.which("secret-tool"):  # read it back through libsecret, not through keyring
            found = subprocess.run(["secret-tool", "lookup", "service", service, "username",
                                    "account:claude:work"], capture_output=True, text=True,
                                   check=True, timeout=30)
            assert found.stdout == SECRET
        for path in config.home.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert SECRET.encode() not in data
                assert key.hex().encode() not in data
        vault.delete("account:claude:work")
        assert vault.get("account:claude:work") is None
        assert keyring.get_password(service, "account:claude:work") is None
    finally:
        vault.delete("account:claude:work")
        vault.delete(SIGNING_KEY_NAME)


def _secret_tool(service: str, name: str) -> str | None:
    """The value libsecret itself finds (not read through keyring); None without secret-tool."""
    if not shutil.which("secret-tool"):
        return None
    found = subprocess.run(["secret-tool", "lookup", "service", service, "username", name],
                           capture_output=True, text=True, check=False, timeout=30)
    return found.stdout


@pytest.mark.skipif(os.environ.get("RELAY_REAL_KEYRING") != "1",
                    reason="needs a Secret Service: run under scripts/with-keyring.sh")
async def test_real_secret_service_keeps_an_accounts_api_key(config: Config) -> None:
    keyring.core.init_backend()
    assert type(keyring.get_keyring()).__module__ == "keyring.backends.SecretService"
    service = f"relay-test-accounts-{os.getpid()}"
    engine = await Engine.open(config)
    book = AccountBook(engine.store, engine.writer,
                       lambda: Vault.open(config, env={}, service=service))
    old, new = key_name("claude", "work"), key_name("claude", "main")
    try:
        account = await book.add("claude", "work", None, "api_key", SECRET)
        assert account.has_key is True
        assert keyring.get_password(service, old) == SECRET
        assert _secret_tool(service, old) in (SECRET, None)
        assert await book.agent_env(account) == {"ANTHROPIC_API_KEY": SECRET}
        assert [(a.entry, a.has_key) for a in await book.all()] == [("claude:work", True)]
        renamed = await book.edit("claude", "work", new_label="main")
        assert keyring.get_password(service, new) == SECRET
        assert keyring.get_password(service, old) is None
        await engine.writer.flush()
        for path in config.home.rglob("*"):  # the database, its WAL, the name index…
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
        index = json.loads((config.home / INDEX_FILE).read_text())
        assert index["names"][service] == [new]  # names only
        await book.remove("claude", renamed.label)
        assert keyring.get_password(service, new) is None
        assert _secret_tool(service, new) in ("", None)
    finally:
        for name in (old, new):
            with contextlib.suppress(keyring.errors.PasswordDeleteError):
                keyring.delete_password(service, name)
        await engine.close()


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS does use its Keychain backend")
def test_choosing_a_keyring_runs_no_library_search_off_macos() -> None:
    """keyring's macOS backend would run ldconfig and gcc (ctypes.util.find_library) on every
    start of every command that touches the vault, only to be ignored off macOS."""
    probe = ("import ctypes.util, sys\n"
             "calls = []\n"
             "real = ctypes.util.find_library\n"
             "ctypes.util.find_library = lambda name: calls.append(name) or real(name)\n"
             "import relay.core.vault, keyring\n"
             "keyring.get_keyring()\n"
             "print(calls)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_KEYRING_BACKEND"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env=env).stdout
    assert out.strip() == "[]"
