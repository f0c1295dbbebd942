"""The floor of the start-up benchmark: a bare PySide6 main window, no Relay code.

A ``QMainWindow`` with a menu bar, a toolbar, a status bar and ``--docks`` dock widgets
(default 9, as many as Relay's window: sessions, live stream, handoff, wallet, detect,
knowledge, board, pipelines and history), each holding a label, shown at Relay's default
size (1360×860, fitted to the screen). It stays open until killed (or ``--quit-after``
seconds).

Run by ``bench_startup.py``; also frozen by it with ``--freeze-floor``.
"""

from __future__ import annotations

import argparse
import sys

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget, QLabel, QMainWindow, QTextEdit


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docks", type=int, default=9)
    parser.add_argument("--quit-after", type=float, default=0.0)
    args = parser.parse_args()
    app = QApplication(sys.argv[:1])
    window = QMainWindow()
    window.setWindowTitle("Floor")
    window.menuBar().addMenu("File").addAction("Quit", app.quit)
    window.addToolBar("Main").addAction("New")
    window.statusBar().showMessage("ready")
    window.setCentralWidget(QTextEdit())
    for index in range(args.docks):
        dock = QDockWidget(f"Dock {index}")
        dock.setObjectName(f"dock{index}")
        dock.setWidget(QLabel(f"dock {index}"))
        area = Qt.DockWidgetArea.LeftDockWidgetArea if index % 2 else Qt.DockWidgetArea.RightDockWidgetArea
        window.addDockWidget(area, dock)
    screen = app.primaryScreen().availableGeometry()  # as Relay's window fits itself
    window.resize(min(1360, screen.width()), min(860, screen.height()))
    window.show()
    if args.quit_after:
        QTimer.singleShot(int(args.quit_after * 1000), app.quit)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
