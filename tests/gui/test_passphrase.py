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
from relay.core.models import SessionSpec
from relay.core.vault import PASSPHRASE_ENV, ScryptParams, Vault
from relay.engine.engine import Engine
from relay.gui.passphrase import CREATE_TEXT, REPEAT_TEXT, PassphrasePrompter
from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner
from tests.gui.helpers import top_level_kinds

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


def test_a_demo_handoff_in_the_window_asks_nothing(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, arun: Runner,
        prompter: PassphrasePrompter, config: Config, git_repo: Path) -> None:
    make_vault(config)  # a vault the window would unlock at start — not for the demo
    dialogs: list[QInputDialog] = []
    prompter.prompted.connect(dialogs.append)
    engine = arun(Engine.open(load_config(demo_step_delay=0),
                              passphrase_provider=prompter.provider))
    shell = RelayShell(engine, prompter=prompter)
    try:
        shell.start(unlock_vault=False)  # as `relay --demo` starts it
        shell.start_session(SessionSpec(repo=git_repo, task="t",
                                        chain=["demo:primary", "demo:backup"],
                                        demo_limit_after=1))
        vm = shell.handoffs_vm
        qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done",
                        timeout=30_000)
        qtbot.waitUntil(lambda: shell.contract_vm.status == "simulated", timeout=10_000)
        qtbot.waitUntil(lambda: shell.bridge.tasks.pending == 0, timeout=10_000)
        assert dialogs == []  # signed with a throwaway demo key: the vault was never asked
    finally:
        arun(shell.aclose())
        arun(engine.close())


def test_a_real_handoff_chain_asks_before_it_starts_and_never_during_the_handoff(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, arun: Runner,
        prompter: PassphrasePrompter, config: Config, git_repo: Path, limit_then_codex: Path) -> None:
    answers = Answers(prompter, "pw", "pw")
    engine = arun(Engine.open(load_config(demo_step_delay=0),
                              passphrase_provider=prompter.provider))
    shell = RelayShell(engine, prompter=prompter)
    asked_before_start: list[list[str]] = []
    shell.bridge.sessionStarted.connect(lambda _sid: asked_before_start.append(
        list(answers.labels)))
    try:
        shell.start_session(SessionSpec(repo=git_repo, task="t", chain=["claude:a", "codex"]))
        vm = shell.handoffs_vm
        qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done",
                        timeout=30_000)
        qtbot.waitUntil(lambda: shell.contract_vm.status == "verified", timeout=10_000)
        # both questions came before the session existed; the handoff and the contract
        # check asked nothing more
        assert asked_before_start == [[CREATE_TEXT, REPEAT_TEXT]]
        assert answers.labels == [CREATE_TEXT, REPEAT_TEXT]
    finally:
        arun(shell.aclose())
        arun(engine.close())


def test_declining_the_passphrase_starts_nothing(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, arun: Runner,
        prompter: PassphrasePrompter, config: Config, git_repo: Path, limit_then_codex: Path) -> None:
    cancel = Answers(prompter, None)
    engine = arun(Engine.open(load_config(demo_step_delay=0),
                              passphrase_provider=prompter.provider))
    shell = RelayShell(engine, prompter=prompter)
    failures: list[tuple[str, str]] = []
    shell.bridge.tasks.failed.connect(lambda ctx, msg, _hint: failures.append((ctx, msg)))
    try:
        shell.start_session(SessionSpec(repo=git_repo, task="t", chain=["claude:a", "codex"]))
        qtbot.waitUntil(lambda: bool(failures), timeout=10_000)
        assert failures == [("sessions", "Nothing was started: This run can hand off between "
                             "accounts, and each handoff's contract is signed with the key in "
                             "Relay's vault, and the vault's passphrase was not given.")]
        assert cancel.labels == [CREATE_TEXT]
        assert arun(engine.list_sessions(10)) == []
        assert not limit_then_codex.exists()  # no agent ran
    finally:
        arun(shell.aclose())
        arun(engine.close())


def test_hand_off_now_passes_the_vault_gate_first(
        qloop: asyncio.AbstractEventLoop, qtbot: QtBot, arun: Runner, git_repo: Path) -> None:
    engine = arun(Engine.open(load_config(demo_step_delay=0.2)))
    shell = RelayShell(engine)
    gated: list[tuple[list[str], bool]] = []

    async def gate(entries: list[str], can_hand_off: bool) -> None:
        gated.append((entries, can_hand_off))

    try:
        with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
            shell.start_session(SessionSpec(repo=git_repo, task="t", runtime="demo"))
        assert started.args is not None
        qtbot.waitUntil(lambda: "tool_call" in top_level_kinds(shell.stream_vm), timeout=5000)
        shell.bridge.vault_gate = gate
        answers: list[str] = []
        shell.bridge.tasks.failed.connect(lambda _ctx, msg, _hint: answers.append(msg))
        shell.bridge.request_handoff(str(started.args[0]), "demo:other", on_done=answers.append)
        qtbot.waitUntil(lambda: bool(answers), timeout=10_000)
        assert answers[0].startswith("pausing at the next safe point"), answers
        assert gated == [(["demo", "demo:other"], True)]  # asked before the pause began
        qtbot.waitUntil(lambda: arun(engine.get_session(str(started.args[0]))).finished,
                        timeout=20_000)
    finally:
        arun(shell.aclose())
        arun(engine.close())
