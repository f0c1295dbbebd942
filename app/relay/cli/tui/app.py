"""The TUI application and its first screen, the sessions list with live states."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from relay.api.client import RelayClient
from relay.cli.tui.dialogs import Confirm
from relay.cli.tui.feed import Feed
from relay.cli.tui.session import SessionScreen
from relay.core.errors import HostError, RelayError
from relay.core.models import SessionRow
from relay.core.present import clip, end_state
from relay.core.states import ACTIVE_STATES

#: the list's columns: (key, title, width)
COLUMNS = (("id", "session", 14), ("state", "state", 14), ("runtime", "runtime", 10),
           ("task", "task", 36))


def cells(row: SessionRow) -> tuple[str, str, str, str]:
    runtime = f"{row.runtime}*" if row.simulated else row.runtime
    return (row.id, end_state(row.state, row.refused_calls, short=True), runtime,
            clip(" ".join(row.task.split()), 60))


class SessionsScreen(Screen[None]):
    """Every session of the host, newest first; their states change as the host says."""

    DEFAULT_CSS = """
    SessionsScreen #where { height: 1; background: $boost; padding: 0 1; }
    SessionsScreen DataTable { height: 1fr; }
    SessionsScreen #empty { height: auto; padding: 1 2; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", priority=True),
        Binding("s", "stop", "Stop"),
        Binding("h", "handoff", "Hand off"),
        Binding("q", "app.quit_tui", "Quit"),
    ]

    def compose(self) -> ComposeResult:
        yield Static(id="where", markup=False)
        yield Static("No sessions yet. Start one elsewhere — `relay-cli run \"task\" --repo "
                     ".`, `relay-cli demo` or the window — and it shows up here.",
                     id="empty", markup=False)
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, title, width in COLUMNS:
            table.add_column(title, key=key, width=width)
        app = self.app
        assert isinstance(app, RelayTui)
        self.query_one("#where", Static).update(app.where)
        for row in app.feed.rows.values():
            table.add_row(*cells(row), key=row.id)
        self.query_one("#empty", Static).display = not table.row_count
        table.focus()

    def show(self, row: SessionRow) -> None:
        """A new or changed row."""
        table = self.query_one(DataTable)
        if row.id in table.rows:
            for (key, _t, _w), value in zip(COLUMNS, cells(row), strict=True):
                table.update_cell(row.id, key, value)
            return
        self.query_one("#empty", Static).display = False
        # a session started since: the list is newest first
        app = self.app
        assert isinstance(app, RelayTui)
        current = self.selected()
        table.clear()
        for each in sorted(app.feed.rows.values(), key=lambda r: r.created_at, reverse=True):
            table.add_row(*cells(each), key=each.id)
        if current is not None:
            table.move_cursor(row=table.get_row_index(current.id))

    def selected(self) -> SessionRow | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        app = self.app
        assert isinstance(app, RelayTui)
        return app.feed.rows.get(str(key)) if key is not None else None

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        row = self.selected()
        if row is not None:
            self.app.push_screen(SessionScreen(row))

    @work(group="act")
    async def action_stop(self) -> None:
        row = self.selected()
        if row is None or row.finished:
            self.notify("Select a running session.")
            return
        if await self.app.push_screen_wait(Confirm(f"Stop {row.id}? It ends cancelled.",
                                                   "Stop")):
            app = self.app
            assert isinstance(app, RelayTui)
            await app.call(app.client.cancel_session(row.id))

    @work(group="act")
    async def action_handoff(self) -> None:
        row = self.selected()
        if row is None or row.finished:
            self.notify("Select a running session.")
            return
        if await self.app.push_screen_wait(Confirm(f"Hand {row.id} off now, at its next safe "
                                                   "point?", "Hand off")):
            app = self.app
            assert isinstance(app, RelayTui)
            await app.call(app.client.request_handoff(row.id))


class RelayTui(App[None]):
    """relay-cli tui: a client of the host's API (``hosting``: this process is the host)."""

    TITLE = "Relay"
    ENABLE_COMMAND_PALETTE = False
    # Textual's own quit key asks first too when quitting ends the sessions this TUI hosts
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit_tui", "Quit", show=False, priority=True)]

    def __init__(self, client: RelayClient, *, hosting: bool = False) -> None:
        super().__init__()
        self.client = client
        self.hosting = hosting
        self.feed = Feed(client)
        self.feed.on_row = self._row_changed
        self.feed.on_link = self._link
        self.sessions = SessionsScreen()
        #: why the TUI ended on its own (the host went away), printed after it closes
        self.ended: str | None = None

    @property
    def where(self) -> str:
        here = "hosting here: sessions stop when you quit" if self.hosting else "client"
        return f"Relay · {self.client.url} · {here}"

    async def on_mount(self) -> None:
        await self.feed.load()
        await self.push_screen(self.sessions)
        self._follow()

    @work(group="feed", exit_on_error=False)
    async def _follow(self) -> None:
        try:
            await self.feed.follow()
        except HostError as exc:
            self.ended = exc.message + (f" {exc.hint}" if exc.hint else "")
            self.exit()

    def _row_changed(self, row: SessionRow) -> None:
        self.sessions.show(row)
        if isinstance(self.screen, SessionScreen):
            self.screen.row_changed(row)

    def _link(self, up: bool) -> None:
        if not up:
            self.notify("Lost the host's stream; reconnecting…", severity="warning")

    def failed(self, exc: RelayError) -> None:
        """Say why the host refused (its message, and its hint when it has one)."""
        self.notify(exc.message + (f"\n→ {exc.hint}" if exc.hint else ""), severity="error",
                    timeout=8)

    async def call(self, pending: Awaitable[object]) -> bool:
        """Await one API call; say what it answered, or why it was refused (False)."""
        try:
            said = await pending
        except RelayError as exc:
            self.failed(exc)
            return False
        if isinstance(said, str) and said:
            self.notify(said, timeout=4)
        return True

    @work(group="quit")
    async def action_quit_tui(self) -> None:
        running = [r.id for r in self.feed.rows.values() if r.state in ACTIVE_STATES]
        if self.hosting and running and not await self.push_screen_wait(Confirm(
                f"This TUI hosts Relay: quitting ends {len(running)} running session(s) "
                "(interrupted, resumable). Start `relay-cli serve` first to keep them "
                "running. Quit?", "Quit")):
            return
        self.exit()
