"""The designer canvas's items: a node card with its two ports, and a dependency arrow.

Items only draw what they are given (a node, its problems, its step in the shown run);
the scene positions them from the draft and turns mouse gestures into edits.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPainterPathStroker,
    QPen,
    QPolygonF,
)
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsSceneHoverEvent,
    QStyleOptionGraphicsItem,
    QWidget,
)

from relay.core.pipeline_model import Node
from relay.gui import theme
from relay.gui.designer_draft import NODE_HEIGHT, NODE_WIDTH
from relay.pipelines.ledger import StepInfo
from relay.pipelines.validate import Problem

PORT_RADIUS = 6.0
BADGE_HEIGHT = 16.0
#: (card fill, badge text colour) roles (relay.gui.theme) per step state
STEP_STYLE: dict[str, tuple[str, str]] = {
    "waiting": ("NEUTRAL_BG", "MUTED"),
    "running": ("ACCENT_BG", "ACCENT"),
    "succeeded": ("OK_BG", "OK"),
    "failed": ("ERROR_BG", "ERROR"),
    "skipped": ("SUBTLE_BG", "MUTED"),
    "cancelled": ("SUBTLE_BG", "MUTED"),
}
DIM_STATES = frozenset({"skipped", "cancelled"})


def step_badge(step: StepInfo) -> str:
    """``running · try 2``, ``failed · try 3``, ``succeeded``…"""
    if step.state == "running" or (step.state == "failed" and step.attempt > 1):
        return f"{step.state} · try {max(step.attempt, 1)}"
    return step.state


def step_tip(step: StepInfo) -> str:
    lines = [f"Step {step.state} (attempt {max(step.attempt, 1)})"]
    if step.error:
        lines.append(f"Error: {step.error}")
    if step.session_id:
        lines.append(f"Session {step.session_id}: double-click to open its stream")
    return "\n".join(lines)


class PortItem(QGraphicsEllipseItem):
    """A node's input (left) or output (right) port."""

    def __init__(self, node_id: str, kind: str, parent: NodeItem) -> None:
        r = PORT_RADIUS
        super().__init__(-r, -r, 2 * r, 2 * r, parent)
        self.node_id = node_id
        self.kind = kind  # "in" or "out"
        self.setPos(0.0 if kind == "in" else NODE_WIDTH, NODE_HEIGHT / 2)
        self.setAcceptHoverEvents(True)
        self.setZValue(1)
        self.lit = False
        if kind == "out":
            self.setCursor(Qt.CursorShape.CrossCursor)
            self.setToolTip("Drag to another node: it will wait for this one")
        else:
            self.setToolTip("Drop an arrow here: this node waits for that one")

    def highlight(self, on: bool) -> None:
        self.lit = on
        self.update()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setBrush(theme.colour("ACCENT" if self.lit else "BASE"))
        painter.setPen(QPen(theme.colour("ACCENT" if self.lit else "BORDER_STRONG"), 1.5))
        painter.drawEllipse(self.rect())

    def hoverEnterEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        if self.kind == "out":
            self.highlight(True)

    def hoverLeaveEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self.highlight(False)

    def center(self) -> QPointF:
        return self.scenePos()


class NodeItem(QGraphicsItem):
    """A node card: id and state, provider[:account] and model, fallbacks, checks."""

    def __init__(self, node: Node) -> None:
        super().__init__()
        self.node_id = node.id
        self.node = node
        self.problems: list[Problem] = []
        self.step: StepInfo | None = None
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.setAcceptHoverEvents(True)
        self.in_port = PortItem(node.id, "in", self)
        self.out_port = PortItem(node.id, "out", self)
        self._retip()

    def boundingRect(self) -> QRectF:
        return QRectF(-5, -BADGE_HEIGHT / 2 - 5, NODE_WIDTH + 10,
                      NODE_HEIGHT + BADGE_HEIGHT / 2 + 10)

    def set_node(self, node: Node, problems: list[Problem]) -> None:
        if node == self.node and problems == self.problems:
            return
        self.node, self.problems = node, problems
        self._retip()
        self.update()

    def set_step(self, step: StepInfo | None) -> None:
        if step == self.step:
            return
        self.step = step
        self.setOpacity(0.55 if step is not None and step.state in DIM_STATES else 1.0)
        self._retip()
        self.update()

    def _retip(self) -> None:
        parts = [self.node.task.strip() or "(no task yet)"]
        if self.step is not None:
            parts.append(step_tip(self.step))
        if self.problems:
            parts.append("Problems:\n" + "\n".join(f"• {p.field}: {p.message}"
                                                   for p in self.problems))
        self.setToolTip("\n\n".join(parts))

    def lines(self) -> list[str]:
        """The card's text under its id (what the tests and the paint read)."""
        node = self.node
        first = node.entry + (f" · {node.model}" if node.model else "")
        out = [first]
        if node.fallback:
            out.append("then " + ", ".join(node.fallback))
        checks = [f"✓ {len(node.verify)} check{'s' if len(node.verify) != 1 else ''}"
                  ] if node.verify else []
        if node.group:
            checks.append(f"group {node.group}")
        if node.retries:
            checks.append(f"{node.retries} retr{'ies' if node.retries > 1 else 'y'}")
        if checks:
            out.append(" · ".join(checks))
        return out

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(0, 0, NODE_WIDTH, NODE_HEIGHT)
        fill, badge_colour = STEP_STYLE.get(self.step.state if self.step else "",
                                            ("BASE", "MUTED"))
        if self.isSelected():
            painter.setPen(QPen(QColor(theme.ACCENT), 2, Qt.PenStyle.DashLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(rect.adjusted(-4, -4, 4, 4), 10, 10)
        colour = theme.colour("ERROR" if self.problems else
                              "ACCENT" if self.isSelected() else "BORDER_STRONG")
        painter.setPen(QPen(colour, 2.5 if self.problems or self.isSelected() else 1.2))
        painter.setBrush(QBrush(theme.colour(fill)))
        painter.drawRoundedRect(rect, 8, 8)
        self._paint_text(painter, rect, badge_colour)

    def _paint_text(self, painter: QPainter, rect: QRectF, badge_colour: str) -> None:
        pad = 12.0
        bold = QFont(painter.font())
        bold.setPointSizeF(10.5)
        bold.setBold(True)
        small = QFont(painter.font())
        small.setPointSizeF(9)
        head = QRectF(pad, 8, rect.width() - 2 * pad, 22)
        painter.setFont(bold)
        painter.setPen(QColor(theme.ERROR if self.problems else theme.TEXT))
        painter.drawText(head, Qt.AlignmentFlag.AlignVCenter,
                         QFontMetricsF(bold).elidedText(self.node_id, Qt.TextElideMode.ElideRight,
                                                        head.width()))
        if self.step is not None:
            self._paint_badge(painter, rect, small, step_badge(self.step), badge_colour)
        painter.setFont(small)
        metrics = QFontMetricsF(small)
        top = 32.0
        for i, line in enumerate(self.lines()):
            painter.setPen(QColor(theme.TEXT if i == 0 else theme.MUTED))
            box = QRectF(pad, top, rect.width() - 2 * pad, 18)
            painter.drawText(box, Qt.AlignmentFlag.AlignVCenter,
                             metrics.elidedText(line, Qt.TextElideMode.ElideRight, box.width()))
            top += 18

    @staticmethod
    def _paint_badge(painter: QPainter, rect: QRectF, font: QFont, text: str,
                     colour: str) -> None:
        """The step's state as a pill on the card's top border (the id keeps its width)."""
        width = QFontMetricsF(font).horizontalAdvance(text) + 14
        pill = QRectF(rect.width() - width - 10, -BADGE_HEIGHT / 2, width, BADGE_HEIGHT)
        painter.setPen(QPen(theme.colour(colour), 1))
        painter.setBrush(QBrush(theme.colour("BASE")))
        painter.drawRoundedRect(pill, BADGE_HEIGHT / 2, BADGE_HEIGHT / 2)
        painter.setFont(font)
        painter.drawText(pill, Qt.AlignmentFlag.AlignCenter, text)


class EdgeItem(QGraphicsPathItem):
    """An arrow from ``source``'s output port to ``target``'s input: target waits for source."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__()
        self.source = source
        self.target = target
        self.on_cycle = False
        self._arrow = QPolygonF()
        self.setZValue(-1)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.set_cycle(False)

    def set_cycle(self, on: bool) -> None:
        self.on_cycle = on
        self.setToolTip(f"{self.target} waits for {self.source}"
                        + (" — on a cycle: remove one of its arrows" if on else "")
                        + "\n(select it and press Delete to remove it)")
        self.update()

    def colour(self) -> QColor:
        if self.isSelected():
            return QColor(theme.ACCENT)
        return theme.colour("ERROR" if self.on_cycle else "EDGE")

    def set_ends(self, start: QPointF, end: QPointF) -> None:
        path = curve(start, end)
        self._arrow = arrow_head(path)
        self.setPath(path)

    def shape(self) -> QPainterPath:
        stroker = QPainterPathStroker()
        stroker.setWidth(12)
        return stroker.createStroke(self.path())

    def boundingRect(self) -> QRectF:
        return super().boundingRect().united(self._arrow.boundingRect()).adjusted(-4, -4, 4, 4)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        colour = self.colour()
        painter.setPen(QPen(colour, 2.6 if self.on_cycle or self.isSelected() else 1.8))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self.path())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(colour))
        painter.drawPolygon(self._arrow)


def curve(start: QPointF, end: QPointF) -> QPainterPath:
    """A horizontal S-curve from an output port to an input port; an arrow going back
    (its target left of its source) loops under both nodes instead of through them."""
    path = QPainterPath(start)
    if end.x() >= start.x() + 20:
        bend = max(40.0, (end.x() - start.x()) / 2)
        path.cubicTo(QPointF(start.x() + bend, start.y()), QPointF(end.x() - bend, end.y()), end)
        return path
    low = max(start.y(), end.y()) + NODE_HEIGHT / 2 + 36
    middle = QPointF((start.x() + end.x()) / 2, low)
    path.cubicTo(QPointF(start.x() + 70, start.y()), QPointF(start.x() + 70, low), middle)
    path.cubicTo(QPointF(end.x() - 70, low), QPointF(end.x() - 70, end.y()), end)
    return path


def arrow_head(path: QPainterPath, size: float = 10.0) -> QPolygonF:
    """A filled triangle at the path's end, along its last tangent."""
    end = path.pointAtPercent(1.0)
    angle = math.radians(path.angleAtPercent(0.99))
    back = QPointF(-math.cos(angle), math.sin(angle))
    side = QPointF(-back.y(), back.x())
    return QPolygonF([end, end + back * size + side * (size / 2),
                      end + back * size - side * (size / 2)])
