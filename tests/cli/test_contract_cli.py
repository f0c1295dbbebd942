"""``relay-cli contract verify|show`` as a user runs it: a real subprocess and data folder.

The vault is the encrypted file (keyring's ``fail`` backend is forced in both processes,
so the developer's own keyring is never used) unlocked by RELAY_VAULT_PASSPHRASE.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

from relay.core.config import load_config
from relay.core.vault import Vault
from relay.sessions.contract import (
    ContractV2,
    FileEntry,
    canonical_json,
    render_markdown,
    write_envelope,
)

CLI = [sys.executable, "-m", "relay.cli.main"]
PASS = "cli test passphrase"
NO_KEYRING = "keyring.backends.fail.Keyring"


@pytest.fixture(autouse=True)
def no_os_keyring() -> Iterator[None]:
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    yield
    keyring.set_keyring(previous)


def cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "PYTHON_KEYRING_BACKEND": NO_KEYRING,
           "RELAY_VAULT_PASSPHRASE": PASS, **(env_extra or {})}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def no_traceback(proc: subprocess.CompletedProcess[str]) -> bool:
    return "Traceback" not in proc.stdout + proc.stderr


def contract() -> ContractV2:
    return ContractV2(
        contract_id="c-cli", session_id="s-cli", task_id="t-cli",
        task_goal="add refund flow [red]not markup[/]", next_action="Wire POST /orders/:id/refund",
        do_not_redo=["migration 0042 applied"], plan=["migration", "endpoint"],
        tasks_remaining=["endpoint"], acceptance_assertions=["unit tests pass"],
        file_manifest=[FileEntry(path="orders/refund.go", sha256="a" * 64)],
        snapshot_commit_sha="a3f8c2d")


@pytest.fixture
def envelope(tmp_path: Path) -> Path:
    """An envelope folder signed with the key in this test's RELAY_HOME vault."""
    key = Vault.open(load_config(), env={"RELAY_VAULT_PASSPHRASE": PASS}).signing_key()
    folder = tmp_path / "envelope"
    write_envelope(folder, contract(), key)
    return folder


def test_verify_accepts_an_untouched_envelope(envelope: Path) -> None:
    for target in (envelope, envelope / "envelope.json"):
        proc = cli("contract", "verify", str(target))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("OK signature valid · contract c-cli (v2)")
        assert "add refund flow [red]not markup[/]" in proc.stdout
        assert "Wire POST /orders/:id/refund" in proc.stdout
        assert "a3f8c2d" in proc.stdout
        assert "1 files · 1 acceptance checks · 1 do-not-redo · 1 tasks remaining" in proc.stdout


def test_verify_refuses_a_changed_byte(envelope: Path) -> None:
    path = envelope / "envelope.json"
    data = path.read_bytes()
    path.write_bytes(data.replace(b"Wire POST", b"Wire PUT "))
    proc = cli("contract", "verify", str(envelope))
    assert proc.returncode == 1
    assert "TAMPERED" in proc.stderr
    assert "does not match" in proc.stderr
    assert proc.stdout == ""
    assert no_traceback(proc)


def test_verify_refuses_a_changed_signature(envelope: Path) -> None:
    path = envelope / "envelope.json"
    obj = json.loads(path.read_bytes())
    obj["signature"] = "0" * 64
    path.write_bytes(canonical_json(obj))
    proc = cli("contract", "verify", str(path))
    assert proc.returncode == 1
    assert "TAMPERED" in proc.stderr
    assert no_traceback(proc)


def test_verify_refuses_a_contract_signed_elsewhere(envelope: Path, tmp_path: Path) -> None:
    other_home = tmp_path / "other-home"
    Vault.open(load_config(home=other_home), env={"RELAY_VAULT_PASSPHRASE": PASS}).signing_key()
    proc = cli("--home", str(other_home), "contract", "verify", str(envelope))
    assert proc.returncode == 1
    assert "another data folder" in proc.stderr


def test_show_prints_the_verified_markdown(envelope: Path) -> None:
    proc = cli("contract", "show", str(envelope))
    assert proc.returncode == 0, proc.stderr
    signed = json.loads((envelope / "envelope.json").read_bytes())
    assert proc.stdout == render_markdown(ContractV2.model_validate(signed))
    assert "- [ ] endpoint" in proc.stdout


def test_show_refuses_a_tampered_envelope(envelope: Path) -> None:
    path = envelope / "envelope.json"
    path.write_bytes(path.read_bytes() + b"\n")
    proc = cli("contract", "show", str(envelope))
    assert proc.returncode == 1
    assert "TAMPERED" in proc.stderr
    assert proc.stdout == ""


def test_missing_envelope_is_a_clear_error(tmp_path: Path) -> None:
    proc = cli("contract", "verify", str(tmp_path))
    assert proc.returncode == 2
    assert "No contract at" in proc.stderr
    assert no_traceback(proc)


def test_wrong_passphrase_is_a_clear_error(envelope: Path) -> None:
    proc = cli("contract", "verify", str(envelope), env_extra={"RELAY_VAULT_PASSPHRASE": "wrong"})
    assert proc.returncode == 2
    assert "Wrong passphrase" in proc.stderr
    assert "RELAY_VAULT_PASSPHRASE" in proc.stderr
    assert no_traceback(proc)


def test_no_passphrase_without_a_terminal_is_a_clear_error(envelope: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RELAY_VAULT_PASSPHRASE"}
    proc = subprocess.run([*CLI, "contract", "verify", str(envelope)], capture_output=True,
                          text=True, env={**env, "PYTHON_KEYRING_BACKEND": NO_KEYRING},
                          stdin=subprocess.DEVNULL, timeout=60, check=False)
    assert proc.returncode == 2
    # it says what it needs — this data folder's signing key, so the vault's passphrase —
    # and how to give it, before it stops
    first = " ".join(proc.stderr.split())
    assert first.startswith("error: Verifying a contract needs the signing key of this data "
                            "folder")
    assert "which needs the vault passphrase: no OS keyring here" in first
    assert "Set RELAY_VAULT_PASSPHRASE (or run this on a terminal to type it)" in first
    assert no_traceback(proc)


def test_a_demo_contract_is_never_called_verified_and_asks_for_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "demo-envelope"
    write_envelope(folder, contract().model_copy(update={"simulated": True}), b"d" * 32)
    env = {k: v for k, v in os.environ.items() if k != "RELAY_VAULT_PASSPHRASE"}
    for action in ("verify", "show"):
        proc = subprocess.run([*CLI, "contract", action, str(folder)], capture_output=True,
                              text=True, env={**env, "PYTHON_KEYRING_BACKEND": NO_KEYRING},
                              stdin=subprocess.DEVNULL, timeout=60, check=False)
        assert proc.returncode == 2
        said = " ".join(proc.stderr.split())
        assert said.startswith("error: This contract was signed with a throwaway demo key — a "
                               "simulation (relay-cli demo), not with a vault key, so it "
                               "cannot be verified.")
        assert "passphrase" not in said
        assert "OK" not in proc.stdout
        assert no_traceback(proc)


def test_a_vault_without_a_signing_key_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "env"
    write_envelope(folder, contract(), b"k" * 32)
    proc = cli("--home", str(tmp_path / "empty-home"), "contract", "verify", str(folder))
    assert proc.returncode == 2
    assert "no contract-signing key" in proc.stderr
    assert not (tmp_path / "empty-home" / "vault.bin").exists()  # verify never creates a key
