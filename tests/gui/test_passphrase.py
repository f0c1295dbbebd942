"""The vault passphrase asked in the window: from worker threads, checked, asked once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import shiboken6
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QInputDialog
from pytestqt.qtbot import QtBot

from relay.core.config import Config, load_config
from relay.core.engine import Engine
from relay.core.models import SessionSpec
from relay.core.vault import PASSPHRASE_ENV, ScryptParams, Vault
from relay.gui.passphrase import CREATE_TEXT, REPEAT_TEXT, PassphrasePrompter
from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner

CHEAP = ScryptParams(log2_n=10)


@pytest.fixture
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encrypted-file vault, and no passphrase in the environment."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.delenv(PASSPHRASE_ENV, raising=False)


@pytest.fixture
def config(no_keyring: None, relay_home: Path) -> Config:
    return load_config()


@pytest.fixture
def prompter(qloop: asyncio.AbstractEventLoop, config: Config) -> Iterator[PassphrasePrompter]:
    made = PassphrasePrompter(config)
    yield made
    made.close()


def make_vault(config: Config, passphrase: str = "right") -> None:
    Vault.open(config, lambda _creating: passphrase, env={}, kdf=CHEAP).signing_key()


class Answers:
    """Answers each dialog the prompter opens with the next text (None: cancel)."""

    def __init__(self, prompter: PassphrasePrompter, *answers: str | None) -> None:
        self.answers = list(answers)
        self.labels: list[str] = []
        prompter.prompted.connect(self._answer)

    def _answer(self, dialog: QInputDialog) -> None:
        self.labels.append(dialog.labelText())
        answer = self.answers.pop(0)

        def reply() -> None:
            if answer is None:
                dialog.reject()
            else:
                dialog.setTextValue(answer)
                dialog.accept()

        QTimer.singleShot(0, reply)


def ask(qloop: asyncio.AbstractEventLoop, qtbot: QtBot, prompter: PassphrasePrompter,
        creating: bool = False) -> str | None:
    """Call the provider from a worker thread, as the vault does, while Qt keeps running."""
    task = qloop.create_task(asyncio.to_thread(prompter.provider, creating))
    qtbot.waitUntil(task.done, timeout=10_000)
    return task.result()


def test_a_wrong_passphrase_is_asked_again_then_kept(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, prompter: PassphrasePrompter,
        config: Config) -> None:
    make_vault(config)
    answers = Answers(prompter, "wrong", "right")
    assert ask(qloop, qtbot, prompter) == "right"
    assert len(answers.labels) == 2
    assert answers.labels[1].startswith("Wrong passphrase for the vault file")
    assert ask(qloop, qtbot, prompter) == "right"  # kept: no third dialog
    assert len(answers.labels) == 2


def test_a_new_vault_asks_twice_and_cancelling_gives_none(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, prompter: PassphrasePrompter,
        config: Config) -> None:
    answers = Answers(prompter, "one", "two", "new", "new")
    assert ask(qloop, qtbot, prompter, creating=True) == "new"
    assert answers.labels[0] == CREATE_TEXT
    assert answers.labels[1] == REPEAT_TEXT
    assert answers.labels[2].startswith("The two passphrases differ.")

    other = PassphrasePrompter(config)
    try:
        cancel = Answers(other, None)
        assert ask(qloop, qtbot, other) is None
        assert len(cancel.labels) == 1
    finally:
        other.close()


def test_closing_releases_a_waiting_thread(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, prompter: PassphrasePrompter,
        config: Config) -> None:
    make_vault(config)
    dialogs: list[QInputDialog] = []
    prompter.prompted.connect(dialogs.append)
    task = qloop.create_task(asyncio.to_thread(prompter.provider, False))
    qtbot.waitUntil(lambda: bool(dialogs), timeout=5000)
    assert dialogs[0].isVisible()
    prompter.close()
    qtbot.waitUntil(task.done, timeout=5000)
    assert task.result() is None
    qtbot.waitUntil(lambda: not shiboken6.isValid(dialogs[0]), timeout=1000)  # closed, deleted


def test_on_the_gui_thread_it_never_blocks(prompter: PassphrasePrompter,
                                          config: Config) -> None:
    make_vault(config)
    dialogs: list[QInputDialog] = []
    prompter.prompted.connect(dialogs.append)
    assert prompter.provider(False) is None
    assert dialogs == []


def test_it_asks_up_front_only_when_a_vault_file_needs_it(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, arun: Runner,
        prompter: PassphrasePrompter, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    assert arun(prompter.unlock_early()) is False  # no vault file yet: nothing to ask
    make_vault(config)
    answers = Answers(prompter, "right")
    assert arun(prompter.unlock_early()) is True
    assert len(answers.labels) == 1
    monkeypatch.setenv(PASSPHRASE_ENV, "right")
    assert not PassphrasePrompter(config).needs_prompt()


def test_a_handoff_in_the_window_asks_for_the_new_vault_once(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, arun: Runner,
        prompter: PassphrasePrompter, config: Config, git_repo: Path) -> None:
    answers = Answers(prompter, "pw", "pw")
    engine = arun(Engine.open(load_config(demo_step_delay=0),
                              passphrase_provider=prompter.provider))
    shell = RelayShell(engine, prompter=prompter)
    try:
        shell.start_session(SessionSpec(repo=git_repo, task="t",
                                        chain=["demo:primary", "demo:backup"],
                                        demo_limit_after=1))
        vm = shell.handoffs_vm
        qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done",
                        timeout=30_000)
        qtbot.waitUntil(lambda: shell.contract_vm.status == "verified", timeout=10_000)
        assert answers.labels == [CREATE_TEXT, REPEAT_TEXT]  # the contract check asked no more
    finally:
        arun(shell.aclose())
        arun(engine.close())
