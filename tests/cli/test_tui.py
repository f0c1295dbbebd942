"""relay-cli tui against a real host (an engine on the test's data folder served on a
loopback port, the demo runtime), driven by Textual's own pilot at 80×24.

Nothing waits by the clock: each step polls a condition on the screen with a deadline
(:func:`until`), under the pilot's pause (which lets the app process its messages)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, OptionList, RichLog, Static

from relay.cli.tui.app import RelayTui, SessionsScreen
from relay.cli.tui.composer import Composer, mode_line, offered
from relay.cli.tui.session import SessionScreen
from relay.core.config import load_config
from relay.core.models import SessionSpec
from tests.api import conftest as api_conftest
from tests.api.conftest import Served

served = api_conftest.served  # the API tests' host in this process

SIZE = (80, 24)
DEADLINE_S = 30.0


async def until(pilot: Pilot[None], condition: Callable[[], object], what: str,
                within: float = DEADLINE_S) -> None:
    """Let the app run until ``condition()`` holds; fail saying ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def state_cell(app: RelayTui, session_id: str) -> str:
    table = app.sessions.query_one(DataTable)
    if session_id not in table.rows:
        return ""
    return str(table.get_cell(session_id, "state"))


def stream_text(app: RelayTui) -> str:
    screen = app.screen
    if not isinstance(screen, SessionScreen):
        return ""
    return "\n".join(line.text for line in screen.query_one("#stream", RichLog).lines)


async def asking_session(served: Served, repo: Path) -> str:
    """A demo session that stops to ask permission before it writes (until answered)."""
    served.engine.config = load_config(demo_step_delay=0.01)
    return await served.client.start_session(SessionSpec(
        repo=str(repo), task="Add a short notes file", runtime="demo", demo_ask=True,
        approvals="ask"))


async def test_the_list_shows_a_session_and_its_state_changes_live(served: Served,
                                                                   git_repo: Path) -> None:
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, SessionsScreen)
        assert app.sessions.query_one(DataTable).row_count == 0
        sid = await asking_session(served, git_repo)  # started after the TUI opened
        await until(pilot, lambda: state_cell(app, sid) == "needs_input",
                    "the new session to show up asking")
        (question,) = await served.client.open_questions(sid)
        await served.client.answer_input(sid, question.request_id, "allow")
        await until(pilot, lambda: state_cell(app, sid) == "completed",
                    "the list to show the session completed")
        assert "Add a short notes file" in str(app.sessions.query_one(DataTable)
                                               .get_cell(sid, "task"))


async def test_opening_a_session_shows_its_stream_and_its_question_is_answered(
        served: Served, git_repo: Path) -> None:
    sid = await asking_session(served, git_repo)
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state_cell(app, sid) == "needs_input", "the question")
        await pilot.press("enter")
        await until(pilot, lambda: "needs input: (simulated) Allow write_file" in
                    stream_text(app), "the stream to show the stored question")
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        assert screen.query_one("#asks").display  # the question line under the stream
        await pilot.press("ctrl+r")
        await until(pilot, lambda: type(app.screen).__name__ == "AnswerQuestion",
                    "the answer dialog")
        await pilot.press("1")  # Allow once
        await until(pilot, lambda: "state → completed" in stream_text(app),
                    "the session to go on and complete, live in its stream")
        assert "write_file(" in stream_text(app)
        assert (git_repo.parent / "repo").exists()
        assert not screen.query_one("#asks").display
        row = await served.client.get_session(sid)
        assert row.state == "completed"
        await pilot.press("ctrl+b")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back to the list")


async def test_stop_ends_the_session_cancelled(served: Served, git_repo: Path) -> None:
    sid = await asking_session(served, git_repo)
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state_cell(app, sid) == "needs_input", "the session")
        await pilot.press("enter")
        await until(pilot, lambda: "needs input" in stream_text(app), "its stream")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm", "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: "state → cancelled" in stream_text(app),
                    "the stream to say it was cancelled")
        await until(pilot, lambda: state_cell(app, sid) == "cancelled", "the list too")
        assert (await served.client.get_session(sid)).state == "cancelled"


async def test_a_cancelled_confirmation_does_nothing(served: Served, git_repo: Path) -> None:
    sid = await asking_session(served, git_repo)
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state_cell(app, sid) == "needs_input", "the session")
        await pilot.press("s")  # stop, from the list
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm", "the confirmation")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the list again")
        assert (await served.client.get_session(sid)).state == "needs_input"
        await served.client.cancel_session(sid)
        await until(pilot, lambda: state_cell(app, sid) == "cancelled", "the stop elsewhere")


def composer_of(app: RelayTui) -> Composer:
    screen = app.screen
    assert isinstance(screen, SessionScreen)
    return screen.query_one(Composer)


def queued_rows(app: RelayTui) -> list[str]:
    screen = app.screen
    if not isinstance(screen, SessionScreen):
        return []
    queued = screen.query_one("#queued", OptionList)
    return [str(queued.get_option_at_index(i).prompt) for i in range(queued.option_count)]


async def open_session(pilot: Pilot[None], app: RelayTui, sid: str, state: str) -> None:
    await until(pilot, lambda: state_cell(app, sid) == state, f"the session {state}")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, SessionScreen) and
                app.screen.abilities is not None, "its screen and what it offers")


async def test_the_composer_sends_a_follow_up_and_it_appears_in_the_stream(
        served: Served, git_repo: Path) -> None:
    served.engine.config = load_config(demo_step_delay=0.01)
    sid = await served.client.start_session(SessionSpec(repo=str(git_repo), task="notes",
                                                        runtime="demo"))
    await served.client.wait_session(sid)
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        await open_session(pilot, app, sid, "completed")
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        assert "follow-up" in str(screen.query_one("#mode", Static).render())
        await pilot.press(*"now add a test", "enter", *"please")
        assert composer_of(app).text == "now add a test\nplease"  # Enter is a new line
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "you (as a follow-up): now add a test please" in
                    stream_text(app), "the message in the stream, delivered")
        await until(pilot, lambda: composer_of(app).text == "", "the composer to clear")
        await until(pilot, lambda: state_cell(app, sid) == "completed" and
                    stream_text(app).count("state → completed") == 2,
                    "the follow-up to run and complete")
        messages = await served.client.talk.messages(sid)
        assert [(m.text, m.source, m.state) for m in messages] == [
            ("now add a test\nplease", "tui", "delivered")]
        await pilot.press("up")  # the history: the message sent
        assert composer_of(app).text == "now add a test\nplease"


async def test_a_message_queued_while_the_agent_waits_can_be_cancelled(
        served: Served, git_repo: Path) -> None:
    sid = await asking_session(served, git_repo)
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        await open_session(pilot, app, sid, "needs_input")
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        assert screen.abilities is not None
        assert screen.abilities.busy
        assert "^S: Queue" in str(screen.query_one("#mode", Static).render())
        await pilot.press(*"also update the README", "ctrl+s")
        await until(pilot, lambda: any("also update the README" in r
                                       for r in queued_rows(app)), "the queued row")
        assert "you (queued): also update the README" in stream_text(app)
        (pending,) = await served.client.talk.messages(sid, pending=True)
        assert pending.state == "queued"
        await pilot.press("tab")  # to the queued list
        assert screen.query_one("#queued", OptionList).has_focus
        await pilot.press("delete")
        await until(pilot, lambda: queued_rows(app) == [], "the queued row to go")
        assert "you (cancelled): also update the README" in stream_text(app)
        assert await served.client.talk.messages(sid, pending=True) == []
        await served.client.cancel_session(sid)
        await until(pilot, lambda: state_cell(app, sid) == "cancelled", "the session to stop")


async def test_modes_follow_what_the_runtime_can_and_esc_interrupts(
        served: Served, git_repo: Path) -> None:
    sid = await asking_session(served, git_repo)
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        await open_session(pilot, app, sid, "needs_input")
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        assert screen.abilities is not None
        assert offered(screen.abilities) == ["queue", "now", "interrupt"]  # the demo: Y/Y
        no_steer = screen.abilities.model_copy(update={"steer": "no", "why_not": {
            "steer": "codex exec takes no input mid-turn"}})
        assert offered(no_steer) == ["queue", "interrupt"]
        assert "no steering: codex exec takes no input mid-turn" in mode_line(no_steer, "queue")
        modes = []
        for _ in range(3):
            await pilot.press("ctrl+t")
            modes.append(screen.mode)
        assert modes == ["now", "interrupt", "queue"]
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm", "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: state_cell(app, sid) in ("interrupted", "cancelled",
                                                            "completed"),
                    "the turn to stop")
        row = await served.client.get_session(sid)
        assert row.state == "interrupted", row


async def test_hand_off_now_from_the_session(served: Served, git_repo: Path) -> None:
    served.engine.config = load_config(demo_step_delay=0.01)
    sid = await served.client.start_session(SessionSpec(
        repo=str(git_repo), task="Add a short notes file", runtime="demo",
        chain=["demo:primary", "demo:backup"], demo_ask=True, approvals="ask"))
    app = RelayTui(served.client)
    async with app.run_test(size=SIZE) as pilot:
        await open_session(pilot, app, sid, "needs_input")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm", "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: "handoff " in stream_text(app),
                    "the handoff's steps in the stream")
        (question,) = await served.client.open_questions(sid)
        await served.client.answer_input(sid, question.request_id, "allow")  # its safe point
        await until(pilot, lambda: state_cell(app, sid) == "completed", "the session to end")
        (handoff,) = await served.client.handoffs(sid)
        assert (handoff.from_entry, handoff.to_entry) == ("demo:primary", "demo:backup")


async def test_quitting_a_tui_that_hosts_asks_first_while_sessions_run(
        served: Served, git_repo: Path) -> None:
    sid = await asking_session(served, git_repo)
    app = RelayTui(served.client, hosting=True)
    async with app.run_test(size=SIZE) as pilot:
        assert "hosting here" in str(app.sessions.query_one("#where", Static).render())
        await until(pilot, lambda: state_cell(app, sid) == "needs_input", "the session")
        await pilot.press("ctrl+q")  # Textual's quit key asks too
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm", "the question")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the list again")
        assert app.is_running
        await served.client.cancel_session(sid)
        await until(pilot, lambda: state_cell(app, sid) == "cancelled", "the session stopped")
        await pilot.press("q")  # nothing runs: no question
        await until(pilot, lambda: not app.is_running, "the TUI to quit")


def test_without_a_terminal_it_says_so_and_hosts_nothing(relay_home: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "relay.cli.main", "tui"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "relay-cli tui needs a terminal" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (relay_home / "host.json").exists()
