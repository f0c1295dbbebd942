"""The window shows an agent's text as text: control characters escaped (``\\x1b``), markup
shown as written, never rendered (a QLabel guesses rich text from a leading tag; a tooltip
too)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from relay.core.events import AssistantText, EventRecord, NeedsInput
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from tests.gui.conftest import Runner

#: markup first (what makes Qt guess rich text), then a screen clear and an OSC 52 write
HOSTILE = "<b>bold</b> <img src='x'> \x1b[2J\x1b]52;c;cGF3bmVk\x07 \x9b31m"
SHOWN = "<b>bold</b> <img src='x'> \\x1b[2J\\x1b]52;c;cGF3bmVk\\x07 \\x9b31m"


def test_the_agents_question_shows_literally(shell: RelayShell) -> None:
    panel = shell.question_panel
    shell.questions_vm.questions = {"r1": NeedsInput(request_id="r1", prompt=HOSTILE, about="question")}
    panel.refresh()

    assert panel.title.textFormat() == Qt.TextFormat.PlainText
    assert panel.title.text() == f"The agent asks: {SHOWN}"


def test_a_stream_row_its_detail_and_its_tooltip_show_literally(
    shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path
) -> None:
    row = arun(engine.run_session(SessionSpec(repo=git_repo, task=HOSTILE, runtime="demo")))
    vm = shell.stream_vm
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(row.id)
    before = vm.event_count()
    vm.on_records(
        [
            EventRecord(
                id=10_000, session_id=row.id, run_id=None, event=AssistantText(runtime="demo", text=HOSTILE)
            )
        ]
    )
    qtbot.waitUntil(lambda: vm.event_count() == before + 1, timeout=2000)
    index = next(
        vm.index(r, 0)
        for r in range(vm.rowCount())
        if str(vm.index(r, 0).data(Vm.TextRole)).startswith("<b>bold")
    )

    assert index.data(Vm.TextRole) == SHOWN
    assert index.data(Qt.ItemDataRole.DisplayRole) == SHOWN
    tooltip = index.data(Qt.ItemDataRole.ToolTipRole)
    assert "&lt;b&gt;bold&lt;/b&gt; &lt;img src='x'&gt;" in tooltip
    assert "\x1b" not in tooltip
    assert "\\x1b[2J" in tooltip

    sessions = shell.sessions_vm  # the task (an adopted transcript's prompt, say) in the list
    sessions.refresh()
    qtbot.waitUntil(lambda: sessions.row_of(row.id) is not None, timeout=5000)
    listed = str(sessions.index(sessions.row_of(row.id) or 0, 0).data(Qt.ItemDataRole.ToolTipRole))
    assert listed.startswith("<p style='white-space:pre-wrap'>&lt;b&gt;bold&lt;/b&gt;")
    assert "\\x1b]52;c;cGF3bmVk" in listed
    assert "\x1b" not in listed
