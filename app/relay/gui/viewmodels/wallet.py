"""WalletViewModel: every account with its windows, costs and budgets, kept fresh.

One row per account (:class:`~relay.wallet.model.AccountView`). The summary is
re-read every :attr:`WalletViewModel.REFRESH_MS` and soon after records that
change usage arrive from the bridge (a turn completed, a limit hit, a quota
update, a state change, a handoff step) — coalesced, so a burst of records costs
one read.
Once a scan of the transcripts has run, each timer tick first reads what the
CLIs appended since (an incremental refresh of the index, without the progress
bar: it costs milliseconds), so use outside Relay shows up too.

The plots' series (:class:`~relay.wallet.model.AccountHistory`) are read with the summary,
for the accounts whose plots are in sight only (:meth:`WalletViewModel.set_plotted`): a
hidden Wallet costs no series at all. ``historyChanged(entry)`` says one arrived.

User actions are intents here (test, log in, set as preferred, pause or resume,
add/edit, remove, rescan the transcripts); each runs through the bridge's
TaskRunner (context ``"wallet"``, whose failures the dock shows in place). The
transcript index refreshes in a worker thread; its ``progress(done, total)``
calls are posted to the GUI thread (at most one pending at a time).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)

from relay.core.events import EventRecord
from relay.engine.account_check import AccountCheck, LoginCommand, NoLogin
from relay.gui import login_launch
from relay.gui.bridge import EngineBridge
from relay.gui.wallet_backend import AccountForm, WalletBackend
from relay.wallet import present as wallet_text
from relay.wallet.model import AccountHistory, AccountView

CONTEXT = "wallet"
#: record kinds after which an account's usage (or its breaker: a handoff step) may have moved
USAGE_KINDS = frozenset({"turn_completed", "limit_hit", "quota_update", "state_changed",
                         "handoff_step"})

T = TypeVar("T")
Index = QModelIndex | QPersistentModelIndex
Launcher = Callable[[Sequence[str], Mapping[str, str], Collection[str]], login_launch.LoginLaunch]


@dataclass(frozen=True, slots=True)
class Note:
    """A line under one account: an answer to the user's last action on it."""

    text: str
    tone: Literal["ok", "error", "info"] = "info"
    #: a command to copy (selectable in the view), e.g. the login when no terminal opened
    command: str = ""


@dataclass(frozen=True, slots=True)
class ScanState:
    """The transcript index refresh as the dock's progress bar shows it."""

    running: bool = False
    done: int = 0
    total: int = 0
    #: what the last refresh did (or "")
    message: str = ""


class WalletViewModel(QAbstractListModel):
    """The accounts of the wallet as a list model, plus the scan's progress.

    Signals:
        changed(): notes, busy accounts or the first load changed (the dock re-reads).
        accountsChanged(): a fresh summary arrived (the tray's watermark check reads it).
        scanChanged(): the index refresh started, progressed or ended.
        historyChanged(entry): the plots' series of an account in sight arrived.
    """

    AccountRole = Qt.ItemDataRole.UserRole + 1
    EntryRole = Qt.ItemDataRole.UserRole + 2

    changed = Signal()
    accountsChanged = Signal()
    scanChanged = Signal()
    historyChanged = Signal(str)

    #: how often the summary is re-read while nothing happens
    REFRESH_MS = 10_000

    def __init__(self, bridge: EngineBridge, backend: WalletBackend,
                 parent: QObject | None = None, *,
                 launcher: Launcher = login_launch.launch,
                 clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._backend = backend
        self._launcher = launcher
        self._clock = clock
        self._accounts: list[AccountView] = []
        self._registered: set[str] = set()
        self._watermark = 1.0  # until the first read
        self._notes: dict[str, Note] = {}
        self._busy: set[str] = set()
        self._loaded = False
        self._scan = ScanState()
        self._read_task: asyncio.Task[None] | None = None
        self._dirty = False
        self._scanned = False  # a first scan ran: ticks may refresh the index quietly
        self._index_due = False
        self._posted: tuple[int, int] | None = None
        self._plotted: set[str] = set()
        self._histories: dict[str, AccountHistory] = {}
        self._timer = QTimer(self)
        self._timer.setInterval(self.REFRESH_MS)
        self._timer.timeout.connect(self._tick)
        bridge.records.connect(self.on_records)

    # -- reading ------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether a summary has been read at least once."""
        return self._loaded

    @property
    def watermark(self) -> float:
        """The host's watermark, as of the last read (1.0 before it)."""
        return self._watermark

    @property
    def scan(self) -> ScanState:
        return self._scan

    def now_ms(self) -> int:
        return self._clock()

    def accounts(self) -> list[AccountView]:
        return list(self._accounts)

    def account(self, entry: str) -> AccountView | None:
        row = self.row_of(entry)
        return None if row is None else self._accounts[row]

    def row_of(self, entry: str) -> int | None:
        for row, account in enumerate(self._accounts):
            if account.entry == entry:
                return row
        return None

    def is_registered(self, entry: str) -> bool:
        """In the account book (else a provider's default login or the demo's: no actions)."""
        return entry in self._registered

    def note(self, entry: str) -> Note | None:
        return self._notes.get(entry)

    def history(self, entry: str) -> AccountHistory | None:
        """The plots' series of ``entry`` as last read (None: not read yet)."""
        return self._histories.get(entry)

    def set_plotted(self, entry: str, shown: bool) -> None:
        """Whether ``entry``'s plots are in sight; coming into sight reads its series soon."""
        if shown and entry not in self._plotted:
            self._plotted.add(entry)
            self.refresh()
        elif not shown:
            self._plotted.discard(entry)

    def is_busy(self, entry: str) -> bool:
        """An action on this account is under way (its buttons wait)."""
        return entry in self._busy

    # -- refreshing ---------------------------------------------------------------------

    def start(self) -> None:
        """Read the summary now and every :attr:`REFRESH_MS` from now on."""
        self._timer.start()
        self.refresh()

    def stop(self) -> None:
        self._timer.stop()

    def refresh(self) -> None:
        """Re-read the summary soon (coalesced with a read under way)."""
        self._dirty = True
        if self._read_task is None or self._read_task.done():
            self._read_task = self._bridge.tasks.start(self._read(), context=CONTEXT)

    def _tick(self) -> None:
        if self._scanned and not self._scan.running:
            self._index_due = True
        self.refresh()

    async def _read(self) -> None:
        while self._dirty:
            self._dirty = False
            if self._index_due and not self._scan.running:
                self._index_due = False
                await self._backend.refresh_index(None)
            accounts = await self._backend.summary()
            self._registered = await self._backend.registered()
            self._watermark = await self._backend.watermark()
            self._apply(accounts)
            await self._read_histories({a.entry for a in accounts})

    async def _read_histories(self, entries: set[str]) -> None:
        for entry in sorted(self._plotted & entries):
            self._histories[entry] = await self._backend.history(entry)
            self.historyChanged.emit(entry)
        for gone in set(self._histories) - entries:
            del self._histories[gone]

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        """Live records: usage may have moved when a turn ends, a limit hits, a quota updates
        (only once :meth:`start` was called: a view-model not started stays idle)."""
        if self._timer.isActive() and any(r.event.kind in USAGE_KINDS for r in batch):
            self.refresh()

    def _apply(self, accounts: list[AccountView]) -> None:
        entries = [a.entry for a in accounts]
        if entries != [a.entry for a in self._accounts]:
            self.beginResetModel()
            self._accounts = accounts
            self._notes = {e: n for e, n in self._notes.items() if e in entries}
            self.endResetModel()
        else:
            old, self._accounts = self._accounts, accounts
            for row, (before, after) in enumerate(zip(old, accounts, strict=True)):
                if before != after:
                    self.dataChanged.emit(self.index(row), self.index(row))
        self._loaded = True
        self.accountsChanged.emit()
        self.changed.emit()

    # -- the transcript index -----------------------------------------------------------

    def rescan(self) -> None:
        """Refresh the transcript usage index off the GUI thread, showing its progress."""
        if self._scan.running:
            return
        self._set_scan(ScanState(running=True))
        self._bridge.tasks.start(self._rescan(asyncio.get_running_loop()), context=CONTEXT)

    async def _rescan(self, loop: asyncio.AbstractEventLoop) -> None:
        def progress(done: int, total: int) -> None:  # the index's worker thread
            posted, self._posted = self._posted, (done, total)
            if posted is None:  # otherwise the post under way will show the latest
                with contextlib.suppress(RuntimeError):  # a closed loop: the window is gone
                    loop.call_soon_threadsafe(self._show_progress)

        message = ""
        try:
            report = await self._backend.refresh_index(progress)
            message = wallet_text.report_text(report)
            self._scanned = True
        finally:
            self._posted = None
            self._set_scan(ScanState(message=message))
        self.refresh()

    def _show_progress(self) -> None:
        posted, self._posted = self._posted, None
        if posted is not None and self._scan.running:
            self._set_scan(ScanState(running=True, done=posted[0], total=posted[1]))

    def _set_scan(self, state: ScanState) -> None:
        self._scan = state
        self.scanChanged.emit()

    # -- intents ------------------------------------------------------------------------

    def test(self, entry: str) -> None:
        """"Does this account answer?" — the answer shows under it."""
        self._set_note(entry, Note("Testing…"))
        self._act(entry, self._backend.check(entry), on_done=lambda r: self._tested(entry, r))

    def log_in(self, entry: str) -> None:
        """Open the CLI's login for the account in a terminal (or show the command)."""
        self._act(entry, self._backend.login_command(entry),
                  on_done=lambda cmd: self._launch(entry, cmd))

    def set_preferred(self, entry: str) -> None:
        self._act(entry, self._backend.set_preferred(entry), refresh=True)

    def toggle_paused(self, entry: str) -> None:
        """Pause the account (no new work goes to it) or resume it."""
        account = self.account(entry)
        if account is not None:
            self._act(entry, self._backend.set_paused(entry, not account.paused), refresh=True)

    def remove(self, entry: str) -> None:
        self._act(entry, self._backend.remove(entry), refresh=True)

    def save(self, form: AccountForm) -> None:
        """Add an account or apply an edit (from the account dialog)."""
        entry = form.original or f"{form.provider}:{form.label}"
        self._act(entry, self._backend.save(form), refresh=True)

    def _act(self, entry: str, coro: Coroutine[Any, Any, T], *,
             on_done: Callable[[T], None] | None = None, refresh: bool = False) -> None:
        self._busy.add(entry)
        self.changed.emit()
        self._bridge.tasks.start(self._guarded(entry, coro, refresh), context=CONTEXT,
                                 on_done=on_done)

    async def _guarded(self, entry: str, coro: Coroutine[Any, Any, T], refresh: bool) -> T:
        try:
            return await coro
        except BaseException:
            self._notes.pop(entry, None)  # e.g. "Testing…": the error shows in the panel
            raise
        finally:
            self._busy.discard(entry)
            self.changed.emit()
            if refresh:
                self.refresh()

    def _tested(self, entry: str, check: AccountCheck) -> None:
        hint = f"\n→ {check.hint}" if check.hint and not check.ok else ""
        self._set_note(entry, Note(check.summary + hint, "ok" if check.ok else "error"))

    def _launch(self, entry: str, found: LoginCommand | NoLogin) -> None:
        if isinstance(found, NoLogin):
            hint = f"\n→ {found.hint}" if found.hint else ""
            self._set_note(entry, Note(f"Nothing to start: {found.reason}{hint}"))
            return
        opened = self._launcher(found.argv, found.env, found.unset)
        if opened.terminal:
            self._set_note(entry, Note(f"The login opened in {opened.terminal}. {found.how} "
                                       "Then press Test."))
        else:
            self._set_note(entry, Note(f"No terminal emulator was found: run this in a terminal. "
                                       f"{found.how} Then press Test.", command=opened.command))

    def _set_note(self, entry: str, note: Note) -> None:
        self._notes[entry] = note
        row = self.row_of(entry)
        if row is not None:
            self.dataChanged.emit(self.index(row), self.index(row))
        self.changed.emit()

    # -- QAbstractListModel -------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._accounts)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._accounts):
            return None
        account = self._accounts[index.row()]
        if role == self.AccountRole:
            return account
        if role in (self.EntryRole, Qt.ItemDataRole.DisplayRole):
            return account.entry
        return None
