"""Python's cyclic garbage collector runs on the GUI thread only, while the window lives.

The collector runs in whichever thread happens to allocate past its threshold — often one
of the worker threads that read files, validate pipelines or scan usage. A Qt wrapper that
is only reachable from a reference cycle is then destroyed in that thread, and a QObject
destroyed outside its own thread aborts the process ("QObject::~QObject: Timers cannot be
stopped from another thread", then a crash). So while the window runs, automatic
collection is off and a timer on the GUI thread collects whenever the counts pass the
thresholds automatic collection would have used; :meth:`stop` gives collection back.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

#: how often the GUI thread looks at the collector's counts
CHECK_MS = 500


class MainThreadCollector(QObject):
    """Automatic collection off; a GUI-thread timer collects what it would have."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(CHECK_MS)
        self._timer.timeout.connect(self.check)
        self._was_enabled = gc.isenabled()

    def start(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        gc.collect()  # here, on the GUI thread, before other threads may collect again
        if self._was_enabled:
            gc.enable()

    def check(self) -> int:
        """Collect the oldest generation whose count passed its threshold; how many
        objects were unreachable (0 when nothing was due)."""
        counts, limits = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > limits[generation]:
                return gc.collect(generation)
        return 0
