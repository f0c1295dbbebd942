"""The designer's canvas: a QGraphicsScene mirroring the draft, and the view that zooms it.

The scene never holds the truth. It places one :class:`NodeItem` per node and one
:class:`EdgeItem` per dependency from the view-model on every change, and turns the
user's gestures into view-model edits: dragging nodes (every step of a drag is a move
of one gesture, merged into one undo step), dragging from an output port to another
node (a rubber line follows the mouse; the drop asks for the dependency), a click (the
step's session when a run is shown), selection, Delete. A runtime dropped from the
palette becomes a node where it was dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPen,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsScene,
    QGraphicsSceneMouseEvent,
    QGraphicsView,
    QWidget,
)

from relay.gui import theme
from relay.gui.designer_draft import NODE_HEIGHT, NODE_WIDTH, cycle_edges
from relay.gui.docks.designer_items import PORT_RADIUS, EdgeItem, NodeItem, PortItem, curve
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.pipelines.validate import Problem

#: the palette's drag payload: a runtime's name
RUNTIME_MIME = "application/x-relay-runtime"
MIN_ZOOM, MAX_ZOOM = 0.25, 2.5
#: fit never shrinks the nodes past this (below, their text is unreadable: scroll instead)
FIT_MIN_ZOOM = 0.4
#: room around the nodes to drag them into
MARGIN = 400.0
#: what an empty canvas says
EMPTY_HINT = ("Drag a runtime here from “Add a step” above (or double-click one)\n"
              "to start the pipeline; drag from a node's right port to another to connect them.")


@dataclass
class _Drag:
    """Nodes being dragged: where the press was and where each node started."""

    press: QPointF
    origins: dict[str, QPointF]
    gesture: str
    moved: bool = False


class DesignerScene(QGraphicsScene):
    """Nodes and arrows of the view-model's draft, and the gestures that edit it.

    Signals:
        nodeActivated(str): a node was double-clicked.
    """

    nodeActivated = Signal(str)

    def __init__(self, vm: DesignerViewModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vm = vm
        self.nodes: dict[str, NodeItem] = {}
        self.edges: dict[tuple[str, str], EdgeItem] = {}
        self._drag: _Drag | None = None
        self._link_from: str | None = None
        self._link_target: PortItem | None = None
        self.rubber = QGraphicsPathItem()
        self.rubber.setPen(QPen(QColor(theme.ACCENT), 2, Qt.PenStyle.DashLine))
        self.rubber.setZValue(5)
        self.rubber.hide()
        self.addItem(self.rubber)
        self._syncing = False
        vm.changed.connect(self.sync)
        vm.selectionChanged.connect(self._select_from_vm)
        vm.run.changed.connect(self._show_steps)
        self.selectionChanged.connect(self._selection_to_vm)
        self.sync()

    # -- the draft → items ----------------------------------------------------------

    def sync(self) -> None:
        """Place, update, add and remove items to match the draft and its problems."""
        by_node: dict[str, list[Problem]] = {}
        for problem in self.vm.problems():  # a cycle's problem is on each node of it
            for node_id in dict.fromkeys(problem.cycle or ((problem.node,) if problem.node else ())):
                by_node.setdefault(node_id, []).append(problem)
        self._syncing = True
        try:
            wanted = self.vm.pipeline.nodes
            for node_id in set(self.nodes) - {n.id for n in wanted}:
                self.removeItem(self.nodes.pop(node_id))
            for node in wanted:
                item = self.nodes.get(node.id)
                if item is None:
                    item = self.nodes[node.id] = NodeItem(node)
                    self.addItem(item)
                item.set_node(node, by_node.get(node.id, []))
                pos = node.position
                target = QPointF(pos.x, pos.y) if pos is not None else QPointF(0, 0)
                if item.pos() != target:
                    item.setPos(target)
            self._sync_edges(cycle_edges(self.vm.problems()))
            self._select_from_vm()
        finally:
            self._syncing = False
        self._show_steps()
        # grow only: a rect that shrank mid-drag would shift the view under the mouse
        self.setSceneRect(self.sceneRect().united(self.nodes_rect().adjusted(
            -MARGIN, -MARGIN, MARGIN, MARGIN)))

    def nodes_rect(self) -> QRectF:
        """What the drawing covers: its nodes and arrows (a loop goes under them)."""
        rect = QRectF()
        for item in [*self.nodes.values(), *self.edges.values()]:
            rect = rect.united(item.sceneBoundingRect())
        return rect

    def _sync_edges(self, on_cycle: set[tuple[str, str]]) -> None:
        wanted = self.vm.draft.edges()
        for key in set(self.edges) - set(wanted):
            self.removeItem(self.edges.pop(key))
        for key in wanted:
            edge = self.edges.get(key)
            if edge is None:
                edge = self.edges[key] = EdgeItem(*key)
                self.addItem(edge)
            if edge.on_cycle != (key in on_cycle):
                edge.set_cycle(key in on_cycle)
            source, target = self.nodes[key[0]], self.nodes[key[1]]
            edge.set_ends(source.out_port.scenePos(),
                          target.in_port.scenePos() - QPointF(PORT_RADIUS, 0))

    def _show_steps(self) -> None:
        steps = self.vm.run.steps
        for node_id, item in self.nodes.items():
            item.set_step(steps.get(node_id))

    def _select_from_vm(self) -> None:
        wanted = set(self.vm.selected)
        was, self._syncing = self._syncing, True
        try:
            for node_id, item in self.nodes.items():
                if item.isSelected() != (node_id in wanted):
                    item.setSelected(node_id in wanted)
        finally:
            self._syncing = was

    def _selection_to_vm(self) -> None:
        if not self._syncing:
            self.vm.select(i.node_id for i in self.selectedItems() if isinstance(i, NodeItem))

    def selected_edges(self) -> list[tuple[str, str]]:
        return [(i.source, i.target) for i in self.selectedItems() if isinstance(i, EdgeItem)]

    def delete_selection(self) -> bool:
        """Delete the selected nodes and arrows (one undo step)."""
        return self.vm.remove(self.vm.selected, self.selected_edges())

    # -- gestures -------------------------------------------------------------------

    def node_at(self, pos: QPointF) -> NodeItem | None:
        for item in self.items(pos):
            found: QGraphicsItem | None = item
            while found is not None and not isinstance(found, NodeItem):
                found = found.parentItem()
            if isinstance(found, NodeItem):
                return found
        return None

    def begin_link(self, source: str) -> None:
        """Start dragging an arrow out of ``source``'s output port."""
        self._link_from = source
        self.rubber.setPath(curve(self.nodes[source].out_port.scenePos(),
                                  self.nodes[source].out_port.scenePos()))
        self.rubber.show()

    def drag_link(self, pos: QPointF) -> None:
        """The rubber line follows the mouse; the input port under it lights up."""
        if self._link_from is None:
            return
        start = self.nodes[self._link_from].out_port.scenePos()
        self.rubber.setPath(curve(start, pos))
        node = self.node_at(pos)
        port = node.in_port if node is not None and node.node_id != self._link_from else None
        if port is not self._link_target:
            if self._link_target is not None:
                self._link_target.highlight(False)
            if port is not None:
                port.highlight(True)
            self._link_target = port
        self.rubber.setPen(QPen(QColor(theme.OK if port is not None else theme.ACCENT), 2,
                                Qt.PenStyle.DashLine))

    def finish_link(self, pos: QPointF) -> bool:
        """Drop the arrow: the node under ``pos`` then depends on the source (or why not)."""
        source, self._link_from = self._link_from, None
        if self._link_target is not None:
            self._link_target.highlight(False)
            self._link_target = None
        self.rubber.hide()
        self.rubber.setPath(QPainterPath())
        node = self.node_at(pos)
        if source is None or node is None or node.node_id == source:
            return False
        return self.vm.connect_nodes(source, node.node_id)

    def drop_runtime(self, runtime: str, pos: QPointF) -> str | None:
        """A runtime dropped at ``pos`` (scene): a new node centred there; its id."""
        return self.vm.add_node(runtime, pos.x() - NODE_WIDTH / 2, pos.y() - NODE_HEIGHT / 2)

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        pos = event.scenePos()
        top = self.itemAt(pos, QTransform())
        left = event.button() == Qt.MouseButton.LeftButton
        if left and isinstance(top, PortItem) and top.kind == "out":
            self.begin_link(top.node_id)
            event.accept()
            return
        super().mousePressEvent(event)
        node = self.node_at(pos) if left else None
        if node is not None:
            if not node.isSelected():  # a press on an unselected node drags it alone
                self.vm.select([node.node_id])
            self._drag = _Drag(pos, {n: self.nodes[n].pos() for n in self.vm.selected},
                               self.vm.begin_gesture())

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self._link_from is not None:
            self.drag_link(event.scenePos())
            event.accept()
            return
        drag = self._drag
        if drag is not None and event.buttons() & Qt.MouseButton.LeftButton:
            delta = event.scenePos() - drag.press
            if drag.moved or delta.manhattanLength() >= 3:
                drag.moved = True
                self.vm.move({n: (p.x() + delta.x(), p.y() + delta.y())
                              for n, p in drag.origins.items()}, drag.gesture)
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self._link_from is not None:
            self.finish_link(event.scenePos())
            event.accept()
            return
        self._drag = None
        super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        node = self.node_at(event.scenePos())
        if node is not None and event.button() == Qt.MouseButton.LeftButton:
            self.nodeActivated.emit(node.node_id)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)


class DesignerView(QGraphicsView):
    """The canvas's view: wheel zoom (clamped), fit, rubber-band selection, Delete, drops,
    and panning with the middle button."""

    def __init__(self, scene: DesignerScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.designer = scene
        self.setObjectName("designerCanvas")
        self.setRenderHints(QPainter.RenderHint.Antialiasing
                            | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setAcceptDrops(True)
        self.setMinimumSize(240, 180)
        self._pan: QPointF | None = None
        self._empty = not scene.nodes
        scene.vm.changed.connect(self._repaint_when_emptied)

    def _repaint_when_emptied(self) -> None:
        """The hint of an empty canvas comes and goes with the last node."""
        empty = not self.designer.nodes
        if empty != self._empty:
            self._empty = empty
            self.viewport().update()

    def zoom(self) -> float:
        return self.transform().m11()

    def zoom_by(self, factor: float) -> None:
        target = min(MAX_ZOOM, max(MIN_ZOOM, self.zoom() * factor))
        self.scale(target / self.zoom(), target / self.zoom())

    def fit(self) -> None:
        """Every node in view, between :data:`FIT_MIN_ZOOM` and 1:1."""
        rect = self.designer.nodes_rect()
        self.designer.setSceneRect(rect.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN))
        if rect.isEmpty():
            self.resetTransform()
            self.centerOn(0, 0)
            return
        self.fitInView(rect.adjusted(-30, -30, 30, 30), Qt.AspectRatioMode.KeepAspectRatio)
        zoom = min(1.0, max(FIT_MIN_ZOOM, self.zoom()))
        self.setTransform(QTransform.fromScale(zoom, zoom))
        self.centerOn(rect.center())

    def drawForeground(self, painter: QPainter, area: QRectF | QRect) -> None:
        """On an empty drawing, what to do first (in the view's middle, not the scene's)."""
        super().drawForeground(painter, area)
        if self.designer.nodes:
            return
        painter.save()
        painter.resetTransform()
        painter.setPen(QColor(theme.MUTED))
        painter.drawText(QRectF(self.viewport().rect()).adjusted(20, 20, -20, -20),
                         int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), EMPTY_HINT)
        painter.restore()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom_by(1.15 ** steps)
        event.accept()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.designer.delete_selection()
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom_by(0.8)
        else:
            super().keyPressEvent(event)
            return
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.MiddleButton:
            self._pan = event.position()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._pan is not None:
            delta = event.position() - self._pan
            self._pan = event.position()
            h, v = self.horizontalScrollBar(), self.verticalScrollBar()
            h.setValue(h.value() - round(delta.x()))
            v.setValue(v.value() - round(delta.y()))
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._pan is not None and event.button() == Qt.MouseButton.MiddleButton:
            self._pan = None
            self.viewport().unsetCursor()
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasFormat(RUNTIME_MIME):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if event.mimeData().hasFormat(RUNTIME_MIME):
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        data = event.mimeData()
        if not data.hasFormat(RUNTIME_MIME):
            super().dropEvent(event)
            return
        runtime = bytes(data.data(RUNTIME_MIME).data()).decode("utf-8")
        self.designer.drop_runtime(runtime, self.mapToScene(event.position().toPoint()))
        event.acceptProposedAction()

    def drawBackground(self, painter: QPainter, area: QRectF | QRect) -> None:
        """A light dot grid, so a drag shows it moves."""
        rect = QRectF(area)
        painter.fillRect(rect, theme.colour("CANVAS_BG"))
        step = 24.0
        if self.zoom() < 0.5:
            return
        painter.setPen(QPen(theme.colour("CANVAS_GRID"), 1.5))
        x0 = rect.left() - rect.left() % step
        y0 = rect.top() - rect.top() % step
        points = []
        y = y0
        while y < rect.bottom():
            x = x0
            while x < rect.right():
                points.append(QPointF(x, y))
                x += step
            y += step
        painter.drawPoints(points)
