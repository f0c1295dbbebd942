"""The new-session dialog says which instruction files the repository has, and how they go."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from relay.gui.new_session_dialog import NewSessionDialog
from relay.runtimes.base import RuntimeInfo
from tests.conftest import make_repo


def test_the_instructions_line_follows_repository_and_runtime(qtbot: QtBot, qapp: object,
                                                              tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "a\n", "CLAUDE.md": "c\n"})
    dialog = NewSessionDialog([RuntimeInfo("codex", "/usr/bin/codex", "0.171.0"),
                               RuntimeInfo("claude", "/usr/bin/claude", "2.1.197")])
    qtbot.addWidget(dialog)
    assert dialog.instructions.isHidden()  # no repository chosen yet
    dialog.repo.setText(str(repo))
    assert dialog.instructions.text() == (
        "Instructions: AGENTS.md (read by codex), CLAUDE.md (passed on).")
    dialog.runtime.setCurrentIndex(dialog.runtime.findData("claude"))
    assert dialog.instructions.text() == (
        "Instructions: CLAUDE.md (read by claude), AGENTS.md (passed on).")
    dialog.repo.setText(str(make_repo(tmp_path / "bare")))
    assert dialog.instructions.text().startswith("No instruction files")
