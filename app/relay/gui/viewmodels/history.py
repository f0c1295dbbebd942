"""HistoryViewModel: the shown session's timeline, the diff picked in it, and the actions on it.

It follows the session the window shows (:meth:`follow`) and reads it from a
:class:`~relay.gui.history_backend.HistoryBackend` only while the dock is in sight
(:meth:`set_active`): the timeline (a tree model of
:func:`~relay.gui.history_text.timeline_nodes`), then the diff of the node picked
(a commit's, a stint's or the whole session's) and the review comments on the
commit that diff is about. Records of that session that change its story (a run
ending, a handoff step, a check, a comment sent) re-read it, coalesced; the
selection stays, and a diff that can still change (the session's, a stint's) is
re-read too. Rewind, Continue from here, comments and finishing are intents that
run through the bridge's task runner: their errors reach the dock (context
``"history"``), their answers :attr:`message`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QStandardItem, QStandardItemModel

from relay.core.events import EventRecord
from relay.core.states import FINAL_STATES
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.event_text import plain_tooltip
from relay.gui.history_backend import FinishAction, HistoryBackend, Side
from relay.gui.history_text import (
    DiffSource,
    Node,
    Tone,
    comment_sha,
    short,
    source_title,
    timeline_nodes,
)
from relay.history.diffmodel import FileDiff
from relay.history.model import FinishResult, ReviewComment, RewindResult, Timeline

CONTEXT = "history"
#: record kinds after which a session's timeline is worth reading again
REFRESH_KINDS = frozenset({"session_started", "session_ended", "state_changed", "handoff_step",
                           "verify_result", "notice", "turn_completed"})
#: a tone's colour role (relay.gui.theme)
TONE_COLOURS = {"ok": "OK", "error": "ERROR", "warning": "WARNING",
                "muted": "MUTED", "accent": "ACCENT", "": "TEXT"}
#: an item's tone (see _ToneItem)
_TONE_ROLE = int(Qt.ItemDataRole.UserRole) + 7


class _ToneItem(QStandardItem):
    """A timeline item whose text takes its tone's colour when painted (light or dark)."""

    def data(self, role: int = int(Qt.ItemDataRole.UserRole) + 1) -> Any:
        if role == Qt.ItemDataRole.ForegroundRole:
            return theme.colour(TONE_COLOURS.get(str(super().data(_TONE_ROLE) or ""), "TEXT"))
        return super().data(role)


class HistoryViewModel(QObject):
    """See the module documentation.

    Signals:
        timelineChanged(): the tree was rebuilt (:attr:`selected_key` says what to select).
        diffChanged(): :attr:`files` hold the diff of the node picked.
        commentsChanged(): :attr:`comments` changed (their lines or states).
        changed(): the header, the message or what the actions may do changed.
        summaryReady(object): the :class:`FinishSummary` "Finish…" asked for.
        sessionRequested(str): Continue from here started this session: show it.
    """

    KeyRole = int(Qt.ItemDataRole.UserRole) + 1
    REFRESH_MS = 400

    timelineChanged = Signal()
    diffChanged = Signal()
    commentsChanged = Signal()
    changed = Signal()
    summaryReady = Signal(object)
    sessionRequested = Signal(str)

    def __init__(self, bridge: EngineBridge, backend: HistoryBackend,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge, self._backend = bridge, backend
        self.model = QStandardItemModel(self)
        self._session_id: str | None = None
        self._timeline: Timeline | None = None
        self._nodes: dict[str, Node] = {}
        self._selected = "session"
        self._source: DiffSource | None = None
        self._files: list[FileDiff] = []
        self._comments: list[ReviewComment] = []
        self._message: tuple[str, Tone] = ("", "")
        #: the session Continue from here started (its message stays when it is shown)
        self._continued: str | None = None
        self._active = False
        self._stale = False
        self._stopped = False
        self._rebuilding = False
        self._generation = 0
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(self.REFRESH_MS)
        self._refresh_timer.timeout.connect(self.refresh)
        bridge.records.connect(self.on_records)

    # -- reading ------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._session_id

    @property
    def active(self) -> bool:
        """Whether the dock is in sight (only then is anything read)."""
        return self._active

    @property
    def timeline(self) -> Timeline | None:
        return self._timeline

    @property
    def files(self) -> list[FileDiff]:
        return self._files

    @property
    def comments(self) -> list[ReviewComment]:
        return self._comments

    @property
    def selected_key(self) -> str:
        return self._selected

    def node(self, key: str) -> Node | None:
        return self._nodes.get(key)

    @property
    def message(self) -> tuple[str, Tone]:
        """The last answer (a branch made, a session started, a merge) and its tone."""
        return self._message

    @property
    def source(self) -> DiffSource | None:
        """Which diff is shown (or being read)."""
        return self._source

    @property
    def diff_title(self) -> str:
        if self._timeline is None or self._source is None:
            return ""
        return source_title(self._source, self._timeline)

    @property
    def rewind_sha(self) -> str | None:
        """The commit "Rewind here" and "Continue from here" would start from."""
        node = self._nodes.get(self._selected)
        return node.rewind_sha if node is not None else None

    @property
    def finished_on(self) -> str | None:
        """A finished session's last chain entry (a comment sent now runs it again)."""
        line = self._timeline
        if line is None or line.state not in FINAL_STATES:
            return None
        return line.stints[-1].entry if line.stints else "its agent"

    @property
    def can_finish(self) -> bool:
        return self.why_not_finish is None

    @property
    def why_not_finish(self) -> str | None:
        """Why "Finish…" cannot be used now (None: it can)."""
        line = self._timeline
        if line is None:
            return "The session is still being read"
        if line.branch is None:
            return "The session ran in place: its changes are already in the repository"
        if line.state not in FINAL_STATES:
            return "The session has to finish first"
        if line.merged:
            return (f"Already merged into {line.base_branch}: {line.branch} has nothing "
                    "more to finish")
        return None

    # -- following ----------------------------------------------------------------------

    def follow(self, session_id: str | None) -> None:
        """Show ``session_id`` (the window's selected session); None clears."""
        if session_id == self._session_id or self._stopped:
            return
        self._session_id, self._timeline, self._source = session_id, None, None
        self._nodes, self._selected, self._files, self._comments = {}, "session", [], []
        if session_id != self._continued:
            self._message = ("", "")
        self._continued = None
        self._generation += 1
        self.model.clear()
        self.timelineChanged.emit()
        self.diffChanged.emit()
        self.commentsChanged.emit()
        self.changed.emit()
        self._stale = True
        if self._active and session_id is not None:
            self.refresh()

    def stop(self) -> None:
        """Read nothing more (the window is closing)."""
        self._refresh_timer.stop()
        if self._session_id is not None or self._active or self._stale:
            self._generation += 1  # answers still on their way are dropped
        self._active = self._stale = False
        self._session_id = None
        self._stopped = True

    def set_active(self, active: bool) -> None:
        """Read only while in sight; a session shown while hidden is read when shown."""
        self._active = active and not self._stopped
        if active and self._stale:
            self.refresh()

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        """Live records: a change to the shown session's story reads it again (coalesced)."""
        if self._session_id is None or not any(
                r.session_id == self._session_id and r.event.kind in REFRESH_KINDS for r in batch):
            return
        if self._active:
            self._refresh_timer.start()
        else:
            self._stale = True

    def refresh(self) -> None:
        """Read the timeline again (then the diff shown, when it may have changed)."""
        session_id = self._session_id
        if session_id is None:
            return
        self._stale = False
        generation = self._generation
        self._bridge.tasks.start(self._backend.timeline(session_id), context=CONTEXT,
                                 on_done=lambda line: self._on_timeline(generation, line))

    def _on_timeline(self, generation: int, line: Timeline) -> None:
        if generation != self._generation:
            return  # another session was picked meanwhile
        self._timeline = line
        self._build(timeline_nodes(line))
        if self._selected not in self._nodes:
            self._selected = "session"
        self.timelineChanged.emit()
        self.changed.emit()
        node = self._nodes[self._selected]
        if node.source != self._source or node.source.kind != "commit":
            self._load(node.source)  # a new pick, or a diff that may have grown
        else:  # a commit's diff stays as it is; its comments' states may not
            self._reload_comments()

    def _reload_comments(self) -> None:
        session_id, source, generation = self._session_id, self._source, self._generation
        if session_id is None or source is None:
            return
        self._bridge.tasks.start(
            self._comments_for(session_id, source), context=CONTEXT,
            on_done=lambda got: self._set_comments(got) if generation == self._generation
            else None)

    def _build(self, nodes: list[Node]) -> None:
        self._rebuilding = True  # a view's selection moving with the rows is not a pick
        try:
            self.model.clear()
            self._nodes = {}
            root = self.model.invisibleRootItem()
            for node in nodes:
                root.appendRow(self._item(node))
        finally:
            self._rebuilding = False

    def _item(self, node: Node) -> QStandardItem:
        self._nodes[node.key] = node
        item = _ToneItem(node.title)
        item.setEditable(False)
        item.setData(node.key, self.KeyRole)
        item.setToolTip(plain_tooltip(node.detail or node.title))  # commit messages, agents' text
        item.setData(node.tone, _TONE_ROLE)
        if node.kind != "entry":
            font = QFont()
            font.setBold(True)
            item.setFont(font)
        for child in node.children:
            item.appendRow(self._item(child))
        return item

    # -- the diff -----------------------------------------------------------------------

    def select(self, key: str) -> None:
        """Show the diff of the node ``key``."""
        node = self._nodes.get(key)
        if node is None or self._rebuilding:
            return
        self._selected = key
        self.changed.emit()
        if node.source != self._source:
            self._load(node.source)

    def _load(self, source: DiffSource) -> None:
        session_id = self._session_id
        if session_id is None:
            return
        self._source = source
        self._generation += 1
        generation = self._generation
        self.changed.emit()
        self._bridge.tasks.start(self._read_diff(session_id, source), context=CONTEXT,
                                 on_done=lambda got: self._on_diff(generation, source, *got))

    async def _read_diff(self, session_id: str, source: DiffSource
                         ) -> tuple[list[FileDiff], list[ReviewComment]]:
        if source.kind == "commit" and source.sha:
            files = await self._backend.commit_diff(source.sha, session_id)
        elif source.kind == "stint" and source.stint is not None:
            line = self._timeline if self._timeline and self._timeline.session_id == session_id \
                else None  # the timeline just read: no second one for two shas
            files = await self._backend.stint_diff(session_id, source.stint, line)
        else:
            files = await self._backend.session_diff(session_id)
        return files, await self._comments_for(session_id, source)

    async def _comments_for(self, session_id: str, source: DiffSource) -> list[ReviewComment]:
        sha = comment_sha(source, self._timeline) if self._timeline else None
        return await self._backend.comments(session_id, sha) if sha else []

    def _on_diff(self, generation: int, source: DiffSource, files: list[FileDiff],
                 comments: list[ReviewComment]) -> None:
        if generation != self._generation or source != self._source:
            return
        if files != self._files:
            self._files = files
            self.diffChanged.emit()
        self._set_comments(comments)

    def _set_comments(self, comments: list[ReviewComment]) -> None:
        if comments != self._comments:
            self._comments = comments
            self.commentsChanged.emit()

    # -- actions ------------------------------------------------------------------------

    def rewind(self, continue_: bool = False) -> None:
        """A new branch at the picked commit (and with ``continue_`` a session from there)."""
        sha, session_id = self.rewind_sha, self._session_id
        if sha is None or session_id is None:
            return
        self._say(f"{'Continuing from' if continue_ else 'Making a branch at'} {short(sha)}…", "")
        self._bridge.tasks.start(self._backend.rewind(sha, session_id, continue_),
                                 context=CONTEXT, on_done=self._rewound)

    def _rewound(self, result: RewindResult) -> None:
        made = f"Made branch {result.branch} at {short(result.sha)}; nothing else moved."
        if result.session_id is None:
            self._say(made, "ok")
            return
        self._say(f"{made} Started session {result.session_id} from there.", "ok")
        self._continued = result.session_id
        self.sessionRequested.emit(result.session_id)

    def comment(self, path: str, line: int, side: Side, body: str, *, hold: bool = False) -> None:
        """Send a review comment on a line of the diff shown (queued while the agent works;
        ``hold``: a finished session's waits for its next run instead of starting one)."""
        session_id, timeline, source = self._session_id, self._timeline, self._source
        sha = comment_sha(source, timeline) if source and timeline else None
        if session_id is None or sha is None:
            self._say("There is no commit to attach a comment to yet.", "warning")
            return
        self._bridge.tasks.start(
            self._backend.comment(session_id, sha, path, line, body, side, hold), context=CONTEXT,
            on_done=lambda made: self._commented(session_id, source, made, hold))

    def _commented(self, session_id: str, source: DiffSource | None,
                   made: ReviewComment, hold: bool = False) -> None:
        if session_id != self._session_id:
            return
        where = f"{made.path}:{made.line}"
        self._say(f"Comment on {where} {made.state}" + (
            " — it goes with the session's next run (nothing runs now)."
            if hold and made.state == "queued" else
            " — the agent gets it when its turn ends." if made.state == "queued" else
            " to the agent as its next instruction." if made.state == "sent" else "."),
                  "warning" if made.state == "queued" else "ok" if made.state == "sent"
                  else "error")
        if source == self._source:
            self._set_comments([*[c for c in self._comments if c.id != made.id], made])
        self.refresh()  # the timeline lists the comment; its state is read again

    def ask_finish(self) -> None:
        """Read the finish summary; :attr:`summaryReady` carries it."""
        if self._session_id is not None:
            self._bridge.tasks.start(self._backend.summary(self._session_id), context=CONTEXT,
                                     on_done=self.summaryReady.emit)

    def finish(self, action: FinishAction) -> None:
        if self._session_id is not None:
            self._bridge.tasks.start(self._backend.finish(self._session_id, action),
                                     context=CONTEXT, on_done=self._finished)

    def _finished(self, result: FinishResult) -> None:
        self._say(result.message, "ok")
        self.refresh()

    def _say(self, text: str, tone: Tone) -> None:
        self._message = (text, tone)
        self.changed.emit()
