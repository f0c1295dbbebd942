"""ComposerViewModel: what the user says to the shown session's agent, and its queue.

It follows the session the stream shows (:meth:`follow`): what the composer may offer
(``talk.abilities``: busy, steer, interrupt, the reasons why not), the session's queued
messages (read once, then kept live from the MessageChanged records — a message queued from
relay-cli, the TUI or the board appears here too, and goes when it is delivered or
cancelled anywhere) and the texts sent from here (↑ walks them). The intents — send in a
mode, edit, cancel, interrupt, fork — run through the bridge's task runner against
``source.talk`` (the engine's, or the host's over its API); their errors reach the composer
(context ``"composer"``), their answers :attr:`status`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from PySide6.QtCore import QObject, QTimer, Signal

from relay.core.events import EventRecord, MessageChanged, MessageKind, MessageMode
from relay.core.models import ForkResult, SessionMessage, TalkAbilities
from relay.core.present import clip, message_line
from relay.gui.bridge import EngineBridge
from relay.sessions.talking import STEER_HINT

CONTEXT = "composer"
#: record kinds after which what the composer may offer is read again
ABILITY_KINDS = frozenset({"session_started", "session_ended", "state_changed"})
#: message states that keep a row under the stream
PENDING_STATES = frozenset({"queued", "sending"})
#: how many sent texts ↑ walks, per session
HISTORY_LIMIT = 50


@dataclass(frozen=True, slots=True)
class Queued:
    """One message waiting for the agent (a row under the stream)."""

    id: str
    text: str
    state: str
    kind: MessageKind
    source: str

    @classmethod
    def of(cls, message: SessionMessage | MessageChanged) -> Queued:
        if isinstance(message, MessageChanged):
            return cls(message.message_id, message.text, message.state, message.message_kind,
                       message.source)
        return cls(message.id, message.text, message.state, message.kind, message.source)

    @property
    def editable(self) -> bool:
        return self.state == "queued"


@dataclass(frozen=True, slots=True)
class Offer:
    """One way to send: whether it is offered now and what its tooltip says."""

    enabled: bool
    tip: str


def attachment_paths(text: str) -> list[str]:
    """The files ``text`` names when every non-empty line is an existing file (a path, or a
    ``file://`` URL as a file manager pastes it); else none (the text is just text)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    paths: list[str] = []
    for line in lines:
        if line.startswith("file://"):
            line = unquote(urlparse(line).path)
        path = Path(os.path.expanduser(line))
        if not path.is_absolute() or not path.is_file():
            return []
        paths.append(str(path))
    return paths


def sent_line(message: SessionMessage) -> str:
    """What the composer says after a message was taken."""
    if message.state == "delivered":
        return {"steer": "Sent into the running turn.",
                "turn": "Delivered at the turn boundary.",
                "resume": "Sent: the session continues.",
                "brief": "Sent: a new run continues the session from its brief."
                }.get(message.how or "", "Sent.")
    if message.state == "queued":
        if message.mode == "interrupt":
            return "Queued; the turn is being interrupted so it goes next."
        return "Queued — it goes when this turn ends."
    if message.state == "failed":
        return f"Not delivered: {message.error or 'the agent did not take it'}."
    return f"Message {message.state}."


def fork_line(result: ForkResult) -> str:
    how = ("carrying the conversation" + (f" up to turn {result.turns}" if result.turns else "")
           if result.how == "conversation" else "from the signed brief")
    at = f" at {result.sha[:10]}" if result.sha else ""
    return f"Forked into session {result.session_id}{at}, {how}."


class ComposerViewModel(QObject):
    """See the module documentation.

    Signals:
        changed(): abilities, the status line or the attachments changed.
        queueChanged(): the queued rows changed.
        sent(): the composer's text was taken (the box clears).
        notice(str): a passing message for the window's status bar (an interrupt's answer).
        forked(str): a fork started this session: show it.
    """

    REFRESH_MS = 250

    changed = Signal()
    queueChanged = Signal()
    sent = Signal()
    notice = Signal(str)
    forked = Signal(str)

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.session_id: str | None = None
        self.abilities: TalkAbilities | None = None
        self.queued: dict[str, Queued] = {}
        self.attachments: list[str] = []
        self.status = ""
        self._history: dict[str, list[str]] = {}
        #: messages sent from here still waiting (their delivery is said in the status line)
        self._mine: set[str] = set()
        #: messages that left the queue while the queue was being read
        self._gone: set[str] = set()
        self._generation = 0
        self._sending = False
        self._stopped = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(self.REFRESH_MS)
        self._timer.timeout.connect(self.read_abilities)
        bridge.records.connect(self.on_records)

    # -- what the composer offers -------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.abilities is not None and self.abilities.busy

    @property
    def can_send(self) -> bool:
        return (self.session_id is not None and not self._sending
                and (self.abilities is None or self.abilities.can_send))

    def send_offer(self) -> Offer:
        why = self.abilities.why_not.get("send", "") if self.abilities else ""
        if not self.can_send:
            return Offer(False, why or "Select a session first." if self.session_id is None
                         else why or "Sending…")
        return Offer(True, "Queue it: it goes when this turn ends (Ctrl+Enter)" if self.busy
                     else "Continue the session with this message (Ctrl+Enter)")

    def steer_offer(self) -> Offer:
        a = self.abilities
        if a is None or not self.can_send:
            return Offer(False, "Steer now: send it into the running turn")
        if a.steer not in ("yes", "partial"):
            why = a.why_not.get("steer") or f"{a.runtime} cannot take a message mid-turn."
            return Offer(False, why if STEER_HINT in why else f"{why} {STEER_HINT}")
        if not a.busy:
            return Offer(False, "No turn is running: Send continues the session.")
        return Offer(True, "Send it into the running turn now"
                     + (" (partly supported by this runtime)" if a.steer == "partial" else ""))

    def interrupt_offer(self) -> Offer:
        a = self.abilities
        if a is None or not self.can_send:
            return Offer(False, "Interrupt & send: stop the turn, then send this")
        if a.interrupt == "no":
            return Offer(False, a.why_not.get("interrupt") or f"{a.runtime} cannot be "
                         "interrupted; Send queues it for the end of the turn.")
        if not a.busy:
            return Offer(False, "No turn is running: Send continues the session.")
        return Offer(True, "Stop the current turn (the conversation stays), then send this")

    def history(self) -> list[str]:
        """The texts sent to the shown session from here, oldest first."""
        return list(self._history.get(self.session_id or "", []))

    # -- following ----------------------------------------------------------------------

    def follow(self, session_id: str | None) -> None:
        """Show ``session_id``'s composer (the stream's session); None clears."""
        if session_id == self.session_id or self._stopped:
            return
        self.session_id, self.abilities, self.queued = session_id, None, {}
        self.attachments, self.status, self._gone, self._mine = [], "", set(), set()
        self._generation += 1
        self._timer.stop()
        self.changed.emit()
        self.queueChanged.emit()
        if session_id is None:
            return
        generation = self._generation
        self.bridge.tasks.start(self.bridge.source.talk.messages(session_id, pending=True),
                                context=CONTEXT,
                                on_done=lambda found: self._loaded(generation, found))
        self.read_abilities()

    def stop(self) -> None:
        """Read nothing more (the window is closing)."""
        self._stopped = True
        self._timer.stop()
        self._generation += 1

    def read_abilities(self) -> None:
        session_id, generation = self.session_id, self._generation
        if session_id is None or self._stopped:
            return
        self.bridge.tasks.start(self.bridge.source.talk.abilities(session_id), context=CONTEXT,
                                on_done=lambda a: self._set_abilities(generation, a))

    def _set_abilities(self, generation: int, abilities: TalkAbilities) -> None:
        if generation == self._generation:
            self.abilities = abilities
            self.changed.emit()

    def _loaded(self, generation: int, found: list[SessionMessage]) -> None:
        if generation != self._generation:
            return
        for message in found:
            if message.id not in self._gone and message.state in PENDING_STATES:
                self.queued.setdefault(message.id, Queued.of(message))
        self.queueChanged.emit()

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        if self.session_id is None:
            return
        touched = stale = False
        for record in batch:
            if record.session_id != self.session_id:
                continue
            event = record.event
            if isinstance(event, MessageChanged):
                touched = True
                if event.state in PENDING_STATES:
                    self.queued[event.message_id] = Queued.of(event)
                else:
                    self.queued.pop(event.message_id, None)
                    self._gone.add(event.message_id)
                    if event.message_id in self._mine:
                        self._mine.discard(event.message_id)
                        self._say(message_line(event))
            stale |= event.kind in ABILITY_KINDS
        if touched:
            self.queueChanged.emit()
        if stale:
            self._timer.start()

    # -- intents ------------------------------------------------------------------------

    def add_attachments(self, paths: Sequence[str]) -> None:
        new = [p for p in paths if p not in self.attachments]
        if new:
            self.attachments.extend(new)
            self.changed.emit()

    def remove_attachment(self, path: str) -> None:
        if path in self.attachments:
            self.attachments.remove(path)
            self.changed.emit()

    def send(self, text: str, mode: MessageMode = "queue") -> bool:
        """Say ``text`` (with the attachments) to the shown session; whether it went out."""
        session_id, attachments = self.session_id, list(self.attachments)
        if session_id is None or self._sending or not (text.strip() or attachments):
            return False
        self._sending = True
        self._say("Sending…" if mode != "interrupt" else "Interrupting the turn…")
        task = self.bridge.tasks.start(
            self.bridge.source.talk.say(session_id, text, mode=mode, source="window",
                                        attachments=attachments),
            context=CONTEXT, on_done=lambda m: self._sent(session_id, text, m))
        task.add_done_callback(lambda t: self._settled(t.cancelled() or t.exception() is not None))
        return True

    def _sent(self, session_id: str, text: str, message: SessionMessage) -> None:
        past = self._history.setdefault(session_id, [])
        if text.strip() and (not past or past[-1] != text):
            past.append(text)
            del past[:-HISTORY_LIMIT]
        if session_id != self.session_id:
            return
        if message.state in PENDING_STATES and message.id not in self._gone:
            self.queued.setdefault(message.id, Queued.of(message))
            self._mine.add(message.id)
            self.queueChanged.emit()
        self.attachments = []
        self.sent.emit()
        self._say(sent_line(message))
        self.read_abilities()

    def _settled(self, failed: bool) -> None:
        self._sending = False
        if failed:
            self._say("")
        self.changed.emit()

    def edit(self, message_id: str, text: str) -> None:
        session_id = self.session_id
        if session_id is None or message_id not in self.queued or not text.strip():
            return
        self.bridge.tasks.start(self.bridge.source.talk.edit(session_id, message_id, text),
                                context=CONTEXT, on_done=lambda m: self._changed_message(m))

    def cancel(self, message_id: str) -> None:
        session_id = self.session_id
        if session_id is None or message_id not in self.queued:
            return
        self.bridge.tasks.start(self.bridge.source.talk.cancel(session_id, message_id),
                                context=CONTEXT, on_done=lambda m: self._changed_message(m))

    def _changed_message(self, message: SessionMessage) -> None:
        """The answer to an edit or cancel (its MessageChanged may have come first)."""
        if message.session_id != self.session_id:
            return
        if message.state in PENDING_STATES and message.id not in self._gone:
            self.queued[message.id] = Queued.of(message)
        else:
            self.queued.pop(message.id, None)
            self._gone.add(message.id)
        self.queueChanged.emit()

    def interrupt(self) -> None:
        """Stop the shown session's current turn (Esc in the stream); the answer is shown."""
        session_id = self.session_id
        if session_id is None:
            return
        if self.abilities is not None and not self.abilities.busy:
            self._say("No turn is running: nothing to interrupt.")
            return
        self._say("Interrupting the turn…")
        self.bridge.tasks.start(self.bridge.source.talk.interrupt(session_id), context=CONTEXT,
                                on_done=lambda answer: self._interrupted(session_id, answer))

    def _interrupted(self, session_id: str, answer: str) -> None:
        answer = answer[:1].upper() + answer[1:]
        self.notice.emit(answer)
        if session_id == self.session_id:
            self._say(answer)
            self.read_abilities()

    def fork(self, session_id: str, *, at_event: int | None = None,
             at_commit: str | None = None, prompt: str | None = None,
             context: str = CONTEXT) -> None:
        """A new session from ``session_id`` at a stream row or a commit; :attr:`forked`
        carries it once it started."""
        where = f"event {at_event}" if at_event is not None else (
            f"commit {at_commit[:10]}" if at_commit else "its last snapshot")
        self._say(f"Forking at {where}…")
        self.bridge.tasks.start(
            self.bridge.source.talk.fork(session_id, at_event=at_event, at_commit=at_commit,
                                         prompt=prompt or None),
            context=context, on_done=self._forked)

    def _forked(self, result: ForkResult) -> None:
        line = fork_line(result)
        self.notice.emit(line)
        self.forked.emit(result.session_id)
        self._say(line)

    def _say(self, text: str) -> None:
        self.status = clip(text, 300)
        self.changed.emit()
