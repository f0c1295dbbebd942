"""A handoff chain chosen in the dialog, and a handoff followed live in the window."""

from __future__ import annotations

import itertools
from pathlib import Path

from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.gui.new_session_dialog import NewSessionDialog
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream import StreamViewModel
from relay.runtimes.base import RuntimeInfo

INFOS = [RuntimeInfo("demo", "(built in)", "scripted demo"),
         RuntimeInfo("codex", "/usr/bin/codex", "0.171.0")]


def test_the_dialog_builds_the_handoff_chain(qtbot: QtBot, qapp: object, git_repo: Path) -> None:
    missing = RuntimeInfo("claude", None, None, problem="The claude CLI is not installed.")
    dialog = NewSessionDialog([missing, *INFOS],
                              entries=["claude", "claude:work", "demo", "demo:backup", "codex"])
    qtbot.addWidget(dialog)
    dialog.repo.setText(str(git_repo))
    dialog.task.setPlainText("t")
    dialog.runtime.setCurrentIndex(dialog.runtime.findData("demo"))
    picker = dialog.fallbacks
    # picked from a menu, installed first; a missing runtime's entries shown, not pickable
    menu = [(a.text(), a.isEnabled()) for a in picker.menu.actions()]
    assert menu == [("demo", True), ("demo:backup", True), ("codex", True),
                    ("claude (not installed)", False), ("claude:work (not installed)", False)]
    assert "not installed" in picker.menu.actions()[3].toolTip()
    for name in ("demo:backup", "codex"):
        next(a for a in picker.menu.actions() if a.data() == name).trigger()
    assert picker.shown.text() == "demo:backup → codex"
    assert not next(a for a in picker.menu.actions() if a.data() == "codex").isEnabled()
    spec = dialog.build_spec()
    assert spec.chain == ["demo", "demo:backup", "codex"]
    picker.set_chain(["claude:work", "codex"])  # a missing runtime's entry is left out
    assert dialog.build_spec().chain == ["demo", "codex"]
    picker.clear.click()
    assert dialog.build_spec().chain == []
    assert picker.shown.text().startswith("nobody")


def test_a_handoff_is_shown_live_and_the_session_completes(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=git_repo, task="t", chain=["demo", "demo:backup"],
                                        demo_limit_after=1))
    assert started.args is not None
    session_id = started.args[0]
    vm = shell.stream_vm
    qtbot.waitUntil(lambda: vm.session is not None and vm.session.state == "completed",
                    timeout=20_000)
    rows = [vm.index(i, 0) for i in range(vm.rowCount())]
    badges = [r.data(StreamViewModel.BadgeRole) for r in rows]
    # strict order: the receiver's first event is not shown before the handoff's last step
    seconds = [sum(int(p) * f for p, f in zip(str(r.data(StreamViewModel.TimeRole)).split(":"),
                                              (3600, 60, 1), strict=True)) for r in rows]
    assert all((b - a) % 86400 < 3600 for a, b in itertools.pairwise(seconds))  # (midnight)
    # the handoff is one neutral block: no red ERROR, END failed or LIMIT row before it
    assert badges.count("HANDOFF") == 1
    assert "ERROR" not in badges
    assert "LIMIT" not in badges
    assert badges.count("END") == 1  # the session's own end, after the block
    block = rows[badges.index("HANDOFF")]
    assert badges.index("HANDOFF") < badges.index("END")
    assert block.data(StreamViewModel.StyleRole) == "handoff"
    assert not block.data(StreamViewModel.IsErrorRole)
    lines = dict(block.data(StreamViewModel.BlockRole))
    assert lines["Handoff"] == "demo → demo:backup · done"
    assert lines["Why"].startswith("usage limit")
    assert lines["Paused at"].startswith("commit ")
    assert "contract signed" in lines["Contract"]
    assert lines["Receiver"].startswith("demo:backup")
    assert "Why: usage limit" in str(block.data(StreamViewModel.TextRole))
    # folded; unfolded, it holds the six steps and how the paused run ended
    assert not block.data(StreamViewModel.ExpandedRole)
    assert vm.toggle(block.row())
    nested = [vm.index(block.row() + 1 + i, 0)
              for i in range(int(block.data(StreamViewModel.ChildCountRole)))]
    kinds = [i.data(StreamViewModel.KindRole) for i in nested]
    assert kinds.count("handoff_step") == 6
    assert {"limit_hit", "error", "session_ended"} <= set(kinds)
    assert all(i.data(StreamViewModel.DepthRole) == 1 for i in nested)
    assert vm.session_id == session_id
