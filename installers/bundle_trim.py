"""What the frozen bundle keeps of Qt and of the build machine's libraries.

Imported by ``relay.spec`` (PyInstaller) and by ``tests/installers``. PyInstaller collects
every plugin of the Qt modules Relay imports (QtCore, QtGui, QtWidgets, and QtCharts from
PySide6-Addons for the Wallet's plots) and every library those plugins link; Relay needs far
less. Of Addons only what QtCharts links comes along (libQt6Charts and the libQt6OpenGL /
libQt6OpenGLWidgets it needs — C++ libraries, so the Python modules ``PySide6.QtOpenGL*``
stay excluded below); WebEngine, 3D, Multimedia, the QML modules… are never imported, so never
collected, and step 3 drops any that a hook brought without a binary linking it. After the
analysis the spec:

1. keeps only the Qt plugins in :data:`KEEP_PLUGINS` (platforms offscreen/xcb/wayland/
   cocoa/windows, SVG icons, ICO/ICNS, compose/ibus input, the xdg portal theme, the
   native styles) and drops Qt's translations (Relay installs no QTranslator);
2. on Linux, leaves the desktop stack (X11/xcb, xkbcommon, Wayland, fontconfig/freetype,
   D-Bus, GLib, GL) to the system — the same libraries a ``pip install PySide6`` expects;
   the .deb lists them in ``Depends`` (``installers/linux/build.sh`` finds them with ldd);
3. on Linux and Windows, drops every Qt (or, on Linux, host) library that no kept binary
   links any more (a walk over the direct dependencies, ``DT_NEEDED`` / PE imports).
   macOS keeps what PyInstaller collected (frameworks come with symlinks and resources).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

#: A PyInstaller TOC entry: (destination name, source path, type code).
Entry = tuple[str, str, str]

#: plugin folder → plugin names kept (file stem without ``lib`` and suffix); "*" keeps all.
KEEP_PLUGINS: dict[str, frozenset[str]] = {
    "platforms": frozenset({"qxcb", "qwayland", "qoffscreen", "qcocoa", "qwindows"}),
    "platformthemes": frozenset({"qxdgdesktopportal"}),
    "platforminputcontexts": frozenset({"composeplatforminputcontextplugin",
                                        "ibusplatforminputcontextplugin"}),
    "imageformats": frozenset({"qsvg", "qico", "qicns"}),
    "iconengines": frozenset({"qsvgicon"}),
    "xcbglintegrations": frozenset({"qxcb-glx-integration", "qxcb-egl-integration"}),
    "wayland-shell-integration": frozenset({"xdg-shell"}),
    "wayland-decoration-client": frozenset({"bradient", "adwaita"}),
    "wayland-graphics-integration-client": frozenset({"qt-plugin-wayland-egl"}),
    "styles": frozenset({"*"}),  # qmodernwindowsstyle / qwindowsvistastyle, qmacstyle
}

#: Python modules never frozen: other Qt bindings qasync probes for, Qt modules Relay does
#: not use, and development-time code some hooks pull in (pydantic.mypy → mypy).
EXCLUDED_MODULES: tuple[str, ...] = (
    "PyQt5", "PyQt6", "PySide2", "tkinter", "_tkinter", "IPython", "mypy", "pydantic.mypy",
    "pytest", "setuptools", "pip",
    "PySide6.QtNetwork", "PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtQuickWidgets",
    "PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets", "PySide6.QtPdf", "PySide6.QtSql",
    "PySide6.QtTest", "PySide6.QtDesigner", "PySide6.QtUiTools", "PySide6.QtHelp",
    "PySide6.QtPrintSupport", "PySide6.QtConcurrent", "PySide6.QtDBus",
    "PySide6.QtSvgWidgets", "PySide6.QtXml",
)

#: Linux libraries the system provides (never bundled; the .deb depends on them).
LINUX_SYSTEM_LIBS = re.compile(
    r"^lib(X11|X11-xcb|Xau|Xdmcp|Xext|Xrender|Xi|Xfixes|Xcursor|Xrandr|xcb(-[a-z0-9-]+)?|"
    r"xkbcommon(-x11)?|wayland-[a-z]+|fontconfig|freetype|png16|brotli[a-z]*|expat|"
    r"dbus-1|glib-2\.0|gthread-2\.0|gobject-2\.0|gio-2\.0|gmodule-2\.0|"
    r"E?(Open)?GLX?(ESv1_CM|ESv2)?(dispatch)?|drm|gbm|gtk-3|gdk-3|atk-1\.0|cairo|pango[a-z0-9-]*)"
    r"\.so(\.\d+)*$")

_PLUGIN_SUFFIXES = (".so", ".dll", ".dylib")


def _parts(dest: str) -> tuple[str, ...]:
    return PurePosixPath(dest.replace("\\", "/")).parts


def plugin_of(dest: str) -> tuple[str, str] | None:
    """``(folder, name)`` when ``dest`` is a Qt plugin inside PySide6, else ``None``."""
    parts = _parts(dest)
    if not parts or parts[0] != "PySide6" or "plugins" not in parts[:-2]:
        return None
    index = parts.index("plugins")
    if len(parts) != index + 3:
        return None
    folder, filename = parts[index + 1], parts[index + 2]
    if not filename.endswith(_PLUGIN_SUFFIXES):
        return None
    stem = filename.rsplit(".", 1)[0]
    if stem.startswith("lib"):
        stem = stem[3:]
    return folder, stem


def keep_plugin(folder: str, name: str) -> bool:
    kept = KEEP_PLUGINS.get(folder, frozenset())
    return "*" in kept or name in kept


def is_translation(dest: str) -> bool:
    parts = _parts(dest)
    return len(parts) >= 2 and parts[0] == "PySide6" and "translations" in parts[1:3]


def is_qt_library(dest: str) -> bool:
    """A Qt/ICU shared library of the PySide6 wheel (a candidate for the dependency walk)."""
    parts = _parts(dest)
    if not parts or parts[0] != "PySide6" or "plugins" in parts:
        return False
    name = parts[-1]
    return bool(re.match(r"^(lib)?(Qt6|icu)[A-Za-z0-9_]*(\.so(\.\d+)*|\.dll)$", name))


def is_host_library(dest: str, typecode: str = "BINARY") -> bool:
    """A Linux library PyInstaller copied from the build machine into the bundle's top level.

    Python extension modules (type ``EXTENSION``, e.g. ``_cffi_backend…so``) and libpython
    are never host libraries.
    """
    parts = _parts(dest)
    return (typecode == "BINARY" and len(parts) == 1 and ".so" in parts[0]
            and not parts[0].startswith("libpython"))


def elf_needed(path: str) -> list[str]:
    """The direct ``DT_NEEDED`` entries of an ELF file (objdump, as PyInstaller needs)."""
    out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, check=True)
    return [line.split()[1] for line in out.stdout.splitlines()
            if line.strip().startswith("NEEDED")]


def pe_needed(path: str) -> list[str]:
    """The DLLs a Windows binary imports directly (PyInstaller's own PE reader)."""
    from PyInstaller.depend import bindepend  # type: ignore[import-untyped]  # in a build only

    return [str(name) for name, _resolved in bindepend.get_imports(path)]


def trim(binaries: Iterable[Entry], datas: Iterable[Entry], system: str,
         needed: Callable[[str], list[str]] | None = None) -> tuple[list[Entry], list[Entry],
                                                                    list[str]]:
    """The binaries and datas the bundle keeps on ``system`` (linux/darwin/windows).

    Returns ``(binaries, datas, dropped)`` where ``dropped`` names every dropped entry.
    ``needed(src)`` lists a binary's direct dependencies (file names); by default objdump
    on Linux and PyInstaller's PE reader on Windows.
    """
    dropped: list[str] = []
    kept: list[Entry] = []
    for entry in binaries:
        dest = entry[0]
        plugin = plugin_of(dest)
        unused_plugin = plugin is not None and not keep_plugin(*plugin)
        system_lib = (system == "linux" and is_host_library(dest, entry[2])
                      and LINUX_SYSTEM_LIBS.match(_parts(dest)[-1]) is not None)
        if unused_plugin or system_lib:
            dropped.append(dest)
        else:
            kept.append(entry)
    kept_datas = []
    for entry in datas:
        if is_translation(entry[0]):
            dropped.append(entry[0])
        else:
            kept_datas.append(entry)
    if system in ("linux", "windows"):
        if needed is None:
            needed = elf_needed if system == "linux" else pe_needed
        kept, unreachable = _reachable(kept, system, needed)
        dropped.extend(unreachable)
    present = {"/".join(_parts(e[0])) for e in [*kept, *kept_datas] if e[2] != "SYMLINK"}
    kept, dangling = _drop_dangling_links(kept, present)
    kept_datas, dangling_data = _drop_dangling_links(kept_datas, present)
    dropped.extend(dangling + dangling_data)
    return kept, kept_datas, dropped


def _drop_dangling_links(entries: list[Entry], present: set[str]) -> tuple[list[Entry], list[str]]:
    """Drop ``SYMLINK`` entries (PyInstaller's top-level aliases) whose target was dropped.

    A symlink entry is ``(link, target, "SYMLINK")`` with ``target`` relative to the link's
    folder (e.g. ``libQt6Core.so.6 → PySide6/Qt/lib/libQt6Core.so.6``); PyInstaller keeps
    them among the datas.
    """
    kept, dangling = [], []
    for entry in entries:
        if entry[2] == "SYMLINK":
            parent = _parts(entry[0])[:-1]
            target = "/".join(_normalise([*parent, *_parts(entry[1])]))
            if target not in present:
                dangling.append(entry[0])
                continue
        kept.append(entry)
    return kept, dangling


def _normalise(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part not in (".", ""):
            out.append(part)
    return out


def _reachable(binaries: list[Entry], system: str,
               needed: Callable[[str], list[str]]) -> tuple[list[Entry], list[str]]:
    """Keep roots and the candidates some kept binary links; drop the other candidates."""
    def candidate(entry: Entry) -> bool:
        dest, _src, typecode = entry
        if typecode != "BINARY":
            return False
        return is_qt_library(dest) or (system == "linux" and is_host_library(dest, typecode))

    fold = str.lower if system == "windows" else str
    by_name = {fold(_parts(e[0])[-1]): e for e in binaries if candidate(e)}
    todo = [e for e in binaries if not candidate(e) and e[2] in ("BINARY", "EXTENSION")]
    reached: set[str] = set()
    while todo:
        entry = todo.pop()
        for name in needed(entry[1]):
            key = fold(name)
            if key in by_name and key not in reached:
                reached.add(key)
                todo.append(by_name[key])
    kept = [e for e in binaries if not candidate(e) or fold(_parts(e[0])[-1]) in reached]
    unreachable = [e[0] for e in binaries if candidate(e) and fold(_parts(e[0])[-1]) not in reached]
    return kept, unreachable
