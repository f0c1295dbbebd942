"""A guard against a reference-counting bug of PySide6 6.12 on CPython 3.11.

PySide6 6.12.0 returns ``None`` from void methods (``QLabel.setText``,
``beginInsertRows``, ``QTimer.start`` …, and Python overrides that return
``None`` to C++, such as ``data()`` for an unknown role) and ``True`` from
``Signal.emit`` without taking a reference, so every such call leaves the
singleton one reference short (6.11 does not). From CPython 3.12 on these
singletons are immortal and the missing references do not matter; on 3.11
the deficit grows with use until a count drops to zero and the interpreter
aborts — ``Fatal Python error: none_dealloc`` (``bool_dealloc`` for
``True``), typically while it finalizes, after a 20,000-event stream already.

:func:`protect_singletons` gives ``None``, ``True`` and ``False`` what 3.12
gives them: a reference count so large that no realistic deficit reaches zero.
Call it once, before the GUI starts.
"""

from __future__ import annotations

import ctypes
import sys

#: added to each singleton's count; immortal objects in CPython 3.12 start near 2**32.
MARGIN = 1 << 40
#: references that come and go while the counts are read and checked.
_SLACK = 16


def protect_singletons() -> bool:
    """Raise the reference counts of None, True and False by :data:`MARGIN` (once).

    Returns whether the counts were raised; nothing is done where the
    singletons are immortal already (CPython ≥ 3.12) or the object layout is
    not the one expected (the change is checked and undone otherwise).
    """
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12):
        return False
    raised = False
    for singleton in (None, True, False):
        count = ctypes.c_ssize_t.from_address(id(singleton))  # ob_refcnt: PyObject's 1st field
        before = sys.getrefcount(singleton)
        if abs(count.value - before) > _SLACK or before >= MARGIN:
            continue  # not the layout expected (e.g. a trace-refs build), or raised before
        count.value += MARGIN
        if abs(sys.getrefcount(singleton) - before - MARGIN) > _SLACK:
            count.value -= MARGIN
            continue
        raised = True
    return raised
