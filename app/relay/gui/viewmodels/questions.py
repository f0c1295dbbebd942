"""QuestionsViewModel: the open questions of the session the stream shows (needs input).

Follows one session: on :meth:`follow` it asks the engine for the questions still open
(any Relay process may run the session), then keeps them current from the live records —
a NeedsInput adds one, an InputWithdrawn (answered here, in another window, from a
terminal, by a policy, or the run ended) removes it. :meth:`answer` sends the user's
choice through the bridge's TaskRunner (context ``"stream"``: a failure shows in the
stream dock); the question goes away when its InputWithdrawn arrives, not before.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal

from relay.core.events import EventRecord, InputWithdrawn, NeedsInput
from relay.gui.bridge import EngineBridge

CONTEXT = "stream"


class QuestionsViewModel(QObject):
    """Signals: changed() — the open questions changed; answering(str) — a request id sent."""

    changed = Signal()
    answering = Signal(str)

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.session_id: str | None = None
        self.questions: dict[str, NeedsInput] = {}
        #: request ids whose answer was sent and not yet confirmed
        self.sent: set[str] = set()
        self._generation = 0
        bridge.records.connect(self.on_records)

    @property
    def current(self) -> NeedsInput | None:
        """The oldest open question (the one the panel shows)."""
        return next(iter(self.questions.values()), None)

    def follow(self, session_id: str | None) -> None:
        if session_id == self.session_id:
            return
        self.session_id, self.questions, self.sent = session_id, {}, set()
        self._generation += 1
        self.changed.emit()
        if session_id is None:
            return
        generation = self._generation
        self.bridge.tasks.start(self.bridge.source.open_questions(session_id), context=CONTEXT,
                                on_done=lambda found: self._loaded(generation, found))

    def _loaded(self, generation: int, found: list[NeedsInput]) -> None:
        if generation != self._generation:
            return
        for question in found:
            self.questions.setdefault(question.request_id, question)
        self.changed.emit()

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        touched = False
        for record in batch:
            if record.session_id != self.session_id or record.event.replay:
                continue
            event = record.event
            if isinstance(event, NeedsInput):
                self.questions[event.request_id] = event
                touched = True
            elif isinstance(event, InputWithdrawn):
                touched |= self.questions.pop(event.request_id, None) is not None
                self.sent.discard(event.request_id)
        if touched:
            self.changed.emit()

    def answer(self, request_id: str, option_id: str | None = None, text: str | None = None) -> None:
        session_id = self.session_id
        if session_id is None or request_id not in self.questions or request_id in self.sent:
            return
        self.sent.add(request_id)
        self.answering.emit(request_id)
        task = self.bridge.tasks.start(
            self.bridge.source.answer_input(session_id, request_id, option_id, text),
            context=CONTEXT)
        task.add_done_callback(lambda t: self._settled(request_id, t.cancelled() or
                                                       t.exception() is not None))

    def _settled(self, request_id: str, failed: bool) -> None:
        if failed:  # the error shows in the stream dock; the user may try again
            self.sent.discard(request_id)
            self.changed.emit()
