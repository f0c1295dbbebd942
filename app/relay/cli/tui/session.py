"""One session in the TUI: its live stream, the queued messages, the composer, and what can
be done to it (answer its question, interrupt the turn, hand off now, stop).

The stream is the session's records from the store (in pages) followed by the live ones the
app's :class:`~relay.cli.tui.feed.Feed` hands over — listened to before the pages are read,
so nothing falls in between, and applied once (:class:`Conversation` skips what it saw).
Each row is :func:`relay.core.present.summary`'s line, the same as ``relay-cli show``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, OptionList, RichLog, Static
from textual.widgets.option_list import Option

from relay.cli.tui.composer import LABELS, Composer, mode_line, offered
from relay.cli.tui.dialogs import AnswerQuestion, Confirm
from relay.cli.tui.feed import Conversation
from relay.core.errors import RelayError
from relay.core.events import EventRecord, MessageChanged, MessageMode
from relay.core.models import SessionRow, TalkAbilities
from relay.core.present import message_line, summary

if TYPE_CHECKING:
    from relay.cli.tui.app import RelayTui

#: events one page of the stored stream holds
PAGE = 1000
#: event kinds the stream leaves out (a running total, not something that happened)
QUIET = frozenset({"quota_update"})
#: how a row's kind is coloured
STYLES = {"assistant_text": "", "tool_call": "cyan", "tool_result": "dim", "error": "red",
          "needs_input": "bold yellow", "state_changed": "magenta", "message": "green",
          "session_ended": "bold", "limit_hit": "yellow", "handoff_step": "yellow"}
#: rows whose line does not say what they are by itself
PREFIXES = {"tool_call": "tool ", "tool_result": "  → ", "quota_update": "", "notice": "note: "}
#: records that may change what the composer offers (busy or not, the runtime)
_ABILITY_KINDS = frozenset({"state_changed", "session_started", "session_ended",
                            "turn_completed", "handoff_step"})


def row_text(record: EventRecord) -> Text:
    """A stream row: the event's one line, styled by its kind."""
    event = record.event
    line = message_line(event) if isinstance(event, MessageChanged) else summary(event)
    return Text(PREFIXES.get(event.kind, "") + line, style=STYLES.get(event.kind, ""))


class QueuedList(OptionList):
    """The queued messages (Tab reaches it; Del or x cancels the highlighted one)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("delete,x", "screen.cancel_message", "Cancel message")]


class SessionScreen(Screen[None]):
    """A session's stream, queue and composer."""

    DEFAULT_CSS = """
    SessionScreen #head { height: 1; background: $boost; padding: 0 1; }
    SessionScreen #stream { height: 1fr; padding: 0 1; }
    SessionScreen #queued { height: auto; max-height: 4; border: none; padding: 0 1; }
    SessionScreen #asks { height: auto; max-height: 2; color: $warning; padding: 0 1; }
    SessionScreen #mode { height: 1; color: $text-muted; padding: 0 1; }
    SessionScreen Composer, SessionScreen Composer:focus { height: 3; border: none;
        background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s,ctrl+enter", "send", "Send", priority=True),
        Binding("ctrl+t", "mode", "Mode", priority=True),
        Binding("escape", "interrupt", "Interrupt", priority=True),
        Binding("ctrl+r", "answer", "Answer", priority=True),
        Binding("ctrl+o", "handoff", "Hand off", priority=True),
        Binding("ctrl+g", "stop", "Stop", priority=True),
        Binding("ctrl+b", "back", "Back", priority=True),
        Binding("pageup", "scroll(-1)", show=False, priority=True),
        Binding("pagedown", "scroll(1)", show=False, priority=True),
    ]

    def __init__(self, row: SessionRow) -> None:
        super().__init__()
        self.row = row
        self.conversation = Conversation()
        self.abilities: TalkAbilities | None = None
        self.mode: MessageMode = "queue"
        self._early: list[EventRecord] | None = []  # live records while the pages load
        self._unlisten: Callable[[], None] | None = None

    @property
    def tui(self) -> RelayTui:
        from relay.cli.tui.app import RelayTui

        assert isinstance(self.app, RelayTui)
        return self.app

    def compose(self) -> ComposeResult:
        yield Static(id="head", markup=False)
        stream = RichLog(id="stream", wrap=True, markup=False, auto_scroll=True)
        stream.can_focus = False  # Tab goes between the composer and the queued list
        yield stream
        yield QueuedList(id="queued")
        yield Static(id="asks", markup=False)
        yield Static(id="mode", markup=False)
        yield Composer(id="composer", placeholder="Message the agent (Enter: new line, "
                       "Ctrl+S: send, ↑: the last one sent)")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._unlisten = self.tui.feed.listen(self.row.id, self._live)
        self.query_one("#queued", OptionList).display = False
        self.query_one("#asks", Static).display = False
        self._head()
        self.query_one(Composer).focus()
        self._load()

    def on_unmount(self) -> None:
        if self._unlisten is not None:
            self._unlisten()

    # -- the stream --------------------------------------------------------------------

    @work(group="load")
    async def _load(self) -> None:
        after = 0
        while batch := await self.tui.client.events_after(after, self.row.id, PAGE):
            for record in batch:
                self._show(record)
            after = batch[-1].id
        early, self._early = self._early or [], None
        for record in early:
            self._show(record)
        self._refresh_lists()
        self._refresh_abilities()

    def _live(self, record: EventRecord) -> None:
        if self._early is not None:
            self._early.append(record)
            return
        changed = self._show(record)
        if changed:
            self._refresh_lists()
        if record.event.kind in _ABILITY_KINDS:
            self._refresh_abilities()

    def _show(self, record: EventRecord) -> bool:
        """Write one record's row (once); whether the queue or the questions changed."""
        if record.id <= self.conversation.last:
            return False
        changed = self.conversation.apply(record)
        if record.event.kind not in QUIET:
            self.query_one("#stream", RichLog).write(row_text(record))
        return changed

    def _refresh_lists(self) -> None:
        queued = self.query_one("#queued", OptionList)
        queued.clear_options()
        for mid, message in self.conversation.pending.items():
            queued.add_option(Option(Text(message_line(message), no_wrap=True,
                                          overflow="ellipsis"), id=mid))
        queued.display = bool(self.conversation.pending)
        if queued.option_count:
            queued.highlighted = 0
        self._head()
        asks = self.query_one("#asks", Static)
        question = next(iter(self.conversation.questions.values()), None)
        asks.update(f"? {question.prompt} — Ctrl+R answers" if question else "")
        asks.display = question is not None

    @work(group="abilities", exclusive=True)
    async def _refresh_abilities(self) -> None:
        sid = self.row.id
        try:
            self.abilities = await self.tui.client.talk.abilities(sid)
        except RelayError as exc:
            self.abilities = None
            self.query_one("#mode", Static).update(exc.message)
            return
        self.row = self.tui.feed.rows.get(sid, self.row)
        if self.mode not in offered(self.abilities):
            self.mode = "queue"
        self._head()

    def _head(self) -> None:
        row = self.tui.feed.rows.get(self.row.id, self.row)
        busy = " · busy" if self.abilities and self.abilities.busy else ""
        self.query_one("#head", Static).update(
            f"{row.id} · {row.runtime}{' (simulation)' if row.simulated else ''} · "
            f"{row.state}{busy} · {row.task}")
        line = mode_line(self.abilities, self.mode)
        if self.conversation.pending:
            line += " · Tab: queue"
        self.query_one("#mode", Static).update(line)

    def row_changed(self, row: SessionRow) -> None:
        """The app's feed saw the session's row change."""
        if row.id == self.row.id:
            self.row = row
            self._head()

    # -- actions -----------------------------------------------------------------------

    def action_send(self) -> None:
        composer = self.query_one(Composer)
        text = composer.text.strip()
        if not text:
            self.notify("Type a message first.", severity="warning")
            return
        self._send(text, self.mode)

    @work(group="send")
    async def _send(self, text: str, mode: MessageMode) -> None:
        try:
            message = await self.tui.client.talk.say(self.row.id, text, mode=mode, source="tui")
        except RelayError as exc:
            self.tui.failed(exc)
            return
        self.query_one(Composer).remember(text)
        self.notify(f"{LABELS[mode] if mode != 'queue' else 'Sent'}: {message.state}",
                    timeout=3)
        self._refresh_abilities()

    def action_mode(self) -> None:
        modes = offered(self.abilities)
        self.mode = modes[(modes.index(self.mode) + 1) % len(modes)] if self.mode in modes \
            else modes[0]
        self._head()

    def action_interrupt(self) -> None:
        self._confirm("Interrupt the agent's turn now? The conversation is kept: queued "
                      "messages go next, or send one to continue.", "Interrupt",
                      lambda: self.tui.client.talk.interrupt(self.row.id))

    def action_handoff(self) -> None:
        self._confirm("Hand this session off now, at its next safe point, to the next "
                      "provider or account of its chain?", "Hand off",
                      lambda: self.tui.client.request_handoff(self.row.id))

    def action_stop(self) -> None:
        async def stop() -> str:
            await self.tui.client.cancel_session(self.row.id)
            return "Stopping the session."
        self._confirm("Stop this session? It ends cancelled (the worktree stays).", "Stop",
                      stop)

    def action_scroll(self, pages: int) -> None:
        stream = self.query_one("#stream", RichLog)
        stream.scroll_relative(y=pages * max(1, stream.size.height - 1), animate=False)

    def action_back(self) -> None:
        self.app.pop_screen()

    @work(group="answer")
    async def action_answer(self) -> None:
        try:
            questions = await self.tui.client.open_questions(self.row.id)
        except RelayError as exc:
            self.tui.failed(exc)
            return
        if not questions:
            self.notify("The agent asks nothing now.")
            return
        answer = await self.app.push_screen_wait(AnswerQuestion(questions[0]))
        if answer is None:
            return
        option_id, text = answer
        await self._call(lambda: self.tui.client.answer_input(
            self.row.id, questions[0].request_id, option_id, text))

    @work(group="cancel")
    async def action_cancel_message(self) -> None:
        queued = self.query_one("#queued", OptionList)
        if not queued.display or queued.highlighted is None:
            self.notify("Select a queued message first (Tab to the list).")
            return
        mid = queued.get_option_at_index(queued.highlighted).id
        if mid is None:
            return

        async def cancel() -> str:
            await self.tui.client.talk.cancel(self.row.id, mid)
            return "Message cancelled."
        await self._call(cancel)

    @work(group="confirm")
    async def _confirm(self, question: str, yes: str, act: Callable[[], Awaitable[Any]]) -> None:
        if await self.app.push_screen_wait(Confirm(question, yes)):
            await self._call(act)

    async def _call(self, act: Callable[[], Awaitable[Any]]) -> None:
        """Run one API call (the app says what it answered); then what the composer offers."""
        if await self.tui.call(act()):
            self._refresh_abilities()
