"""Closing and quitting a window that hosts: the question Quit asks, and the headless end.

Closing the window hides it to the tray; sessions go on. *Quit* with sessions running asks
(:func:`ask_quit`): keep them running — the process lets go of its window and tray and
stays on as a headless host until they end (:func:`until_idle`) — stop them (they end
interrupted and can be resumed), or cancel. The question is a non-modal box awaited on the
qasync loop (no nested event loop).
"""

from __future__ import annotations

import asyncio
import enum

from PySide6.QtWidgets import QMessageBox, QWidget

from relay.engine.engine import Engine

#: what the tray says the first time the window is closed
HIDDEN_TITLE = "Relay keeps running"
HIDDEN_TEXT = ("The window is hidden; every session goes on. Open it again from the tray "
               "icon; Quit is in its menu.")


class QuitChoice(enum.Enum):
    KEEP = "keep"
    STOP = "stop"
    CANCEL = "cancel"


def quit_question(running: int, parent: QWidget | None = None) -> QMessageBox:
    """The box Quit shows while ``running`` sessions run; its buttons carry a
    :class:`QuitChoice` in their ``choice`` property."""
    plural = "s" if running != 1 else ""
    # one session is "it", more are "they"
    it, ends, them = ("it", "ends", "it") if running == 1 else ("they", "end", "them")
    box = QMessageBox(QMessageBox.Icon.Question, "Quit Relay",
                      f"{running} session{plural} {'is' if running == 1 else 'are'} still "
                      "running.", parent=parent)
    box.setObjectName("quitQuestion")
    box.setInformativeText(
        f"Keep {them} running: Relay closes its window and goes on in the background until "
        f"{it} {ends} (a window opened meanwhile shows {them}). Stop {them}: {it} {ends} "
        f"interrupted; you can resume {them} later.")
    buttons = []
    for text, choice, role in (
            ("Keep running", QuitChoice.KEEP, QMessageBox.ButtonRole.AcceptRole),
            (f"Stop session{plural}", QuitChoice.STOP, QMessageBox.ButtonRole.DestructiveRole),
            ("Cancel", QuitChoice.CANCEL, QMessageBox.ButtonRole.RejectRole)):
        button = box.addButton(text, role)
        button.setObjectName(f"quit{choice.name.title()}")
        button.setProperty("choice", choice.value)
        buttons.append(button)
    box.setDefaultButton(buttons[0])
    box.setEscapeButton(buttons[-1])
    return box


async def ask_quit(box: QMessageBox) -> QuitChoice:
    """Open ``box`` and wait for the button the user picks (closing it: cancel)."""
    done: asyncio.Future[QuitChoice] = asyncio.get_running_loop().create_future()

    def _finished(_result: int) -> None:
        clicked = box.clickedButton()
        value = clicked.property("choice") if clicked is not None else None
        if not done.done():
            done.set_result(QuitChoice(value) if value else QuitChoice.CANCEL)

    box.finished.connect(_finished)
    box.open()
    try:
        return await done
    finally:
        box.finished.disconnect(_finished)
        box.deleteLater()


async def until_idle(engine: Engine) -> None:
    """Return once ``engine`` runs no session (those started meanwhile too)."""
    while running := engine.running_sessions():
        await asyncio.gather(*(engine.runner_stopped(s) for s in running))
