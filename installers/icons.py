#!/usr/bin/env python3
"""Platform icons from resources/icons/relay.svg (rendered with Qt's SVG renderer).

    python installers/icons.py iconset build/macos/relay.iconset   # then: iconutil -c icns
    python installers/icons.py ico build/windows/relay.ico         # 16…256 px, PNG-compressed
    python installers/icons.py png 512 build/relay-512.png

Needs PySide6 (the build environment has it: ``pip install -e ".[installer]"``); runs
offscreen. Where the SVG cannot be rendered it scales resources/icons/relay-256.png.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SVG = ROOT / "resources" / "icons" / "relay.svg"
PNG = ROOT / "resources" / "icons" / "relay-256.png"

#: Apple's iconset names: (file name, pixel size).
ICONSET = [
    ("icon_16x16.png", 16), ("icon_16x16@2x.png", 32),
    ("icon_32x32.png", 32), ("icon_32x32@2x.png", 64),
    ("icon_128x128.png", 128), ("icon_128x128@2x.png", 256),
    ("icon_256x256.png", 256), ("icon_256x256@2x.png", 512),
    ("icon_512x512.png", 512), ("icon_512x512@2x.png", 1024),
]
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)


def render_png(size: int) -> bytes:
    """The icon as PNG bytes, ``size`` × ``size`` pixels."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(["icons"])
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    renderer = QSvgRenderer(str(SVG))
    if renderer.isValid():
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
    else:
        image = QImage(str(PNG)).scaled(size, size, Qt.AspectRatioMode.KeepAspectRatio,
                                        Qt.TransformationMode.SmoothTransformation)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    saved: bool = image.save(buffer, "PNG")  # type: ignore[call-overload]  # a str works
    if not saved:
        raise RuntimeError(f"could not encode a {size}px PNG")
    buffer.close()
    return bytes(data.data())


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico holding one PNG-compressed image per size (Vista and later)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        blob = pngs[size]
        dim = 0 if size >= 256 else size  # 0 means 256 in an ICONDIRENTRY
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(blob), offset)
        offset += len(blob)
        blobs += blob
    return header + entries + blobs


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "iconset":
        out = Path(argv[1])
        out.mkdir(parents=True, exist_ok=True)
        cache: dict[int, bytes] = {}
        for name, size in ICONSET:
            (out / name).write_bytes(cache.setdefault(size, render_png(size)))
        print(f"icons: {len(ICONSET)} images in {out}")
        return 0
    if len(argv) >= 2 and argv[0] == "ico":
        out = Path(argv[1])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(ico_bytes({size: render_png(size) for size in ICO_SIZES}))
        print(f"icons: {out} ({', '.join(map(str, ICO_SIZES))} px)")
        return 0
    if len(argv) >= 3 and argv[0] == "png":
        out = Path(argv[2])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(render_png(int(argv[1])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
