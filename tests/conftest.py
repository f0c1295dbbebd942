"""Shared fixtures: an isolated RELAY_HOME, the recorded fixtures, fakes on PATH."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pygit2
import pytest

from tests.fakes.replay import fixtures_problem
from tests.fakes.replay import fixtures_root as fixtures_root  # re-exported for the tests

REPO_ROOT = Path(__file__).resolve().parents[1]
FAKES_DIR = Path(__file__).resolve().parent / "fakes"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    root = fixtures_root()
    problem = fixtures_problem(root)
    if problem:
        pytest.fail(problem, pytrace=False)
    return root


def pytest_configure(config: pytest.Config) -> None:
    """A missing or partial fixture folder stops the run with one line, before any test."""
    problem = fixtures_problem(fixtures_root())
    if problem:
        raise pytest.UsageError(problem)


@pytest.fixture(autouse=True)
def relay_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own data folder."""
    home = tmp_path / "relay-home"
    monkeypatch.setenv("RELAY_HOME", str(home))
    # the wallet counts only registered accounts' folders, never the developer's ~/.claude
    monkeypatch.setenv("RELAY_WALLET_DEFAULT_FOLDERS", "0")
    return home


@pytest.fixture
def vault_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encrypted-file vault (never the developer's own keyring), unlocked by env."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("RELAY_VAULT_PASSPHRASE", "test-vault-passphrase")


@pytest.fixture
def fakes_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put tests/fakes/bin first on PATH (fake claude, codex, … executables)."""
    bin_dir = FAKES_DIR / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    for name in ("CLAUDE", "CODEX", "GEMINI", "PI"):
        monkeypatch.delenv(f"RELAY_{name}_BIN", raising=False)
    return bin_dir


@pytest.fixture
def limit_then_codex(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real chain's fakes: claude hits its usage limit, codex answers. Returns the log the
    fakes append their calls to (absent while no agent has run)."""
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "f_usage_limit/run1_subscriber_five_hour")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    return log


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository with one commit on branch main."""
    path.mkdir(parents=True, exist_ok=True)
    repo = pygit2.init_repository(str(path), initial_head="main")
    for name, text in (files or {"README.md": "# demo\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    sig = pygit2.Signature("Relay Tests", "tests@relay.invalid")
    repo.create_commit("HEAD", sig, sig, "initial", tree, [])
    return path


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves a thread behind (an unclosed aiosqlite connection
    keeps a non-daemon thread alive and hangs the interpreter at exit)."""
    import threading

    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()
              and not t.daemon]
    for thread in leaked:
        thread.join(timeout=2.0)
    leaked = [t for t in leaked if t.is_alive()]
    assert not leaked, f"test leaked threads: {[t.name for t in leaked]}"


def wait_until(cond: Callable[[], bool], within: float = 10.0, what: str = "") -> None:
    """Bounded poll, used only for state nothing can signal us about (kernel process
    state, another process's database rows)."""
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)
