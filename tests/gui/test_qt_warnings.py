"""The GUI suite's own guard: a Qt warning fails the test that emitted it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import qWarning

from tests.gui.conftest import QtWarningRecorder

pytest_plugins = ["pytester"]


def test_a_qt_warning_is_recorded(qt_warnings: QtWarningRecorder) -> None:
    qWarning("relay-test: something is off")
    assert qt_warnings.take() == ["QtWarningMsg [default]: relay-test: something is off"]


def test_a_qt_warning_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest("pytest_plugins = ['tests.gui.conftest']\n")
    pytester.makepyfile(test_warns="""
        from PySide6.QtCore import qWarning

        def test_warns(qapp):
            qWarning("relay-test: boom")

        def test_quiet(qapp):
            pass
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*The test emitted Qt warnings*", "*relay-test: boom*"])
