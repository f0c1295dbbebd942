"""Finds bundled resources (icons) in the package, a frozen build or the repository."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap

from relay.gui import theme

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def resource_dirs() -> list[Path]:
    """Where resources may live, most specific first."""
    dirs = [_PACKAGE_DIR / "resources"]
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        dirs.append(Path(frozen) / "resources")
    dirs.append(_PACKAGE_DIR.parents[1] / "resources")  # a source checkout: <repo>/resources
    return dirs


def find_resource(relative: str) -> Path | None:
    """The first existing ``<dir>/relative`` among :func:`resource_dirs`."""
    for base in resource_dirs():
        candidate = base / relative
        if candidate.is_file():
            return candidate
    return None


def app_icon() -> QIcon:
    """Relay's icon (SVG and PNG when found; a drawn fallback otherwise)."""
    icon = QIcon()
    for name in ("icons/relay.svg", "icons/relay-256.png"):
        path = find_resource(name)
        if path is not None:
            icon.addFile(str(path))
    if icon.isNull() or icon.pixmap(QSize(32, 32)).isNull():
        icon = QIcon(_fallback_pixmap())
    return icon


def _fallback_pixmap(size: int = 64) -> QPixmap:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(theme.colour("ICON_BG"))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawRoundedRect(2, 2, size - 4, size - 4, 14, 14)
    painter.setPen(theme.colour("ICON_TEXT"))
    font = painter.font()
    font.setPixelSize(int(size * 0.6))
    font.setBold(True)
    painter.setFont(font)
    painter.drawText(pixmap.rect(), Qt.AlignmentFlag.AlignCenter, "R")
    painter.end()
    return pixmap
