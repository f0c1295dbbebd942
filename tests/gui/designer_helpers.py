"""Driving the pipeline designer the way a user does: drops, port drags, clicks."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QListWidgetItem

from relay.gui.docks.designer_dock import DesignerDock


def idle(dock: DesignerDock) -> bool:
    """No file or run task of the designer is still running."""
    return dock.vm._bridge.tasks.pending == 0


def palette_item(dock: DesignerDock, runtime: str) -> QListWidgetItem:
    items = dock.runtime_list.findItems(runtime, Qt.MatchFlag.MatchExactly)
    assert items, f"{runtime} is not in the palette"
    return items[0]


def drop_runtime(dock: DesignerDock, runtime: str, at: QPoint) -> None:
    """Drop the palette's drag payload for ``runtime`` on the canvas at ``at`` (viewport)."""
    data = dock.runtime_list.mimeData([palette_item(dock, runtime)])
    event = QDropEvent(QPointF(at), Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    dock.view.dropEvent(event)


def view_point(dock: DesignerDock, scene_point: QPointF) -> QPoint:
    return dock.view.mapFromScene(scene_point)


def mouse_drag(dock: DesignerDock, start: QPointF, end: QPointF, steps: int = 4) -> None:
    """Press at ``start``, move in steps, release at ``end`` (scene points) on the canvas."""
    viewport = dock.view.viewport()
    a, b = view_point(dock, start), view_point(dock, end)
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, a)
    for i in range(1, steps + 1):
        QTest.mouseMove(viewport, a + (b - a) * i / steps)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, b)


def drag_arrow(dock: DesignerDock, source: str, target: str) -> None:
    """Drag from ``source``'s output port to ``target``'s input port."""
    nodes = dock.scene.nodes
    mouse_drag(dock, nodes[source].out_port.scenePos(), nodes[target].in_port.scenePos())


def click_node(dock: DesignerDock, node_id: str) -> None:
    centre = dock.scene.nodes[node_id].sceneBoundingRect().center()
    QTest.mouseClick(dock.view.viewport(), Qt.MouseButton.LeftButton,
                     Qt.KeyboardModifier.NoModifier, view_point(dock, centre))


def double_click_node(dock: DesignerDock, node_id: str) -> None:
    centre = dock.scene.nodes[node_id].sceneBoundingRect().center()
    QTest.mouseDClick(dock.view.viewport(), Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier, view_point(dock, centre))


def write_pipelines(repo: Path, *pipelines: dict[str, object]) -> Path:
    path = repo / ".relay" / "pipelines.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pipelines": list(pipelines)}))
    return path


def three_steps(provider: str = "demo", fallback: str = "demo:backup") -> dict[str, object]:
    """plan → implement (with a fallback) → review."""
    return {"name": "feature", "nodes": [
        {"id": "plan", "provider": provider, "task": "Plan the change",
         "position": {"x": 0, "y": 0}},
        {"id": "implement", "provider": provider, "fallback": [fallback],
         "dependsOn": ["plan"], "task": "Implement: {{plan.output}}",
         "position": {"x": 250, "y": 0}},
        {"id": "review", "provider": provider, "dependsOn": ["implement"],
         "task": "Review {{implement.files}}", "position": {"x": 500, "y": 0}},
    ]}
