"""DetectViewModel: the agent sessions on this machine as a table, one of them in detail,
and ambient mode's announcements.

One row per detected session (:class:`~relay.detect.model.DetectedSession`), in the
detector's order (live first, then the most recently active). The rows come from the
ambient watcher (:class:`~relay.detect.ambient.Ambient`), started with the window: every
:attr:`DetectViewModel.VISIBLE_S` seconds while the dock is visible, every
:attr:`DetectViewModel.HIDDEN_S` otherwise, and at once on demand (Rescan, Show all, the
dock shown). One scan feeds both the table and the watcher's :class:`~relay.detect.ambient.
Changes`, whose announcements (a new session, one that needs input, one blocked by a limit)
leave as :attr:`announced` for the tray. The detector reads only what changed since the
last scan, so a poll costs little.

User actions are intents here (adopt on a runtime/account, open the transcript); adopting
runs through the bridge's TaskRunner (context ``"detect"``, whose failures the dock shows in
place), and the answer shows under the session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QFont, QGuiApplication

from relay.core.events import EventRecord
from relay.detect import present as text
from relay.detect.ambient import Ambient, Announcement, Changes
from relay.detect.model import DetectedSession, DetectState
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.detect_backend import AdoptAnswer, DetectBackend, DetectScan
from relay.gui.runtime_choice import first_installed, installed_first, missing
from relay.gui.viewmodels.table import ColumnsModel, Index
from relay.runtimes.base import RuntimeInfo
from relay.wallet.present import UNKNOWN

CONTEXT = "detect"
COLUMNS = ("Runtime", "Repository", "State", "Age", "Usage", "Account", "Task")
_STATE_COLUMN = 2
_RIGHT_ALIGNED = (3, 4)
#: the session's first prompt, on one line (it tells eight sessions of one repository apart)
TASK_COLUMN = 6
TASK_CHARS = 160

#: a state's colour role (relay.gui.theme)
STATE_COLOURS: dict[DetectState, str] = {
    "working": "ACCENT", "needs_input": "WARNING", "blocked": "ERROR",
    "idle": "TEXT", "ended": "MUTED", "crashed": "ERROR", "unknown": "MUTED",
}
#: states that ask something of the user (shown in bold)
URGENT: frozenset[DetectState] = frozenset({"needs_input", "blocked"})
#: a state the session's hooks reported (exact), not one read from its transcript
HOOKED_NOTE = "Its state is what its hooks reported (exact), not read from its transcript."


def state_label(s: DetectedSession, now_ms: int) -> str:
    """The State cell and badge: the state, marked when its hooks reported it."""
    label = text.state_label(s, now_ms)
    return f"{label} · hooks" if s.hooked else label


#: sources that are an editor's database, not a transcript a viewer can open
DATABASE_SUFFIXES = frozenset({".vscdb", ".db", ".sqlite", ".sqlite3"})

#: ``opener(path)``: open a file in the desktop's viewer; False when it could not
Opener = Callable[[Path], bool]


def open_in_desktop(path: Path) -> bool:
    """The desktop's viewer for ``path`` (False without a desktop: offscreen, minimal)."""
    return open_url(QUrl.fromLocalFile(str(path)))


def open_url(url: str | QUrl) -> bool:
    """The desktop's handler for ``url`` (False without a desktop: offscreen, minimal)."""
    if QGuiApplication.platformName() in ("offscreen", "minimal"):
        return False
    return QDesktopServices.openUrl(QUrl(url))


@dataclass(frozen=True, slots=True)
class Note:
    """A line under the selected session: the answer to the user's last action on it."""

    text: str
    tone: Literal["ok", "error", "info"] = "info"
    #: a path to copy (selectable in the view), e.g. the transcript when no viewer opened
    path: str = ""


@dataclass(frozen=True, slots=True)
class ScanStatus:
    """What the dock's status line says about the scans."""

    scanning: bool = False
    #: a scan has answered at least once
    loaded: bool = False
    elapsed_s: float = 0.0
    #: what the last scan could not read, and why
    problems: tuple[str, ...] = ()


class DetectViewModel(ColumnsModel):
    """The detected sessions as a table, the selected one's detail, the watcher.

    Signals:
        changed(): the scan status, the selection, a note or a busy session changed.
        announced(Announcement): the watcher has something to tell (the tray shows it).
        adopted(str): a session was adopted; the id of the Relay session that continues it.
        targetsChanged(): the runtimes and accounts to adopt onto were (re)read.
    """

    SessionIdRole = Qt.ItemDataRole.UserRole + 1
    SessionRole = Qt.ItemDataRole.UserRole + 2

    COLUMNS = COLUMNS

    changed = Signal()
    announced = Signal(object)
    adopted = Signal(str)
    targetsChanged = Signal()

    #: seconds between scans while the dock is visible, and while it is not
    VISIBLE_S = 5.0
    HIDDEN_S = 15.0

    def __init__(self, bridge: EngineBridge, backend: DetectBackend,
                 parent: QObject | None = None, *, opener: Opener = open_in_desktop,
                 clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._backend = backend
        self._opener = opener
        self._clock = clock
        self._rows: list[DetectedSession] = []
        self._by_id: dict[str, DetectedSession] = {}
        self._status = ScanStatus()
        self._show_all = False
        self._selected: str | None = None
        #: id → (its last activity, the whole intent lifted on demand): a summary's detail
        self._lifted: dict[str, tuple[int | None, DetectedSession]] = {}
        self._lifting: set[str] = set()
        self._notes: dict[str, Note] = {}
        self._busy: set[str] = set()
        self._targets: list[str] = []
        #: what the doctor found (the installed runtimes are offered first)
        self._infos: list[RuntimeInfo] = []
        self._error: str | None = None
        self._ambient = Ambient(self._scan, self._announce, self.HIDDEN_S,
                                changes=Changes(clock=clock))
        self._watcher: asyncio.Task[None] | None = None
        self._once: asyncio.Task[None] | None = None
        self._again = False
        bridge.records.connect(self._on_records)

    # -- reading ------------------------------------------------------------------------

    @property
    def status(self) -> ScanStatus:
        return self._status

    @property
    def show_all(self) -> bool:
        return self._show_all

    @property
    def watching(self) -> bool:
        """Whether the ambient watcher runs."""
        return self._watcher is not None and not self._watcher.done()

    @property
    def interval(self) -> float:
        """Seconds between two scans now."""
        return self._ambient.interval

    def now_ms(self) -> int:
        return self._clock()

    def sessions(self) -> list[DetectedSession]:
        return list(self._rows)

    def session(self, session_id: str) -> DetectedSession | None:
        return self._by_id.get(session_id)

    def row_of(self, session_id: str) -> int | None:
        for row, s in enumerate(self._rows):
            if s.id == session_id:
                return row
        return None

    @property
    def selected_id(self) -> str | None:
        return self._selected

    def selected(self) -> DetectedSession | None:
        """The selected session as last scanned (None: none selected, or not listed), its
        whole intent lifted — a summary's is asked for when it is selected (on demand)."""
        s = self._by_id.get(self._selected) if self._selected else None
        if s is None or s.lifted:
            return s
        lifted = self._lifted.get(s.id)
        if lifted is not None and lifted[0] == s.last_activity_ms:
            return replace(s, intent=lifted[1].intent, lifted=lifted[1].lifted)
        self._lift(s)
        return s

    def _lift(self, s: DetectedSession) -> None:
        if s.id in self._lifting:
            return
        self._lifting.add(s.id)

        async def lift() -> None:
            try:
                whole = await self._backend.detail(s.id)
            except Exception:
                self._lifted[s.id] = (s.last_activity_ms, s)  # shown as it is, asked again
                raise                                         # once it changes
            finally:
                self._lifting.discard(s.id)
            self._lifted[s.id] = (s.last_activity_ms, whole)
            self.changed.emit()

        self._bridge.tasks.start(lift(), context=CONTEXT)

    def note(self, session_id: str) -> Note | None:
        return self._notes.get(session_id)

    def is_busy(self, session_id: str) -> bool:
        """An adoption of this session is under way."""
        return session_id in self._busy

    def targets(self) -> list[str]:
        """``runtime`` and ``runtime:account`` entries a session can be adopted onto, those
        on an installed runtime first."""
        return installed_first(self._targets, self._infos)

    def missing_runtimes(self) -> frozenset[str]:
        """The runtimes the doctor found missing here (an adoption onto them would fail)."""
        return missing(self._infos)

    def default_target(self, session_id: str) -> str | None:
        """An installed runtime of another provider than the session's own (a blocked Claude
        goes on on Codex), not the simulation unless nothing else is installed."""
        s = self.session(session_id)
        return first_installed(self.targets(), self.missing_runtimes(),
                               avoid=[s.runtime] if s is not None else [])

    def set_runtime_infos(self, infos: Sequence[RuntimeInfo]) -> None:
        """What the doctor found about each runtime."""
        self._infos = list(infos)
        self.targetsChanged.emit()

    # -- the watcher --------------------------------------------------------------------

    def start(self) -> None:
        """Start the ambient watcher (its first scan is the baseline: nothing is announced)
        and read where sessions can be adopted onto."""
        if not self.watching:
            self._watcher = self._bridge.tasks.start(self._ambient.run(), context=CONTEXT,
                                                     service=True)
        self.refresh_targets()

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    def refresh(self) -> None:
        """Scan now (the watcher's next look comes early; without a watcher, one scan)."""
        if self.watching:
            self._ambient.poke()
            return
        self._again = True
        if self._once is None or self._once.done():
            self._once = self._bridge.tasks.start(self._scan_until_fresh(), context=CONTEXT)

    def set_show_all(self, show_all: bool) -> None:
        """Every session found, or only those live or active in the last 24 hours."""
        if show_all != self._show_all:
            self._show_all = show_all
            self.refresh()

    def _on_records(self, batch: Sequence[EventRecord]) -> None:
        """A hooked session's live state changed: look now, not at the next poll (the scan
        reads only what changed, and the detector puts the hooks' exact state first)."""
        if any(r.event.kind == "live_state" for r in batch):
            self.refresh()

    def set_visible(self, visible: bool) -> None:
        """The dock was shown or hidden: scan often while it is seen (and at once when shown)."""
        self._ambient.interval = self.VISIBLE_S if visible else self.HIDDEN_S
        if visible:
            self.refresh()

    async def _scan_until_fresh(self) -> None:
        while self._again:
            self._again = False
            try:
                await self._scan()
            except Exception:  # noqa: BLE001 — reported in the dock by _scan; a later scan may do better
                return

    async def _scan(self) -> list[DetectedSession]:
        """One scan, applied to the table; what the watcher compares with the previous one."""
        self._set_status(scanning=True)
        try:
            scan = await self._backend.scan(self._show_all)
        except Exception as exc:
            self._failed(exc)
            raise
        finally:
            self._set_status(scanning=False)
        self._error = None
        self._apply(scan)
        return scan.sessions

    def _failed(self, exc: Exception) -> None:
        """Say it in the dock once per distinct failure (the watcher tries again)."""
        message = f"{type(exc).__name__}: {exc}"
        if message != self._error:
            self._error = message
            self._bridge.tasks.report(CONTEXT, exc)

    def _announce(self, announcement: Announcement) -> None:
        self.announced.emit(announcement)

    def _apply(self, scan: DetectScan) -> None:
        rows = list(scan.sessions)
        if [s.id for s in rows] != [s.id for s in self._rows]:
            self.beginResetModel()
            self._rows = rows
            self._by_id = {s.id: s for s in rows}
            self.endResetModel()
        else:
            self._rows = rows
            self._by_id = {s.id: s for s in rows}
            if rows:
                self.dataChanged.emit(self.index(0, 0),
                                      self.index(len(rows) - 1, len(COLUMNS) - 1))
        self._status = ScanStatus(False, True, scan.elapsed_s, tuple(scan.problems))
        self.changed.emit()

    def _set_status(self, *, scanning: bool) -> None:
        s = self._status
        self._status = ScanStatus(scanning, s.loaded, s.elapsed_s, s.problems)
        self.changed.emit()

    # -- intents ------------------------------------------------------------------------

    def select(self, session_id: str | None) -> None:
        """Show ``session_id`` in detail (also before a scan lists it: a tray click)."""
        if session_id != self._selected:
            self._selected = session_id
            self.changed.emit()

    def refresh_targets(self) -> None:
        """Re-read the runtimes and accounts a session can be adopted onto."""
        self._bridge.tasks.start(self._backend.targets(), context=CONTEXT,
                                 on_done=self._set_targets)

    def _set_targets(self, targets: list[str]) -> None:
        self._targets = list(targets)
        self.targetsChanged.emit()

    def adopt(self, session_id: str, to_entry: str, in_place: bool = False) -> None:
        """Continue the session on ``to_entry`` from a signed brief (a new Relay session)."""
        if session_id in self._busy:
            return
        where = " in place" if in_place else ""
        self._busy.add(session_id)
        self._set_note(session_id, Note(f"Adopting on {to_entry}{where}: writing the signed "
                                        "brief…"))
        self._bridge.tasks.start(self._adopting(session_id, to_entry, in_place),
                                 context=CONTEXT,
                                 on_done=lambda answer: self._adopted(session_id, answer))

    async def _adopting(self, session_id: str, to_entry: str, in_place: bool) -> AdoptAnswer:
        try:
            return await self._backend.adopt(session_id, to_entry, in_place)
        except BaseException:
            self._notes.pop(session_id, None)  # the error shows in the panel
            raise
        finally:
            self._busy.discard(session_id)
            self.changed.emit()

    def _adopted(self, session_id: str, answer: AdoptAnswer) -> None:
        self._set_note(session_id, Note(
            f"Adopted: Relay session {answer.session_id} continues it on {answer.to_entry} "
            "(selected in the Sessions list). The signed brief:", "ok", str(answer.contract_dir)))
        self.adopted.emit(answer.session_id)
        self.refresh()

    def open_transcript(self, session_id: str) -> None:
        """Open the session's transcript in the desktop's viewer, or show its path to copy."""
        s = self.session(session_id)
        if s is None:
            return
        path = s.source
        if path.suffix.lower() in DATABASE_SUFFIXES:
            self._set_note(session_id, Note("This session is kept in an editor's database, "
                                            "which has no viewer; its path:", path=str(path)))
        elif self._opener(path):
            self._set_note(session_id, Note("Opened the transcript in the desktop's viewer.",
                                            "ok"))
        else:
            self._set_note(session_id, Note("No desktop viewer could open the transcript; "
                                            "its path:", path=str(path)))

    def _set_note(self, session_id: str, note: Note) -> None:
        self._notes[session_id] = note
        self.changed.emit()

    # -- QAbstractTableModel ------------------------------------------------------------

    def row_total(self) -> int:
        return len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        s, col = self._rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cell(s, col)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(s)
        if role == Qt.ItemDataRole.ForegroundRole and col == _STATE_COLUMN:
            return theme.colour(STATE_COLOURS[s.state])
        if role == Qt.ItemDataRole.FontRole and col == _STATE_COLUMN and s.state in URGENT:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and col in _RIGHT_ALIGNED:
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        return {self.SessionIdRole: s.id, self.SessionRole: s}.get(role)

    def _cell(self, s: DetectedSession, col: int) -> str:
        now = self._clock()
        if col == 0:
            return text.runtime_name(s.runtime)
        if col == 1:
            return text.repository(s)
        if col == _STATE_COLUMN:
            return state_label(s, now)
        if col == 3:
            return text.age(s, now)
        if col == 4:
            return text.usage_short(s.usage)
        if col == TASK_COLUMN:
            return text.one_line(s.intent.initial_prompt, TASK_CHARS) or UNKNOWN
        return s.entry

    def _tooltip(self, s: DetectedSession) -> str:
        lines = [text.one_line(s.intent.initial_prompt) if s.intent.initial_prompt.strip()
                 else "(no prompt recorded)", "",
                 f"{s.id} · {s.entry}", f"in {text.where(s)}",
                 text.state_sentence(s, self._clock())]
        if s.hooked:
            lines.append(HOOKED_NOTE)
        if s.why:
            lines.append(s.why)
        lines.append(f"pid {s.process.pid}" if s.process else "no live process")
        return "\n".join(lines)
