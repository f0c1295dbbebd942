"""Python's cyclic garbage collector runs on the GUI thread only, while the window lives,
and its long pauses only when the window is quiet.

The collector runs in whichever thread happens to allocate past its threshold — often one
of the worker threads that read files, validate pipelines or scan usage. A Qt wrapper that
is only reachable from a reference cycle is then destroyed in that thread, and a QObject
destroyed outside its own thread aborts the process ("QObject::~QObject: Timers cannot be
stopped from another thread", then a crash). So while the window runs, automatic
collection is off and a timer on the GUI thread collects; :meth:`stop` gives collection
back.

A collection walks every object of its generation and of the younger ones. Under a burst
nearly every new object (the records shown) survives, so CPython's own policy walks the same
survivors again and again: a generation-1 collection took 50–650 ms and a full one 100–500
ms in ``benchmarks/gui_burst``, the loop frozen all along; and the window makes few cycles
(a 20,000-event burst left 82 unreachable objects). So the timer

* collects the youngest generation — the last :data:`CHECK_MS` of allocations, short —
  whenever it is due (the young threshold passed), and freezes what survived
  (:func:`gc.freeze`): every object is walked once, young, and never again;
* once the window is *settled* — :data:`SETTLED_CHECKS` checks in a row (5 s) that found
  fewer new objects than the young threshold — sweeps everything (unfreeze, full collection,
  freeze: what start-up built is frozen from then on), and again once settled after there
  are :data:`SWEEP_GROWTH` times as many frozen objects as after the last sweep, so cycles
  that became garbage after they were frozen are collected in the end. A sweep walks the
  whole heap (0.2 s idle, over a second on a loaded machine with two long sessions shown):
  it waits for the window to have nothing to do, and comes about every other 20,000-event
  burst;
* before that first sweep collects like CPython (the older generations when due and quiet —
  :data:`QUIET_CHECKS` idle checks in a row — or :data:`OVERDUE` times overdue while busy).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

#: how often the GUI thread looks at the collector's counts: often enough that a young
#: collection stays short (its pause grows with what it walks)
CHECK_MS = 50
#: idle checks in a row that make the process quiet (older generations are collected then)
QUIET_CHECKS = 10
#: idle checks in a row that make the window settled (a sweep due runs then)
SETTLED_CHECKS = 100
#: a busy process still collects an older generation once it is this many times overdue
OVERDUE = 10
#: the frozen objects are swept once they are this many times as many as after the last sweep
SWEEP_GROWTH = 2.0


class MainThreadCollector(QObject):
    """Automatic collection off; a GUI-thread timer collects the young generation when due
    and the older ones when the process is quiet (or they are overdue)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(CHECK_MS)
        self._timer.timeout.connect(self.check)
        self._was_enabled = gc.isenabled()
        self._idle_checks = 0
        self._swept: int | None = None  # frozen objects after the last sweep (None: no sweep yet)
        self._looked = False  # this settled spell was looked at (a sweep due or not)

    def start(self) -> None:
        self._was_enabled = gc.isenabled()
        self._idle_checks, self._swept, self._looked = 0, None, False
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        if self._swept is not None:  # this collector froze objects: give them back
            gc.unfreeze()
            self._swept = None
        gc.collect()  # here, on the GUI thread, before other threads may collect again
        if self._was_enabled:
            gc.enable()

    @property
    def quiet(self) -> bool:
        """The last :data:`QUIET_CHECKS` checks found little new."""
        return self._idle_checks >= QUIET_CHECKS

    @property
    def settled(self) -> bool:
        """The last :data:`SETTLED_CHECKS` checks found little new (a sweep due has run)."""
        return self._idle_checks >= SETTLED_CHECKS

    def check(self) -> int:
        """Collect what is due (see the module's note); how many objects were unreachable
        (0 when nothing was due)."""
        counts, limits = gc.get_count(), gc.get_threshold()
        idle = counts[0] <= limits[0]
        self._idle_checks = self._idle_checks + 1 if idle else 0
        if not self.settled:
            self._looked = False
        elif not self._looked:
            self._looked = True
            # counting walks the frozen list (~2.5 ms a million objects): once a settled spell
            if self._swept is None or gc.get_freeze_count() >= self._swept * SWEEP_GROWTH:
                gc.unfreeze()
                found = gc.collect()
                gc.freeze()
                self._swept = gc.get_freeze_count()
                return found
        if self._swept is None:  # not swept yet: CPython's generations
            factor = 1 if self.quiet else OVERDUE
            for generation in (2, 1):
                if counts[generation] > limits[generation] * factor:
                    return gc.collect(generation)
        if idle:
            return 0
        found = gc.collect(0)
        if self._swept is not None:
            gc.freeze()  # the survivors are never walked again (until a sweep)
        return found
