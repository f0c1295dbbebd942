"""Secrets: the OS keyring first, an AES-256-GCM encrypted file where none is usable.

Provider API keys and Relay's contract-signing key live here and nowhere else: never in
the database, an export, the audit log, an envelope or a log line. Nothing in this module
logs, formats or shows a secret value (``repr`` included).

**Choosing the backend** (:meth:`Vault.open`). The keyring library's chosen backend is used
(service name ``"relay"``, one entry per name) unless it cannot keep secrets: keyring's
``fail`` and ``null`` backends, a ``chainer`` with nothing to chain, ``keyrings.alt``
(plain or weakly protected files, not an OS keyring), or a backend whose probe read
raises (a D-Bus session without a Secret Service, a locked collection without a prompt).
Then the vault is the encrypted file ``<home>/vault.bin``. ``PYTHON_KEYRING_BACKEND``
(keyring's own variable) forces a backend; ``keyring.backends.fail.Keyring`` forces the
file. The choice is made once per process and shown by :attr:`Vault.description`.
A data folder used both with and without a keyring sees two different vaults.

**The keyring cannot list** its entries, so the names (never the values) are kept in
``<home>/vault-index.json``: ``{"version": 1, "names": {"<service>": [names…]}}``.
The keyring is per user, not per data folder: two data folders share its entries.

**File layout** of ``vault.bin`` (format version 1; integers are single bytes)::

    offset  size  field
    0       4     magic b"RLYV"
    4       1     format version (1)
    5       1     scrypt log2(N)
    6       1     scrypt r
    7       1     scrypt p
    8       16    salt (random, fixed for the life of the file)
    24      16    passphrase check: SHA-256(scrypt output[32:64])[:16]
    40      12    nonce (random, new on every write)
    52      …     AES-256-GCM ciphertext of the payload + 16-byte tag;
                  the 52 header bytes are the associated data

The payload is UTF-8 JSON ``{"entries": {name: value}}``. scrypt derives 64 bytes from
the passphrase and salt: the first 32 are the AES key, the last 32 feed the check value,
which tells a wrong passphrase ("wrong passphrase") apart from a changed file ("damaged or
altered": the GCM tag fails). Default KDF parameters: N = 2**17, r = 8, p = 1 (128 MiB,
about 0.3 s; OWASP's minimum for scrypt); they are stored in the header, so they can be
raised later without a new format. Headers asking for more than N = 2**22 are refused.

**The passphrase** comes from ``RELAY_VAULT_PASSPHRASE`` or, when that is unset, from the
front end's ``passphrase_provider(creating)`` (``creating`` is True when the file does not
exist yet, so a front end can ask twice). It is asked for at the first use of the file,
not at :meth:`Vault.open`, and only the derived key is kept in memory.

Every write is atomic (temporary file + ``os.replace``, mode 0600) and happens under
``<home>/vault.lock`` so processes sharing a data folder never lose each other's writes or
create two signing keys. The vault is synchronous (keyring and scrypt block): async code
calls it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import struct
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

if sys.platform != "darwin":
    # keyring imports its macOS backend on every OS; off macOS that import spends ~90 ms in
    # ctypes.util.find_library (which runs ldconfig and gcc) only to fail and be ignored.
    # Marking the module absent gives the same outcome at once (the backend stays unusable).
    sys.modules.setdefault("keyring.backends.macOS.api", None)  # type: ignore[arg-type]  # None = absent

import keyring
import keyring.backend
import keyring.errors
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from keyring.backends import chainer, fail, null

from relay.core.config import Config
from relay.core.errors import VaultError
from relay.core.fsutil import FolderLock, write_atomic

log = logging.getLogger(__name__)

SERVICE = "relay"
SIGNING_KEY_NAME = "relay.signing-key"
PASSPHRASE_ENV = "RELAY_VAULT_PASSPHRASE"
VAULT_FILE = "vault.bin"
INDEX_FILE = "vault-index.json"
LOCK_FILE = "vault.lock"

#: Called with ``creating`` (no vault file yet); returns the passphrase or None to give up.
PassphraseProvider = Callable[[bool], str | None]


class GivenPassphrase:
    """A provider that answers the one passphrase someone gave (to check it against the
    vault file, or to create the file with it); its repr never shows it."""

    def __init__(self, passphrase: str) -> None:
        self._passphrase = passphrase

    def __repr__(self) -> str:
        return "GivenPassphrase(…)"

    def __call__(self, creating: bool) -> str | None:
        return self._passphrase

_MAGIC = b"RLYV"
_FORMAT = 1
_HEADER = struct.Struct(">4sBBBB16s16s12s")  # 52 bytes, see the module docstring
_TAG_LEN = 16
_MAX_LOG2_N = 22
_PROBE_NAME = "relay.vault-probe"
_PASSPHRASE_HINT = (f"Set {PASSPHRASE_ENV} to the passphrase the vault was created with "
                    "(or unlock an OS keyring).")


@dataclass(frozen=True)
class ScryptParams:
    """scrypt cost parameters for a new vault file (an existing file keeps its own)."""

    log2_n: int = 17
    r: int = 8
    p: int = 1

    def derive(self, passphrase: str, salt: bytes) -> bytes:
        """64 bytes: the AES-256 key, then the material of the passphrase check."""
        kdf = Scrypt(salt=salt, length=64, n=2 ** self.log2_n, r=self.r, p=self.p)
        return kdf.derive(passphrase.encode("utf-8"))


class _Store(Protocol):
    kind: Literal["keyring", "file"]

    def describe(self) -> str: ...
    def get(self, name: str) -> str | None: ...
    def put(self, name: str, value: str) -> None: ...
    def remove(self, name: str) -> None: ...
    def names(self) -> list[str]: ...


class Vault:
    """Named secrets (provider keys, the signing key) in the keyring or the encrypted file.

    Build one with :meth:`Vault.open`; names are short printable strings such as
    ``"account:claude:work"``; values are non-empty strings.
    """

    def __init__(self, store: _Store, lock: FolderLock) -> None:
        self._store = store
        self._lock = lock

    @classmethod
    def open(cls, config: Config, passphrase_provider: PassphraseProvider | None = None, *,
             env: Mapping[str, str] | None = None, kdf: ScryptParams | None = None,
             service: str = SERVICE) -> Vault:
        """Choose the backend for ``config.home`` (see the module docstring).

        Args:
            config: Where the data folder is.
            passphrase_provider: Asked for the file's passphrase when
                ``RELAY_VAULT_PASSPHRASE`` is not set (the CLI prompts on a terminal,
                the GUI shows a dialog).
            env: The environment to read ``RELAY_VAULT_PASSPHRASE`` from (default: os.environ).
            kdf: scrypt parameters for a new vault file (tests use cheap ones).
            service: The keyring service name.
        """
        home = config.home
        backend, reason = _choose_keyring(service)
        store: _Store
        if backend is not None:
            store = _KeyringStore(backend, service, home / INDEX_FILE)
        else:
            log.info("no usable OS keyring (%s): secrets go to the encrypted file %s",
                     reason, home / VAULT_FILE)
            source = _PassphraseSource(os.environ if env is None else env, passphrase_provider)
            store = _FileStore(home / VAULT_FILE, source, kdf or ScryptParams(), reason)
        return cls(store, FolderLock(home / LOCK_FILE))

    @property
    def backend(self) -> Literal["keyring", "file"]:
        """``"keyring"`` (the OS keyring) or ``"file"`` (the encrypted vault file)."""
        return self._store.kind

    @property
    def description(self) -> str:
        """One line for ``relay-cli doctor``: which backend, and why the file if it is."""
        return self._store.describe()

    def __repr__(self) -> str:
        return f"Vault({self._store.describe()!r})"

    def get(self, name: str) -> str | None:
        """The value stored under ``name``, or None."""
        return self._store.get(_check_name(name))

    def set(self, name: str, value: str) -> None:
        """Store ``value`` under ``name`` (replacing any previous value)."""
        _check_name(name)
        if not isinstance(value, str) or not value or "\x00" in value:
            raise VaultError(f"Cannot store {name!r}: the value must be a non-empty string "
                             "without NUL characters.")
        with self._lock.hold():
            self._store.put(name, value)
        log.debug("vault: stored %s", name)

    def delete(self, name: str) -> None:
        """Forget ``name`` (nothing happens if it is not stored)."""
        with self._lock.hold():
            self._store.remove(_check_name(name))
        log.debug("vault: deleted %s", name)

    def names(self) -> list[str]:
        """Every stored name, sorted (values are never listed)."""
        return sorted(self._store.names())

    def unlock(self) -> None:
        """Ask for the file's passphrase now rather than at first use (no-op for the keyring)."""
        self._store.names()

    def signing_key(self, *, create: bool = True) -> bytes:
        """Relay's 32-byte HMAC key for continuation contracts.

        Created from ``secrets.token_bytes(32)`` on first use and stored as hex under
        ``relay.signing-key``. With ``create=False`` a vault without one is a
        :class:`VaultError` (verifying needs the key that signed, not a fresh one).
        """
        stored = self._store.get(SIGNING_KEY_NAME)
        if stored is None and not create:
            raise VaultError("This vault holds no contract-signing key yet.",
                             "Contracts are verified with the vault of the data folder "
                             "that signed them: set RELAY_HOME (or --home) to it.")
        if stored is None:
            with self._lock.hold():  # another process may be creating it right now
                stored = self._store.get(SIGNING_KEY_NAME)
                if stored is None:
                    stored = secrets.token_bytes(32).hex()
                    self._store.put(SIGNING_KEY_NAME, stored)
                    log.info("vault: created the contract-signing key")
        try:
            key = bytes.fromhex(stored)
        except ValueError:
            key = b""
        if len(key) != 32:
            raise VaultError("The contract-signing key in the vault is damaged.",
                             f"Delete {SIGNING_KEY_NAME!r} from the vault to make a new one "
                             "(contracts signed with the old key will no longer verify).")
        return key


def _check_name(name: str) -> str:
    if (not isinstance(name, str) or not 0 < len(name) <= 200
            or not name.isprintable()):
        raise VaultError(f"Invalid vault entry name {name!r}: use 1-200 printable characters.")
    return name


# --- choosing the keyring ---------------------------------------------------------------

def _choose_keyring(service: str) -> tuple[keyring.backend.KeyringBackend | None, str]:
    """The keyring backend to use, or None and the reason there is none."""
    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # noqa: BLE001 — a broken keyringrc or backend import: keyring's own
        return None, f"keyring failed to load: {_short(exc)}"
    name = f"{type(backend).__module__}.{type(backend).__qualname__}"
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None, f"{name} cannot store secrets"
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None, "keyring's chainer has no backend to chain"
    if type(backend).__module__.startswith("keyrings.alt"):
        return None, f"{name} is not an OS keyring"
    try:
        backend.get_password(service, _PROBE_NAME)
    except Exception as exc:  # noqa: BLE001 — any backend failure means: not usable here
        return None, f"{name} does not work here ({_short(exc)})"
    return backend, name


def _short(exc: BaseException, mask: str = "") -> str:
    text = f"{type(exc).__name__}: {exc}"
    if mask:
        text = text.replace(mask, "…")
    return text if len(text) <= 200 else text[:199] + "…"


# --- the keyring store ------------------------------------------------------------------

class _KeyringStore:
    kind: Literal["keyring", "file"] = "keyring"

    def __init__(self, backend: keyring.backend.KeyringBackend, service: str, index: Path) -> None:
        self.backend = backend
        self.service = service
        self.index = index

    def __repr__(self) -> str:
        return f"_KeyringStore({self.describe()!r})"

    def describe(self) -> str:
        backend = type(self.backend)
        return f"OS keyring ({backend.__module__}.{backend.__qualname__}, service {self.service!r})"

    def get(self, name: str) -> str | None:
        try:
            value = self.backend.get_password(self.service, name)
        except Exception as exc:
            raise self._error("read", name, exc) from exc
        return value if isinstance(value, str) else None

    def put(self, name: str, value: str) -> None:
        try:
            self.backend.set_password(self.service, name, value)
        except Exception as exc:  # noqa: BLE001 — a third-party backend raises anything
            # A backend's message may quote what it was given: mask it, and chain nothing
            # a traceback could print.
            raise self._error("store", name, exc, mask=value) from None
        self._write_names(set(self.names()) | {name})

    def remove(self, name: str) -> None:
        try:
            self.backend.delete_password(self.service, name)
        except keyring.errors.PasswordDeleteError:
            pass  # not stored: deleting is idempotent
        except Exception as exc:
            raise self._error("delete", name, exc) from exc
        self._write_names(set(self.names()) - {name})

    def names(self) -> list[str]:
        return self._read_index().get(self.service, [])

    def _read_index(self) -> dict[str, list[str]]:
        try:
            raw = json.loads(self.index.read_bytes())
            names = raw["names"]
            if raw.get("version") != 1 or not isinstance(names, dict):
                raise ValueError("unexpected layout")
            return {str(k): [str(n) for n in v] for k, v in names.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise VaultError(f"The vault's name index {self.index} is unreadable ({_short(exc)}).",
                             "It holds names only, never secrets: delete it to start a new one "
                             "(stored keys stay in the keyring).") from exc

    def _write_names(self, names: set[str]) -> None:
        index = self._read_index()
        index[self.service] = sorted(names)
        data = json.dumps({"version": 1, "names": index}, sort_keys=True, indent=1).encode()
        try:
            write_atomic(self.index, data)
        except OSError as exc:
            raise VaultError(f"Cannot write the vault's name index {self.index}: {exc.strerror}.",
                             "Check the data folder's permissions and free space.") from exc

    def _error(self, action: str, name: str, exc: BaseException, mask: str = "") -> VaultError:
        return VaultError(f"The OS keyring refused to {action} {name!r} ({_short(exc, mask)}).",
                          "Unlock the keyring (log in to the desktop session) and try again.")


# --- the encrypted file store -----------------------------------------------------------

class _PassphraseSource:
    def __init__(self, env: Mapping[str, str], provider: PassphraseProvider | None) -> None:
        self._env = env
        self._provider = provider

    def __repr__(self) -> str:
        return "_PassphraseSource(…)"

    def get(self, *, creating: bool) -> str:
        passphrase = self._env.get(PASSPHRASE_ENV) or (
            self._provider(creating) if self._provider is not None else None)
        if not passphrase:
            raise VaultError("The vault file needs a passphrase and none was given.",
                             f"Set {PASSPHRASE_ENV}, or run Relay where an OS keyring is "
                             "available (a desktop session with a Secret Service).")
        return passphrase


class _FileStore:
    kind: Literal["keyring", "file"] = "file"

    def __init__(self, path: Path, source: _PassphraseSource, kdf: ScryptParams, reason: str) -> None:
        self.path = path
        self.reason = reason
        self._source = source
        self._kdf = kdf
        self._key: _Key | None = None  # of the file last read or written

    def __repr__(self) -> str:
        return f"_FileStore({str(self.path)!r})"

    def describe(self) -> str:
        return f"encrypted file {self.path} (no usable OS keyring: {self.reason})"

    def get(self, name: str) -> str | None:
        return self._load().get(name)

    def put(self, name: str, value: str) -> None:
        entries = self._load()
        entries[name] = value
        self._save(entries)

    def remove(self, name: str) -> None:
        entries = self._load()
        if entries.pop(name, None) is not None:
            self._save(entries)

    def names(self) -> list[str]:
        return list(self._load())

    def _load(self) -> dict[str, str]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise VaultError(f"Cannot read the vault file {self.path}: {exc.strerror}.",
                             "Check the data folder's permissions.") from exc
        return self._decrypt(data)

    def _decrypt(self, data: bytes) -> dict[str, str]:
        if len(data) < _HEADER.size + _TAG_LEN or data[:4] != _MAGIC:
            raise self._damaged("it is not a Relay vault file")
        _, version, log2_n, r, p, salt, check, nonce = _HEADER.unpack_from(data)
        if version != _FORMAT:
            raise VaultError(f"The vault file {self.path} has format {version}; this Relay "
                             f"reads format {_FORMAT}.", "Use the Relay build that wrote it.")
        if not (10 <= log2_n <= _MAX_LOG2_N and 1 <= r <= 32 and 1 <= p <= 16):
            raise self._damaged("its key-derivation parameters are out of range")
        key = self._key_for(ScryptParams(log2_n, r, p), salt, check)
        header = data[:_HEADER.size]
        try:
            plain = AESGCM(key.aes).decrypt(nonce, data[_HEADER.size:], header)
        except InvalidTag:
            raise self._damaged("its contents fail authentication") from None
        try:
            entries = json.loads(plain.decode("utf-8"))["entries"]
            if not isinstance(entries, dict) or not all(
                    isinstance(v, str) for v in entries.values()):
                raise ValueError("entries is not a mapping of strings")
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise self._damaged(f"its payload is malformed ({type(exc).__name__})") from None
        return {str(k): v for k, v in entries.items()}

    def _key_for(self, params: ScryptParams, salt: bytes, check: bytes | None) -> _Key:
        """The key for this header; ``check`` None means a new file (the passphrase is set)."""
        cached = self._key
        if cached is not None and (cached.params, cached.salt) == (params, salt):
            return cached
        derived = params.derive(self._source.get(creating=check is None), salt)
        key = _Key(params, salt, derived[:32], _check_value(derived))
        if check is not None and not hmac.compare_digest(key.check, check):
            raise VaultError(f"Wrong passphrase for the vault file {self.path}.", _PASSPHRASE_HINT)
        self._key = key
        return key

    def _save(self, entries: dict[str, str]) -> None:
        # put/remove load first, so the cached key is the current file's (or None: no file).
        key = self._key or self._key_for(self._kdf, secrets.token_bytes(16), None)
        nonce = secrets.token_bytes(12)
        header = _HEADER.pack(_MAGIC, _FORMAT, key.params.log2_n, key.params.r, key.params.p,
                              key.salt, key.check, nonce)
        payload = json.dumps({"entries": entries}, sort_keys=True, ensure_ascii=False).encode()
        blob = header + AESGCM(key.aes).encrypt(nonce, payload, header)
        try:
            write_atomic(self.path, blob, 0o600)
        except OSError as exc:
            raise VaultError(f"Cannot write the vault file {self.path}: {exc.strerror}.",
                             "Check the data folder's permissions and free space.") from exc

    def _damaged(self, why: str) -> VaultError:
        return VaultError(f"The vault file {self.path} is damaged or was altered: {why}.",
                          "Restore it from a backup, or move it away to start an empty vault "
                          "(the secrets in it are then lost).")


class _Key:
    """A derived key and the header fields it belongs to (never shown by repr)."""

    __slots__ = ("aes", "check", "params", "salt")

    def __init__(self, params: ScryptParams, salt: bytes, aes: bytes, check: bytes) -> None:
        self.params = params
        self.salt = salt
        self.aes = aes
        self.check = check

    def __repr__(self) -> str:
        return f"_Key({self.params})"


def _check_value(derived: bytes) -> bytes:
    return hashlib.sha256(derived[32:]).digest()[:16]


