"""The Wallet's plots over an in-memory wallet: each window's use with its limit, reset and
forecast; the burn; the cost per day with the budget; fed only while in sight; themed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from PySide6.QtCharts import QLineSeries
from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.docks.wallet_dock import AccountCard, WalletDock
from relay.gui.viewmodels.wallet import WalletViewModel
from relay.gui.wallet_charts import AccountPlots, WindowChart
from tests.gui.conftest import Runner
from tests.gui.wallet_fakes import HOUR, MIN, NOW, FakeWallet, codex_key, history, personal, work


@pytest.fixture
def wallet() -> FakeWallet:
    return FakeWallet([work(), personal(), codex_key()])


@pytest.fixture
def dock(engine: Engine, wallet: FakeWallet, arun: Runner, qtbot: QtBot) -> Iterator[WalletDock]:
    bridge = EngineBridge(engine)
    vm = WalletViewModel(bridge, wallet, clock=lambda: NOW)
    dock = WalletDock(vm)
    qtbot.addWidget(dock)
    dock.resize(560, 900)
    dock.show()
    vm.refresh()
    qtbot.waitUntil(lambda: len(dock.cards) == 3 and all(
        c.plots is not None and c.plots.shown for c in dock.cards.values()), timeout=5000)
    yield dock
    vm.stop()
    arun(bridge.aclose())


def plots(dock: WalletDock, entry: str) -> AccountPlots:
    """The card's plots with every tab drawn (only the tab in sight draws by itself)."""
    found = dock.cards[entry].plots
    assert found is not None
    found.draw_all()
    return found


def points(series: QLineSeries) -> list[tuple[float, float]]:
    return [(p.x(), round(p.y(), 6)) for p in series.points()]


def test_the_window_starts_the_app_without_qt_charts() -> None:
    # QtCharts is imported when a card's plots first come into sight, not at start-up
    code = ("import sys; import relay.gui.shell, relay.gui.docks.wallet_dock; "
            "print('PySide6.QtCharts' in sys.modules, 'relay.gui.wallet_charts' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["False", "False"]


def test_a_window_shows_its_use_limit_reset_and_forecast(dock: WalletDock) -> None:
    shown = plots(dock, "claude:work")
    assert [shown.tabText(i) for i in range(shown.count())] == [
        "5-hour", "7-day", "Burn", "Cost per day"]
    assert shown.currentIndex() == 0
    five = shown.windows["five_hour"]
    want = history().windows[0]
    assert want.resets_at_ms is not None
    assert want.start_ms is not None
    assert points(five.lines["used"]) == [(float(t), round(v * 100, 6)) for t, v in want.points]
    assert points(five.lines["limit"]) == [(want.start_ms, 100.0), (want.resets_at_ms, 100.0)]
    reset = points(five.lines["reset"])
    assert [x for x, _ in reset] == [want.resets_at_ms] * 2
    # the forecast: from the newest reading (42 % now) to the reset at the card's ≈71 %
    assert points(five.lines["forecast"]) == [(NOW, 42.0), (want.resets_at_ms, 71.0)]
    assert five.lines["forecast"].name() == "forecast (high)"
    assert five.toolTip() == "Forecast: ≈71% at reset (high confidence)"
    assert five.x_axis.min().toMSecsSinceEpoch() == want.start_ms
    assert five.x_axis.max().toMSecsSinceEpoch() == want.resets_at_ms


def test_a_window_that_runs_out_is_forecast_to_the_wall_not_past_it(dock: WalletDock) -> None:
    five = plots(dock, "codex:ci").windows["five_hour"]
    line = points(five.lines["forecast"])
    assert line[-1] == (float(NOW + 20 * MIN), 100.0)  # the run-out, at the limit
    assert max(y for _, y in line) <= 100.0
    assert five.toolTip().startswith("Forecast: runs out ~")


def test_a_window_without_a_known_limit_plots_tokens_and_no_limit_line(
        dock: WalletDock) -> None:
    seven = plots(dock, "claude:work").windows["seven_day"]
    assert points(seven.lines["used"]) == [(NOW - 48 * HOUR, 1.0), (NOW - HOUR, 3.0)]
    assert seven.y_axis.titleText() == "M tokens (no limit known)"
    assert seven.lines["limit"].count() == 0
    assert seven.lines["forecast"].count() == 0
    assert seven.lines["used"].name() == "tokens counted"


def test_nothing_projected_draws_no_forecast(dock: WalletDock) -> None:
    five = plots(dock, "claude:personal").windows["five_hour"]
    assert five.lines["forecast"].count() == 0
    assert five.lines["used"].count() == 7  # the readings still show


def test_burn_and_cost_per_day_with_the_budget(dock: WalletDock) -> None:
    shown = plots(dock, "claude:work")
    want = history()
    steps = points(shown.burn.lines["burn"])
    assert len(steps) == 2 * len(want.burn)
    assert {y for _, y in steps} == {tpm for _, tpm in want.burn}
    assert steps[-1][0] == NOW
    cost = shown.cost
    assert [cost.set.at(i) for i in range(cost.set.count())] == [d.cost.value for d in want.days]
    assert cost.x_axis.count() == 14
    budget = points(cost.lines["budget"])
    assert [y for _, y in budget] == [5.0, 5.0]
    assert cost.lines["budget"].name() == "day budget $5.00 (this account)"
    assert cost.y_axis.max() >= 6.5  # the highest day ($6.50) is in sight


def test_only_the_tab_in_sight_is_drawn_until_another_is_chosen(dock: WalletDock,
                                                                 qtbot: QtBot) -> None:
    shown = dock.cards["claude:work"].plots
    assert shown is not None
    assert shown.currentIndex() == 0
    assert shown.windows["five_hour"].lines["used"].count() == 7
    assert shown.cost.set.count() == 0  # not in sight: not drawn yet
    shown.setCurrentWidget(shown.cost)
    assert shown.cost.set.count() == 14
    # new series: the tab in sight at once, the others when chosen
    shown.show_history(work(), history())
    assert shown.cost.set.count() == 14
    assert shown.burn.lines["burn"].count() == 0
    shown.setCurrentWidget(shown.burn)
    assert shown.burn.lines["burn"].count() == 40


def test_plots_are_fed_only_while_in_sight(dock: WalletDock, wallet: FakeWallet,
                                           qtbot: QtBot) -> None:
    def idle() -> bool:
        return dock.vm._bridge.tasks.pending == 0

    card: AccountCard = dock.cards["claude:work"]
    card.plots_button.setChecked(False)
    assert not plots(dock, "claude:work").isVisibleTo(dock)
    dock.hide()
    qtbot.waitUntil(idle, timeout=5000)
    before = len(wallet.histories)
    reads = wallet.summaries
    dock.vm.refresh()
    qtbot.waitUntil(lambda: wallet.summaries > reads and idle(), timeout=5000)
    assert len(wallet.histories) == before  # hidden: no series read
    dock.show()
    qtbot.waitUntil(lambda: len(wallet.histories) > before, timeout=5000)
    assert "claude:work" not in wallet.histories[before:]  # its plots are switched off
    card.plots_button.setChecked(True)
    qtbot.waitUntil(lambda: "claude:work" in wallet.histories[before:], timeout=5000)
    assert plots(dock, "claude:work").isVisibleTo(dock)


def _contrast(fg: QColor, bg: QColor) -> float:
    def lum(c: QColor) -> float:
        def ch(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF())
    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


DARK = {"TEXT": "#e6edf3", "MUTED": "#9198a1", "ACCENT": "#4493f8", "ERROR": "#f85149",
        "WARNING": "#d29922", "CHART_BG": "#0d1117", "CHART_GRID": "#30363d"}


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_the_plots_take_the_themes_colours_and_stay_readable(
        dock: WalletDock, monkeypatch: pytest.MonkeyPatch, palette: str) -> None:
    if palette == "dark":
        for name, value in DARK.items():
            monkeypatch.setattr(theme, name, value)
    shown = plots(dock, "claude:work")
    shown.restyle()
    bg = QColor(theme.CHART_BG)
    for chart in shown.charts():
        assert chart.chart_.backgroundBrush().color() == bg
        assert chart.chart_.legend().labelColor() == QColor(theme.TEXT)
        for axis in chart.chart_.axes():
            assert axis.labelsColor() == QColor(theme.TEXT)
            assert _contrast(axis.labelsColor(), bg) >= 4.5
    five: WindowChart = shown.windows["five_hour"]
    assert five.lines["used"].pen().color() == QColor(theme.ACCENT)
    assert five.lines["limit"].pen().color() == QColor(theme.ERROR)
    assert five.lines["forecast"].pen().color() == QColor(theme.WARNING)
    for role in ("ACCENT", "ERROR", "WARNING"):  # lines stand out from the background
        assert _contrast(QColor(getattr(theme, role)), bg) >= 3.0
