"""The History dock in the window, after a real handoff (the demo runtime, a simulated limit).

The session runs on the window's engine in a real git worktree; the dock reads it
through the real time machine (``engine.history``, ``engine.review``): two stints,
what each agent changed, Rewind here (a new branch, no ref moved), Continue from
here (a new session, selected), a review comment sent to the agent, Finish….
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.gui import theme
from relay.gui.docks.parts import PlainLabel
from relay.gui.history_dialogs import CommentDialog
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.history import HistoryViewModel

Runner = Callable[..., Any]


def run_handoff(shell: RelayShell, qtbot: QtBot, repo: Path, preempt: bool = False) -> str:
    """A demo session that hits its limit after two steps and is handed to a backup
    (``preempt``: handed off at the limit's warning, before it blocks)."""
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=repo, task="add a greeting",
                                        chain=["demo:primary", "demo:backup"],
                                        demo_limit_after=2, preempt=preempt))
    assert started.args is not None
    session_id = str(started.args[0])
    vm = shell.stream_vm
    qtbot.waitUntil(lambda: vm.session is not None and vm.session.id == session_id
                    and vm.session.state == "completed", timeout=30_000)
    return session_id


def open_history(shell: RelayShell, qtbot: QtBot, stints: int = 2) -> HistoryViewModel:
    shell.window.show()
    qtbot.waitExposed(shell.window)
    shell.history_dock.raise_()
    vm = shell.history_vm
    qtbot.waitUntil(lambda: vm.timeline is not None and vm.timeline.state == "completed"
                    and len(vm.timeline.stints) == stints, timeout=15_000)
    return vm


def comment_on_an_added_line(shell: RelayShell) -> CommentDialog:
    """Open the comment dialog on the shown diff's first added line."""
    diff = shell.history_dock.diff
    line = next(i for i, r in enumerate(diff.rows.layout.rows) if r.kind == "line"
                and r.new is not None and r.new.kind == "add")
    diff.table.go_to(line)
    diff.request_comment()
    dialog = shell.history_dock.comment_dialog
    assert dialog is not None
    return dialog


def top_titles(vm: HistoryViewModel) -> list[str]:
    return [vm.model.item(r).text() for r in range(vm.model.rowCount())]


def pick(shell: RelayShell, qtbot: QtBot, key: str) -> None:
    vm = shell.history_vm
    assert shell.history_dock.select_key(key), key
    assert vm.selected_key == key
    node = vm.node(key)
    assert node is not None
    qtbot.waitUntil(lambda: vm.diff_title != "" and node.source == vm.source
                    and not shell.bridge.tasks.pending, timeout=10_000)


def added_lines(shell: RelayShell) -> set[str]:
    return {ln.text for f in shell.history_dock.diff.rows.files for h in f.hunks
            for ln in h.lines if ln.kind == "add"}


def refs(repo: Path) -> dict[str, str]:
    git = pygit2.Repository(str(repo))
    return {name: str(git.references[name].target) for name in git.references
            if not name.startswith("refs/remotes")}


def test_the_dock_shows_each_agents_stint_and_what_it_changed(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    session_id = run_handoff(shell, qtbot, git_repo)
    vm = open_history(shell, qtbot)
    assert vm.session_id == session_id
    titles = top_titles(vm)
    assert titles[:3] == ["Whole session", "1 · demo:primary — handed off → demo:backup",
                          "2 · demo:backup — completed"]
    first, second = vm.model.item(1), vm.model.item(2)
    kids = [first.child(r).text() for r in range(first.rowCount())]
    assert any("demo:primary started" in k for k in kids)
    assert any("Handoff demo:primary → demo:backup: done" in k for k in kids)
    assert any("●" in k for k in kids)  # its commits
    assert second.rowCount() > 0
    dock = shell.history_dock
    assert dock.title.text().startswith("add a greeting — completed · relay/")

    pick(shell, qtbot, "stint:0")
    files = dock.diff.rows.files
    assert [(f.path, f.status) for f in files] == [("RELAY_DEMO_NOTES.md", "added")]
    assert dock.diff_title.text().startswith("What demo:primary changed (stint 1:")
    by_primary = added_lines(shell)
    pick(shell, qtbot, "stint:1")
    assert [(f.path, f.status) for f in dock.diff.rows.files] == [
        ("RELAY_DEMO_NOTES.md", "modified")]
    by_backup = added_lines(shell)
    assert by_primary
    assert by_backup
    assert not by_primary & by_backup  # each stint shows its own agent's work
    pick(shell, qtbot, "session")
    assert added_lines(shell) == by_primary | by_backup
    assert dock.diff.files.summary.startswith("1 file · +")
    assert vm.timeline is not None
    sha = next(e.sha for e in vm.timeline.entries if e.kind == "commit" and e.sha)
    pick(shell, qtbot, f"commit:{sha}")
    assert dock.diff_title.text().startswith(f"Commit {sha[:10]} — ")


def test_a_pre_emptive_handoff_reads_as_handed_off_not_cancelled(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    run_handoff(shell, qtbot, git_repo, preempt=True)
    vm = open_history(shell, qtbot)
    first = vm.model.item(1)
    assert first.text() == "1 · demo:primary — handed off (pre-emptive) → demo:backup"
    assert first.foreground().color() != QColor(theme.ERROR)
    kids = [first.child(r) for r in range(first.rowCount())]
    assert not any("cancelled" in k.text() for k in kids)
    assert not any(k.foreground().color() == QColor(theme.ERROR) for k in kids)


def test_rewind_here_makes_a_branch_and_moves_nothing(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    run_handoff(shell, qtbot, git_repo)
    vm = open_history(shell, qtbot)
    first_commit = next(e for e in vm.timeline.entries if e.kind == "commit" and e.stint == 0) \
        if vm.timeline else None
    assert first_commit is not None
    assert first_commit.sha is not None
    pick(shell, qtbot, f"commit:{first_commit.sha}")
    dock = shell.history_dock
    assert dock.rewind_button.isEnabled()
    before = refs(git_repo)
    dock.rewind_button.click()
    qtbot.waitUntil(lambda: vm.message[0].startswith("Made branch"), timeout=10_000)
    after = refs(git_repo)
    new = set(after) - set(before)
    assert new == {f"refs/heads/relay/rewind-{first_commit.sha[:10]}"}
    assert after[new.pop()] == first_commit.sha
    assert {k: after[k] for k in before} == before  # every existing ref where it was
    assert f"relay/rewind-{first_commit.sha[:10]}" in dock.message.text()
    assert dock.message.isVisible()


def test_continue_from_here_starts_a_session_and_shows_it(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    session_id = run_handoff(shell, qtbot, git_repo)
    vm = open_history(shell, qtbot)
    pick(shell, qtbot, "stint:0")
    assert vm.rewind_sha is not None
    shell.history_dock.continue_button.click()
    qtbot.waitUntil(lambda: shell.stream_vm.session_id not in (None, session_id),
                    timeout=10_000)
    new_id = shell.stream_vm.session_id
    assert "Started session" in vm.message[0]
    assert new_id is not None
    assert new_id in vm.message[0] or vm.session_id == new_id
    qtbot.waitUntil(lambda: shell.sessions_dock.selected_id() == new_id, timeout=10_000)
    qtbot.waitUntil(lambda: vm.session_id == new_id, timeout=5_000)  # the dock follows it
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.finished, timeout=30_000)


def test_a_comment_on_a_line_is_sent_and_shown(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    session_id = run_handoff(shell, qtbot, git_repo)
    vm = open_history(shell, qtbot)
    pick(shell, qtbot, "stint:1")
    diff = shell.history_dock.diff
    layout = diff.rows.layout
    line = next(i for i, r in enumerate(layout.rows) if r.kind == "line"
                and r.new is not None and r.new.kind == "add")
    diff.table.go_to(line)
    diff.request_comment()
    dialog = shell.history_dock.comment_dialog
    assert dialog is not None
    assert dialog.path == "RELAY_DEMO_NOTES.md"
    assert not dialog.send.isEnabled()
    # the session has finished: the dialog says that sending runs the agent again
    assert dialog.cost.isVisibleTo(dialog)
    assert "starts a new run of demo:backup" in dialog.cost.text()
    assert "billable" in dialog.cost.text()
    assert dialog.send.text() == "Start a new run"
    assert dialog.queue is not None
    dialog.body.setPlainText("Say who wrote this line.")
    dialog.send.click()
    # the session had finished: the comment goes to its agent at once (a new run)
    qtbot.waitUntil(lambda: any(c.state == "sent" for c in vm.comments), timeout=15_000)
    comment = vm.comments[0]
    assert (comment.session_id, comment.body) == (session_id, "Say who wrote this line.")
    assert comment.line == layout.rows[line].new.new_no  # type: ignore[union-attr]
    at = next(i for i, r in enumerate(diff.rows.layout.rows) if r.comment is not None)
    assert diff.rows.index(at, 0).data() == "[sent] Say who wrote this line."
    assert "sent to the agent" in vm.message[0]
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "completed"
                    and not shell.bridge.is_running_here(session_id), timeout=30_000)


def test_a_comment_on_a_finished_session_can_wait_for_its_next_run(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None, arun: Runner) -> None:
    session_id = run_handoff(shell, qtbot, git_repo)
    vm = open_history(shell, qtbot)
    pick(shell, qtbot, "stint:1")
    runs_before = len(arun(shell.engine.runs(session_id)))
    dialog = comment_on_an_added_line(shell)
    assert dialog.queue is not None
    assert not dialog.queue.isEnabled()
    dialog.body.setPlainText("Name the file in the heading.")
    dialog.queue.click()
    qtbot.waitUntil(lambda: any(c.state == "queued" for c in vm.comments), timeout=10_000)
    assert "goes with the session's next run" in vm.message[0]
    assert not shell.bridge.is_running_here(session_id)
    assert len(arun(shell.engine.runs(session_id))) == runs_before  # nothing ran
    # an engine opening does not start it either: it waits for the next run
    assert session_id not in arun(shell.engine.inbox.pending_sessions())
    # the next message continues the session, and the comment goes with it
    arun(shell.engine.talk.say(session_id, "Go on, please."))
    qtbot.waitUntil(lambda: arun(shell.engine.review.comments(session_id))[0].state == "sent",
                    timeout=15_000)
    qtbot.waitUntil(lambda: not shell.bridge.is_running_here(session_id), timeout=30_000)
    assert len(arun(shell.engine.runs(session_id))) == runs_before + 1


def test_finish_shows_the_summary_and_merges(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    run_handoff(shell, qtbot, git_repo)
    vm = open_history(shell, qtbot)
    dock = shell.history_dock
    qtbot.waitUntil(dock.finish_button.isEnabled)
    with qtbot.waitSignal(vm.summaryReady, timeout=10_000):
        dock.finish_button.click()
    dialog = dock.finish_dialog
    assert dialog is not None
    assert dialog.files.rowCount() == 1
    assert dialog.files.item(0, 0).text() == "RELAY_DEMO_NOTES.md"
    assert dialog.files.item(0, 2).text().startswith("+")
    assert dialog.merge.text() == "Merge into main"
    assert dialog.merge.isEnabled(), dialog.why_not.text()
    text = dialog.findChild(PlainLabel, "finishSummary")
    assert text is not None
    assert "demo:primary —" in text.text()
    assert "demo:backup —" in text.text()
    dialog.merge.click()
    qtbot.waitUntil(lambda: vm.message[0].startswith("Merged"), timeout=10_000)
    main = pygit2.Repository(str(git_repo)).revparse_single("main").peel(pygit2.Commit)
    assert "RELAY_DEMO_NOTES.md" in main.tree
    # merged: nothing more to finish, and the button says why
    qtbot.waitUntil(lambda: not dock.finish_button.isEnabled(), timeout=10_000)
    assert vm.timeline is not None
    assert vm.timeline.merged
    assert dock.finish_button.toolTip().startswith("Already merged into main")


def test_a_comment_while_the_agent_works_is_queued_then_sent(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None, arun: Runner) -> None:
    session_id = run_handoff(shell, qtbot, git_repo)
    vm = open_history(shell, qtbot)
    pick(shell, qtbot, "stint:1")
    shell.engine.config = load_config(demo_step_delay=0.3)  # a slow next run: busy agent
    arun(shell.engine.continue_session(session_id, "keep going"))
    assert shell.bridge.is_running_here(session_id)
    qtbot.waitUntil(lambda: not shell.bridge.tasks.pending, timeout=10_000)
    dialog = comment_on_an_added_line(shell)
    diff = shell.history_dock.diff
    dialog.body.setPlainText("Keep the list short.")
    dialog.send.click()

    def shown(state: str) -> bool:
        rows = diff.rows
        return any(rows.index(i, 0).data() == f"[{state}] Keep the list short."
                   for i in range(rows.rowCount()))

    # the agent is in a turn: the comment waits, and the dock says so
    qtbot.waitUntil(lambda: shown("queued"), timeout=10_000)
    assert "the agent gets it when its turn ends" in vm.message[0]
    assert shell.bridge.is_running_here(session_id)
    # the turn ends, the comment is the next instruction: the dock follows by itself
    qtbot.waitUntil(lambda: shown("sent"), timeout=30_000)
    qtbot.waitUntil(lambda: not shell.bridge.is_running_here(session_id), timeout=30_000)
