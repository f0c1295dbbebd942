"""WalletViewModel over an in-memory wallet: refreshes, the scan's progress, the intents."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace

import pytest
from pytestqt.qtbot import QtBot

from relay.core.events import EventRecord, LimitHit, Notice, TurnCompleted
from relay.engine.account_check import AccountCheck, NoLogin
from relay.engine.engine import Engine
from relay.gui.bridge import EngineBridge
from relay.gui.login_launch import LoginLaunch
from relay.gui.viewmodels.notifier import HandoffNotifier
from relay.gui.viewmodels.wallet import Note, WalletViewModel
from relay.gui.wallet_backend import AccountForm
from relay.wallet.model import AccountView
from relay.wallet.present import clock_ms
from tests.gui.conftest import Runner
from tests.gui.wallet_fakes import HOUR, NOW, SCAN_TEXT, FakeWallet, codex_key, refused, window, work


class Launches:
    """A launcher that records what it was asked to open."""

    def __init__(self, terminal: str | None = "gnome-terminal") -> None:
        self.terminal = terminal
        self.opened: list[tuple[list[str], dict[str, str], set[str]]] = []

    def __call__(self, argv: Sequence[str], env: Mapping[str, str],
                 unset: Collection[str]) -> LoginLaunch:
        self.opened.append((list(argv), dict(env), set(unset)))
        return LoginLaunch(self.terminal, "CLAUDE_CONFIG_DIR=/home/me/.claude-work claude auth login")


@pytest.fixture
def bridge(engine: Engine, arun: Runner) -> Iterator[EngineBridge]:
    bridge = EngineBridge(engine)
    yield bridge
    arun(bridge.aclose())


@pytest.fixture
def wallet() -> FakeWallet:
    return FakeWallet()


@pytest.fixture
def launches() -> Launches:
    return Launches()


@pytest.fixture
def vm(bridge: EngineBridge, wallet: FakeWallet, launches: Launches) -> Iterator[WalletViewModel]:
    vm = WalletViewModel(bridge, wallet, launcher=launches, clock=lambda: NOW)
    yield vm
    vm.stop()


def failures(bridge: EngineBridge) -> list[tuple[str, str, str]]:
    seen: list[tuple[str, str, str]] = []
    bridge.tasks.failed.connect(lambda c, m, h: seen.append((c, m, h)))
    return seen


def record(event: TurnCompleted | LimitHit | Notice, rid: int = 1) -> EventRecord:
    return EventRecord(rid, "s1", "r1", event)


def test_start_reads_the_accounts_into_rows(vm: WalletViewModel, qtbot: QtBot) -> None:
    assert vm.rowCount() == 0
    with qtbot.waitSignal(vm.accountsChanged, timeout=5000):
        vm.start()
    assert vm.loaded
    assert vm.rowCount() == 2
    assert [vm.index(r).data() for r in range(2)] == ["claude:work", "claude:personal"]
    account = vm.index(0).data(WalletViewModel.AccountRole)
    assert isinstance(account, AccountView)
    assert account == work()
    assert vm.row_of("claude:personal") == 1
    assert vm.account("nope:x") is None
    assert vm.watermark == 0.95


def test_usage_records_refresh_the_summary_once_per_burst(
        vm: WalletViewModel, wallet: FakeWallet, bridge: EngineBridge, qtbot: QtBot) -> None:
    bridge.records.emit([record(TurnCompleted())])  # not started yet: idle
    assert bridge.tasks.pending == 0
    vm.start()
    qtbot.waitUntil(lambda: vm.loaded and bridge.tasks.pending == 0, timeout=5000)
    assert wallet.summaries == 1

    bridge.records.emit([record(Notice(message="hello"))])  # not about usage
    assert bridge.tasks.pending == 0

    wallet.accounts = [codex_key()]
    with qtbot.waitSignal(vm.modelReset, timeout=5000):
        for i in range(5):  # a burst: one read under way, one more for the rest
            bridge.records.emit([record(TurnCompleted(), i)])
    qtbot.waitUntil(lambda: bridge.tasks.pending == 0, timeout=5000)
    assert wallet.summaries <= 3
    assert [a.entry for a in vm.accounts()] == ["codex:ci"]

    before = wallet.summaries
    bridge.records.emit([record(LimitHit(limit="usage_limit", message="limit"))])
    qtbot.waitUntil(lambda: wallet.summaries == before + 1 and bridge.tasks.pending == 0,
                    timeout=5000)


def test_a_changed_account_is_one_changed_row(vm: WalletViewModel, wallet: FakeWallet,
                                              bridge: EngineBridge, qtbot: QtBot) -> None:
    vm.refresh()
    qtbot.waitUntil(lambda: vm.loaded, timeout=5000)
    rows: list[int] = []
    vm.dataChanged.connect(lambda top, _bottom: rows.append(top.row()))
    wallet.accounts = [work(), replace(wallet.accounts[1], paused=False)]
    with qtbot.waitSignal(vm.accountsChanged, timeout=5000):
        vm.refresh()
    assert rows == [1]
    assert vm.account("claude:personal") is not None
    assert not vm.accounts()[1].paused


def test_the_timer_rereads_the_summary(bridge: EngineBridge, wallet: FakeWallet, qtbot: QtBot,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WalletViewModel, "REFRESH_MS", 30)
    vm = WalletViewModel(bridge, wallet)
    vm.start()
    qtbot.waitUntil(lambda: wallet.summaries >= 3, timeout=5000)
    assert wallet.scans == []  # no scan yet: a tick only re-reads the summary
    vm.rescan()
    qtbot.waitUntil(lambda: len(wallet.scans) >= 3, timeout=5000)  # then it reads appends too
    vm.stop()
    qtbot.waitUntil(lambda: bridge.tasks.pending == 0, timeout=5000)
    assert wallet.scans[0] is True  # the rescan shows its progress
    assert set(wallet.scans[1:]) == {False}  # the ticks' refreshes are quiet


def test_the_scan_runs_off_the_gui_thread_and_its_progress_arrives_on_it(
        vm: WalletViewModel, wallet: FakeWallet, bridge: EngineBridge, qtbot: QtBot) -> None:
    wallet.scan_gate = threading.Event()
    seen: list[tuple[bool, int, int, bool]] = []
    vm.scanChanged.connect(lambda: seen.append(
        (vm.scan.running, vm.scan.done, vm.scan.total,
         threading.get_ident() == threading.main_thread().ident)))
    vm.rescan()
    try:  # a failure must not leave the scan's thread waiting (it would outlive the test)
        assert vm.scan.running
        qtbot.waitUntil(lambda: vm.scan.done == 4, timeout=20_000)
        assert vm.scan.total == 8
        vm.rescan()  # already running: ignored
    finally:
        wallet.scan_gate.set()
    qtbot.waitUntil(lambda: not vm.scan.running, timeout=20_000)
    qtbot.waitUntil(lambda: bridge.tasks.pending == 0, timeout=20_000)

    assert len(wallet.scan_threads) == 1
    assert wallet.scan_threads[0] != threading.main_thread().ident
    assert all(on_gui for *_, on_gui in seen)
    done = [d for running, d, _t, _g in seen if running]
    assert done == sorted(done)
    assert vm.scan.message == SCAN_TEXT
    assert vm.loaded  # the summary is re-read after a scan


def test_a_failed_scan_ends_the_progress_and_reports(vm: WalletViewModel, wallet: FakeWallet,
                                                     bridge: EngineBridge, qtbot: QtBot) -> None:
    seen = failures(bridge)

    wallet.scan_error = refused()
    vm.rescan()
    qtbot.waitUntil(lambda: not vm.scan.running and bool(seen), timeout=5000)
    assert seen == [("wallet", "No account claude:gone.",
                     "List them with `relay-cli accounts list`.")]


def test_actions_call_the_wallet_and_reread_it(vm: WalletViewModel, wallet: FakeWallet,
                                               bridge: EngineBridge, qtbot: QtBot) -> None:
    vm.refresh()
    qtbot.waitUntil(lambda: vm.loaded, timeout=5000)
    vm.toggle_paused("claude:personal")
    assert vm.is_busy("claude:personal")
    qtbot.waitUntil(lambda: not vm.is_busy("claude:personal") and bridge.tasks.pending == 0,
                    timeout=5000)
    assert wallet.calls == [("set_paused", ("claude:personal", False))]
    assert not vm.accounts()[1].paused

    vm.set_preferred("claude:personal")
    qtbot.waitUntil(lambda: bridge.tasks.pending == 0 and vm.accounts()[1].preferred,
                    timeout=5000)
    assert not vm.accounts()[0].preferred

    vm.save(AccountForm("codex", "ci", None, "api_key", api_key="sk-test-123"))
    qtbot.waitUntil(lambda: vm.rowCount() == 3, timeout=5000)
    assert wallet.saved[-1].api_key == "sk-test-123"

    vm.remove("claude:work")
    qtbot.waitUntil(lambda: vm.rowCount() == 2 and bridge.tasks.pending == 0, timeout=5000)
    assert [a.entry for a in vm.accounts()] == ["claude:personal", "codex:ci"]


def test_test_shows_the_answer_under_the_account(vm: WalletViewModel, wallet: FakeWallet,
                                                 bridge: EngineBridge, qtbot: QtBot) -> None:
    vm.refresh()
    qtbot.waitUntil(lambda: vm.loaded, timeout=5000)
    vm.test("claude:work")
    note = vm.note("claude:work")
    assert note is not None
    assert note.text == "Testing…"
    qtbot.waitUntil(lambda: not vm.is_busy("claude:work"), timeout=5000)
    assert vm.note("claude:work") == Note("claude:work answers (claude-sonnet-4) in 1.2 s.", "ok")

    wallet.check_result = AccountCheck("claude:work", "auth", "Not logged in.",
                                       "Log in again: `relay-cli accounts login claude work`.")
    vm.test("claude:work")
    qtbot.waitUntil(lambda: not vm.is_busy("claude:work"), timeout=5000)
    note = vm.note("claude:work")
    assert note is not None
    assert (note.text, note.tone) == ("claude:work: Not logged in.\n→ Log in again: "
                                      "`relay-cli accounts login claude work`.", "error")


def test_an_error_goes_to_the_panel_and_frees_the_account(
        vm: WalletViewModel, wallet: FakeWallet, bridge: EngineBridge, qtbot: QtBot) -> None:
    seen = failures(bridge)
    vm.refresh()
    qtbot.waitUntil(lambda: vm.loaded, timeout=5000)
    wallet.fail_with = refused()
    vm.test("claude:work")
    qtbot.waitUntil(lambda: bool(seen), timeout=5000)
    assert seen == [("wallet", "No account claude:gone.",
                     "List them with `relay-cli accounts list`.")]
    assert not vm.is_busy("claude:work")
    assert vm.note("claude:work") is None  # no "Testing…" left behind


def test_log_in_opens_a_terminal_or_shows_the_command(
        vm: WalletViewModel, wallet: FakeWallet, launches: Launches, bridge: EngineBridge,
        qtbot: QtBot) -> None:
    wallet.accounts.append(codex_key())
    vm.refresh()
    qtbot.waitUntil(lambda: vm.rowCount() == 3, timeout=5000)
    vm.log_in("claude:work")
    qtbot.waitUntil(lambda: vm.note("claude:work") is not None, timeout=5000)
    assert launches.opened == [(["claude", "auth", "login"],
                                {"CLAUDE_CONFIG_DIR": "/home/me/.claude-work"},
                                {"ANTHROPIC_API_KEY"})]
    note = vm.note("claude:work")
    assert note is not None
    assert note.text == ("The login opened in gnome-terminal. Sign in in the browser that "
                         "opens. Then press Test.")
    assert not note.command

    launches.terminal = None
    vm.log_in("claude:work")
    qtbot.waitUntil(lambda: bool(getattr(vm.note("claude:work"), "command", "")), timeout=5000)
    note = vm.note("claude:work")
    assert note is not None
    assert note.text.startswith("No terminal emulator was found: run this in a terminal.")
    assert note.command == "CLAUDE_CONFIG_DIR=/home/me/.claude-work claude auth login"

    wallet.login = NoLogin("codex:ci signs in with an API key, not a login.", "Change its key.")
    vm.log_in("codex:ci")
    qtbot.waitUntil(lambda: vm.note("codex:ci") is not None, timeout=5000)
    assert vm.note("codex:ci") == Note("Nothing to start: codex:ci signs in with an API key, "
                                       "not a login.\n→ Change its key.")
    assert len(launches.opened) == 2


def test_the_tray_warns_once_per_window_past_the_watermark(bridge: EngineBridge,
                                                            qtbot: QtBot) -> None:
    notifier = HandoffNotifier(bridge)
    notes: list[tuple[str, str, bool]] = []
    notifier.notify.connect(lambda t, m, w: notes.append((t, m, w)))
    near = codex_key()  # 96 % used, resets in an hour
    notifier.on_wallet([work(), near], 0.95, NOW)
    notifier.on_wallet([work(), near], 0.95, NOW + 60_000)
    assert len(notes) == 1
    title, message, warning = notes[0]
    assert (title, warning) == ("Account near its limit", True)
    assert message.startswith(f"codex:ci: the 5-hour window is at 96% used, runs out "
                              f"~{clock_ms(NOW + 20 * 60_000)}, before the reset "
                              "(official · 2 min ago). It resets at ")
    assert message.endswith("(in 1h).")

    notifier.on_wallet([near], 0.95, NOW + HOUR + 1)  # the window reset: a new window
    assert len(notes) == 2

    # projected past the watermark counts too; an unknown reset warns again only after
    # the window fell back under the watermark
    projected = replace(work(), windows=[window(used=0.5, projected=0.97, resets_in=None)])
    calm = replace(work(), windows=[window(used=0.1, projected=0.2, resets_in=None)])
    for accounts in ([projected], [projected], [calm], [projected]):
        notifier.on_wallet(accounts, 0.95, NOW)
    assert len(notes) == 4
    assert "Its reset time is unknown." in notes[-1][1]


def test_a_window_at_its_wall_says_so(bridge: EngineBridge) -> None:
    notifier = HandoffNotifier(bridge)
    notes: list[str] = []
    notifier.notify.connect(lambda t, _m, _w: notes.append(t))
    notifier.on_wallet([replace(work(), windows=[window(used=1.0, projected=None)])], 0.95, NOW)
    assert notes == ["Account at its limit"]
