"""The Wallet's plots, one set per account (Qt Charts).

Imported only when an account's plots first come into sight (:mod:`relay.gui.docks.wallet_dock`
imports this module then), so a start-up that never shows the Wallet never loads QtCharts.

Per account, one tab each:

- every limit window (5-hour, 7-day, …): its use since the window began (official readings,
  else tokens over a learned limit, else counted tokens — then without a limit line), the
  limit at 100 %, the reset, and the forecast line from the newest reading to the run-out
  (or to the reset, at the bounded figure the card states);
- the burn: tokens per minute in 15-minute steps over the last five hours;
- the cost per day over the last two weeks, with the day budget that applies.

Colours are read from :mod:`relay.gui.theme` whenever a chart is styled (:meth:`restyle`).
"""

from __future__ import annotations

from datetime import date

from PySide6.QtCharts import (
    QAbstractAxis,
    QBarCategoryAxis,
    QBarSeries,
    QBarSet,
    QChart,
    QChartView,
    QDateTimeAxis,
    QLineSeries,
    QValueAxis,
)
from PySide6.QtCore import QDateTime, QMargins, QPointF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QTabWidget, QWidget

from relay.gui import theme
from relay.wallet import present as text
from relay.wallet.model import AccountHistory, AccountView, WindowHistory, WindowKind, WindowView

#: a chart's height: readable at 1024×700 without crowding the card
CHART_HEIGHT = 210


def _pen(colour: str, width: float = 2.0, style: Qt.PenStyle = Qt.PenStyle.SolidLine) -> QPen:
    pen = QPen(QColor(colour), width)
    pen.setStyle(style)
    return pen


class _Chart(QChartView):
    """A compact chart with a legend below and Relay's colours."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.chart_ = QChart()
        self.chart_.setMargins(QMargins(2, 2, 2, 2))
        self.chart_.setBackgroundRoundness(4)
        self.chart_.legend().setAlignment(Qt.AlignmentFlag.AlignBottom)
        small = QFont(self.font())
        small.setPointSizeF(max(small.pointSizeF() * 0.85, 7.0))
        self.chart_.legend().setFont(small)
        self.small = small
        self.setChart(self.chart_)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setFixedHeight(CHART_HEIGHT)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.lines: dict[str, QLineSeries] = {}

    def sizeHint(self) -> QSize:
        # a tab widget sizes itself by its pages' hints: every chart is one fixed height
        return QSize(super().sizeHint().width(), CHART_HEIGHT)

    def minimumSizeHint(self) -> QSize:
        return QSize(240, CHART_HEIGHT)

    def _line(self, key: str, axes: tuple[QAbstractAxis, QAbstractAxis]) -> QLineSeries:
        series = QLineSeries()
        series.setObjectName(key)
        self.chart_.addSeries(series)
        for axis in axes:
            series.attachAxis(axis)
        self.lines[key] = series
        return series

    def _axis(self, axis: QAbstractAxis, where: Qt.AlignmentFlag) -> None:
        axis.setLabelsFont(self.small)
        self.chart_.addAxis(axis, where)

    def restyle(self) -> None:
        """Apply the theme's colours (called at build time and when the theme changes)."""
        chart = self.chart_
        chart.setBackgroundBrush(QBrush(QColor(theme.CHART_BG)))
        chart.setTitleBrush(QBrush(QColor(theme.TEXT)))
        chart.legend().setLabelColor(QColor(theme.TEXT))
        for axis in chart.axes():
            axis.setLabelsColor(QColor(theme.TEXT))
            axis.setTitleBrush(QBrush(QColor(theme.MUTED)))
            axis.setGridLineColor(QColor(theme.CHART_GRID))
            axis.setLinePenColor(QColor(theme.CHART_GRID))
        for key, series in self.lines.items():
            series.setPen(self._pen_of(key))

    def _pen_of(self, key: str) -> QPen:
        return _pen(theme.ACCENT)

    @staticmethod
    def _points(series: QLineSeries, points: list[tuple[float, float]]) -> None:
        series.replace([QPointF(x, y) for x, y in points])


class WindowChart(_Chart):
    """One limit window: use, limit, reset and forecast over the window's span."""

    def __init__(self, kind: WindowKind, parent: QWidget | None = None) -> None:
        super().__init__(f"walletChart_{kind}", parent)
        self.kind = kind
        self.x_axis = QDateTimeAxis()
        self.x_axis.setFormat("HH:mm" if kind == "five_hour" else "ddd d")
        self.x_axis.setTickCount(6 if kind == "five_hour" else 8)
        self.y_axis = QValueAxis()
        self._axis(self.x_axis, Qt.AlignmentFlag.AlignBottom)
        self._axis(self.y_axis, Qt.AlignmentFlag.AlignLeft)
        axes = (self.x_axis, self.y_axis)
        for key in ("used", "limit", "reset", "forecast"):
            self._line(key, axes)
        self.restyle()

    def _pen_of(self, key: str) -> QPen:
        return {"used": _pen(theme.ACCENT, 2.5),
                "limit": _pen(theme.ERROR, 1.5, Qt.PenStyle.DashLine),
                "reset": _pen(theme.MUTED, 1.5, Qt.PenStyle.DotLine),
                "forecast": _pen(theme.WARNING, 2.0, Qt.PenStyle.DashLine)}[key]

    def show_window(self, history: WindowHistory, view: WindowView | None, now_ms: int) -> None:
        share = history.unit == "share"
        biggest = max((v for _, v in history.points), default=0.0)
        unit, scale = ("%", 100.0) if share else _token_scale(biggest)
        points = [(float(ts), v * scale) for ts, v in history.points]
        start = history.start_ms if history.start_ms is not None else (
            int(points[0][0]) if points else now_ms - 3_600_000)
        end = history.resets_at_ms or max(now_ms, start + 60_000)
        self._points(self.lines["used"], points)
        self.lines["used"].setPointsVisible(len(points) <= 24)  # dots only where they read
        self.lines["used"].setName("used" if share else "tokens counted")
        top = max([v for _, v in points], default=0.0)
        limit, reset, forecast = self.lines["limit"], self.lines["reset"], self.lines["forecast"]
        self._points(limit, [(start, 100.0), (end, 100.0)] if share else [])
        limit.setName("limit")
        y_max = max(110.0, top * 1.05) if share else max(top * 1.15, 1.0)
        self._points(reset, [(end, 0.0), (end, y_max)] if history.resets_at_ms else [])
        reset.setName(f"reset {text.clock_ms(end)}" if history.resets_at_ms else "reset unknown")
        line = forecast_line(view, now_ms) if share else []
        self._points(forecast, line)
        forecast.setName(forecast_name(view) if line else "no forecast")
        words = text.projected_text(view, now_ms) if view is not None else ""
        self.setToolTip(f"Forecast: {words} ({text.CONFIDENCE_TITLES[view.confidence]})"
                        if line and view is not None else "No forecast: too few readings")
        for series in (limit, reset, forecast):
            marker = self.chart_.legend().markers(series)
            if marker:
                marker[0].setVisible(series.count() > 0)
        self.x_axis.setRange(_datetime(start), _datetime(end))
        self.y_axis.setRange(0.0, y_max)
        if share:
            self.y_axis.setTickType(QValueAxis.TickType.TicksDynamic)
            self.y_axis.setTickAnchor(0.0)
            self.y_axis.setTickInterval(25.0)
        else:
            self.y_axis.setTickType(QValueAxis.TickType.TicksFixed)
            self.y_axis.applyNiceNumbers()
        self.y_axis.setLabelFormat("%.0f %%" if share else "%.3g")
        self.y_axis.setTitleText("" if share else f"{unit} (no limit known)")
        self.chart_.setTitle("" if points else "No readings in this window yet")


def forecast_line(view: WindowView | None, now_ms: int) -> list[tuple[float, float]]:
    """The forecast as two points (%, from the newest reading on): to the run-out at 100 %,
    or to the reset at the (bounded) projected share; none without a projection."""
    if view is None or view.used.value is None:
        return []
    anchor = float(view.projected.observed_ms or view.used.observed_ms or now_ms)
    used = view.used.value * 100
    if view.exhausts_at_ms is not None and view.exhausts_at_ms > anchor:
        return [(anchor, used), (float(view.exhausts_at_ms), 100.0)]
    if view.projected.value is not None and view.resets_at.value is not None:
        return [(anchor, used), (float(view.resets_at.value), min(view.projected.value, 1.0) * 100)]
    return []


def forecast_name(view: WindowView | None) -> str:
    """The forecast's legend, short enough for a narrow card: ``forecast (high)`` (the card's
    line above says where it leads, and the chart's tooltip)."""
    if view is None or view.confidence == "none":
        return "forecast"
    return f"forecast ({view.confidence})"


class BurnChart(_Chart):
    """Tokens per minute over the last five hours."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("walletChart_burn", parent)
        self.x_axis = QDateTimeAxis()
        self.x_axis.setFormat("HH:mm")
        self.x_axis.setTickCount(6)
        self.y_axis = QValueAxis()
        self.y_axis.setLabelFormat("%.0f")
        self.y_axis.setTitleText("tokens / min")
        self._axis(self.x_axis, Qt.AlignmentFlag.AlignBottom)
        self._axis(self.y_axis, Qt.AlignmentFlag.AlignLeft)
        self._line("burn", (self.x_axis, self.y_axis)).setName("burn, 15-minute steps")
        self.restyle()

    def show_burn(self, burn: list[tuple[int, float]], now_ms: int) -> None:
        steps: list[tuple[float, float]] = []
        for i, (ts, tpm) in enumerate(burn):  # a step per bucket
            end = burn[i + 1][0] if i + 1 < len(burn) else now_ms
            steps += [(float(ts), tpm), (float(end), tpm)]
        self._points(self.lines["burn"], steps)
        start = burn[0][0] if burn else now_ms - 5 * 3_600_000
        self.x_axis.setRange(_datetime(start), _datetime(now_ms))
        self.y_axis.setRange(0.0, max([v for _, v in burn], default=0.0) * 1.15 or 1.0)
        self.y_axis.applyNiceNumbers()
        self.chart_.setTitle("" if any(v for _, v in burn) else "No calls in the last five hours")


class CostChart(_Chart):
    """Cost per day over the last two weeks, with the day budget."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("walletChart_cost", parent)
        self.bars = QBarSeries()
        self.bars.setObjectName("cost")
        self.set = QBarSet("cost per day (USD)")
        self.bars.append(self.set)
        self.chart_.addSeries(self.bars)
        self.x_axis = QBarCategoryAxis()
        self.x_axis.setTitleText("day of the month, the last two weeks")
        self.y_axis = QValueAxis()
        self.y_axis.setLabelFormat("$%.2f")
        self._axis(self.x_axis, Qt.AlignmentFlag.AlignBottom)
        self._axis(self.y_axis, Qt.AlignmentFlag.AlignLeft)
        for axis in (self.x_axis, self.y_axis):
            self.bars.attachAxis(axis)
        self._line("budget", (self.x_axis, self.y_axis))
        self.restyle()

    def restyle(self) -> None:
        super().restyle()
        self.set.setColor(QColor(theme.ACCENT))
        self.set.setBorderColor(QColor(theme.ACCENT))
        self.set.setLabelColor(QColor(theme.TEXT))

    def _pen_of(self, key: str) -> QPen:
        return _pen(theme.ERROR, 1.5, Qt.PenStyle.DashLine)

    def show_costs(self, history: AccountHistory) -> None:
        days = history.days
        values = [d.cost.value or 0.0 for d in days]
        if self.set.count():
            self.set.remove(0, self.set.count())
        self.set.append(values)
        self.x_axis.clear()
        self.x_axis.append([_day_label(d.day) for d in days])
        budget = history.day_budget_usd
        line = self.lines["budget"]
        self._points(line, [(-0.5, budget), (len(days) - 0.5, budget)]
                     if budget is not None and days else [])
        whose = "all work" if history.day_budget_scope == "*" else "this account"
        line.setName(f"day budget {text.money(budget)} ({whose})" if budget is not None
                     else "no day budget")
        marker = self.chart_.legend().markers(line)
        if marker:
            marker[0].setVisible(line.count() > 0)
        top = max([*values, budget or 0.0], default=0.0)
        self.y_axis.setRange(0.0, top * 1.15 or 1.0)
        self.y_axis.applyNiceNumbers()
        self.chart_.setTitle("" if any(values) else "Nothing spent in the last two weeks")


class AccountPlots(QTabWidget):
    """One account's plots: a tab per limit window, the burn, the cost per day.

    Only the tab in sight is drawn when series arrive; another is drawn when it is chosen
    (a refresh costs one chart, not four)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("walletPlots")
        self.setDocumentMode(True)
        self.windows: dict[WindowKind, WindowChart] = {}
        self.burn = BurnChart()
        self.cost = CostChart()
        self.addTab(self.burn, "Burn")
        self.addTab(self.cost, "Cost per day")
        self._first = True
        self._shown: tuple[AccountView, AccountHistory] | None = None
        self._stale: set[QWidget] = set()
        self.shown = 0  # how many times series arrived and were drawn (the benchmark counts)
        self.currentChanged.connect(lambda _i: self._draw(self.currentWidget()))
        theme.notifier().changed.connect(self._on_theme)

    def charts(self) -> list[_Chart]:
        return [*self.windows.values(), self.burn, self.cost]

    def show_history(self, account: AccountView, history: AccountHistory) -> None:
        for i, window in enumerate(history.windows):
            if window.kind not in self.windows:
                self.windows[window.kind] = chart = WindowChart(window.kind)
                self.insertTab(i, chart, text.WINDOW_TITLES[window.kind])
        self._shown = (account, history)
        self._stale = set(self.charts())
        if self._first:  # the first window's tab, not the burn the tabs began with
            self._first = False
            self.setCurrentIndex(0)
        self._draw(self.currentWidget())
        self.shown += 1

    def draw_all(self) -> None:
        """Draw every tab now (tests and screenshots look at tabs not in sight)."""
        for chart in self.charts():
            self._draw(chart)

    def _draw(self, chart: QWidget | None) -> None:
        if chart not in self._stale or self._shown is None:
            return
        self._stale.discard(chart)
        account, history = self._shown
        if isinstance(chart, WindowChart):
            views = {w.kind: w for w in account.windows}
            window = next((w for w in history.windows if w.kind == chart.kind), None)
            if window is not None:  # (a window the provider stopped reporting keeps its last)
                chart.show_window(window, views.get(chart.kind), history.now_ms)
        elif chart is self.burn:
            self.burn.show_burn(history.burn, history.now_ms)
        elif chart is self.cost:
            self.cost.show_costs(history)

    def restyle(self) -> None:
        for chart in self.charts():
            chart.restyle()

    def _on_theme(self, _palette: str) -> None:
        """The other palette: the charts' colours now, their series when next in sight."""
        self.restyle()
        if self._shown is not None:
            self._stale = set(self.charts())
            self._draw(self.currentWidget())


def _datetime(ms: float) -> QDateTime:
    return QDateTime.fromMSecsSinceEpoch(int(ms))


def _day_label(iso: str) -> str:
    """The day of the month (fourteen fit a narrow card); Mondays say so."""
    day = date.fromisoformat(iso)
    return f"Mo {day.day}" if day.weekday() == 0 else str(day.day)


def _token_scale(biggest: float) -> tuple[str, float]:
    """The unit and the factor of a token count's axis: tokens, k tokens or M tokens."""
    for size, unit in ((1e6, "M tokens"), (1e3, "k tokens")):
        if biggest >= size:
            return unit, 1 / size
    return "tokens", 1.0
