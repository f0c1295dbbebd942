"""installers/bundle_trim.py: which Qt plugins and libraries the frozen bundle keeps."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from tests.installers.helpers import INSTALLERS, REPO, load

trim_module = load("bundle_trim")
Entry = tuple[str, str, str]

LINUX_PLUGINS = [
    "PySide6/Qt/plugins/platforms/libqxcb.so",
    "PySide6/Qt/plugins/platforms/libqwayland.so",
    "PySide6/Qt/plugins/platforms/libqoffscreen.so",
    "PySide6/Qt/plugins/platforms/libqvnc.so",
    "PySide6/Qt/plugins/platforms/libqeglfs.so",
    "PySide6/Qt/plugins/platformthemes/libqgtk3.so",
    "PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so",
    "PySide6/Qt/plugins/imageformats/libqsvg.so",
    "PySide6/Qt/plugins/imageformats/libqpdf.so",
    "PySide6/Qt/plugins/iconengines/libqsvgicon.so",
    "PySide6/Qt/plugins/platforminputcontexts/libqtvirtualkeyboardplugin.so",
    "PySide6/Qt/plugins/platforminputcontexts/libcomposeplatforminputcontextplugin.so",
    "PySide6/Qt/plugins/tls/libqopensslbackend.so",
    "PySide6/Qt/plugins/generic/libqevdevmouseplugin.so",
]
KEPT_ON_LINUX = {"libqxcb.so", "libqwayland.so", "libqoffscreen.so", "libqxdgdesktopportal.so",
                 "libqsvg.so", "libqsvgicon.so", "libcomposeplatforminputcontextplugin.so"}


def no_deps(_path: str) -> list[str]:
    return []


def binaries(*dests: str, typecode: str = "BINARY") -> list[Entry]:
    return [(d, f"/src/{d}", typecode) for d in dests]


def names(entries: list[Entry]) -> set[str]:
    return {e[0].replace("\\", "/").rsplit("/", 1)[-1] for e in entries}


def test_linux_keeps_only_the_plugins_relay_uses() -> None:
    kept, _datas, dropped = trim_module.trim(binaries(*LINUX_PLUGINS), [], "linux", needed=no_deps)
    assert names(kept) == KEPT_ON_LINUX
    assert len(dropped) == len(LINUX_PLUGINS) - len(KEPT_ON_LINUX)


@pytest.mark.parametrize(("system", "dest", "kept"), [
    ("windows", "PySide6\\plugins\\platforms\\qwindows.dll", True),
    ("windows", "PySide6\\plugins\\platforms\\qdirect2d.dll", False),
    ("windows", "PySide6\\plugins\\styles\\qmodernwindowsstyle.dll", True),
    ("windows", "PySide6\\plugins\\imageformats\\qico.dll", True),
    ("windows", "PySide6\\plugins\\imageformats\\qjpeg.dll", False),
    ("darwin", "PySide6/Qt/plugins/platforms/libqcocoa.dylib", True),
    ("darwin", "PySide6/Qt/plugins/styles/libqmacstyle.dylib", True),
    ("darwin", "PySide6/Qt/plugins/imageformats/libqicns.dylib", True),
    ("darwin", "PySide6/Qt/plugins/platforms/libqminimal.dylib", False),
])
def test_plugins_on_windows_and_macos(system: str, dest: str, kept: bool) -> None:
    result, _datas, _dropped = trim_module.trim(binaries(dest), [], system, needed=no_deps)
    assert (result != []) is kept


def test_linux_leaves_the_desktop_stack_to_the_system() -> None:
    entries = binaries("libxcb-cursor.so.0", "libX11.so.6", "libfontconfig.so.1", "libdbus-1.so.3",
                       "libglib-2.0.so.0", "libgtk-3.so.0", "libxkbcommon-x11.so.0", "libsqlite3.so.0",
                       "libpython3.11.so.1.0")
    entries.append(("_cffi_backend.cpython-311-x86_64-linux-gnu.so", "/src/cffi.so", "EXTENSION"))
    root = ("relay_ext.so", "/src/relay_ext.so", "EXTENSION")
    entries.append(root)

    def needed(path: str) -> list[str]:
        return ["libsqlite3.so.0", "libX11.so.6"] if path == root[1] else []

    kept, _datas, dropped = trim_module.trim(entries, [], "linux", needed=needed)
    # system libraries go (even one the app links: it becomes a .deb dependency);
    # a bundled host library something links stays; python's own and extensions stay
    assert names(kept) == {"libsqlite3.so.0", "libpython3.11.so.1.0",
                           "_cffi_backend.cpython-311-x86_64-linux-gnu.so", "relay_ext.so"}
    assert "libX11.so.6" in dropped
    assert "libgtk-3.so.0" in dropped


def test_qt_charts_keeps_what_it_links_and_none_of_the_rest_of_addons() -> None:
    # the dependencies as objdump reads them from PySide6-Addons 6.11 (QtCharts.abi3.so and
    # libQt6Charts link OpenGL and OpenGLWidgets); WebEngine and 3D came with a hook only
    lib = "PySide6/Qt/lib/"
    entries = [
        ("PySide6/QtCharts.abi3.so", "/charts.so", "EXTENSION"),
        (lib + "libQt6Charts.so.6", "/qtcharts", "BINARY"),
        (lib + "libQt6OpenGLWidgets.so.6", "/qtglw", "BINARY"),
        (lib + "libQt6OpenGL.so.6", "/qtgl", "BINARY"),
        (lib + "libQt6Widgets.so.6", "/qtw", "BINARY"),
        (lib + "libQt6Gui.so.6", "/qtg", "BINARY"),
        (lib + "libQt6Core.so.6", "/qtc", "BINARY"),
        (lib + "libQt6ChartsQml.so.6", "/chartsqml", "BINARY"),
        (lib + "libQt6WebEngineCore.so.6", "/webengine", "BINARY"),
        (lib + "libQt63DCore.so.6", "/3d", "BINARY"),
    ]
    widgets = ["libQt6Widgets.so.6", "libQt6Gui.so.6", "libQt6Core.so.6"]
    deps = {"/charts.so": ["libQt6Charts.so.6", "libQt6OpenGLWidgets.so.6", *widgets],
            "/qtcharts": ["libQt6OpenGLWidgets.so.6", "libQt6OpenGL.so.6", *widgets],
            "/qtglw": ["libQt6OpenGL.so.6", *widgets], "/qtgl": ["libQt6Gui.so.6"],
            "/qtw": ["libQt6Gui.so.6", "libQt6Core.so.6"], "/qtg": ["libQt6Core.so.6"],
            "/chartsqml": ["libQt6Charts.so.6"], "/webengine": ["libQt6Core.so.6"]}
    kept, _datas, dropped = trim_module.trim(entries, [], "linux", needed=lambda p: deps.get(p, []))
    assert names(kept) == {"QtCharts.abi3.so", "libQt6Charts.so.6", "libQt6OpenGLWidgets.so.6",
                           "libQt6OpenGL.so.6", *widgets}
    assert {d.rsplit("/", 1)[-1] for d in dropped} == {
        "libQt6ChartsQml.so.6", "libQt6WebEngineCore.so.6", "libQt63DCore.so.6"}


def test_the_spec_freezes_the_wallets_charts() -> None:
    # relay.gui's submodules are hidden imports, so the lazily imported charts module (and
    # with it PySide6.QtCharts) is analysed although nothing imports it at start-up
    assert 'collect_submodules("relay.gui")' in (INSTALLERS / "relay.spec").read_text()
    assert (REPO / "app" / "relay" / "gui" / "wallet_charts.py").is_file()
    assert not [m for m in trim_module.EXCLUDED_MODULES if "QtCharts" in m]


def test_qt_libraries_nothing_links_are_dropped_transitively() -> None:
    lib = "PySide6/Qt/lib/"
    entries = [
        ("PySide6/QtWidgets.abi3.so", "/w.so", "EXTENSION"),
        (lib + "libQt6Widgets.so.6", "/qtw", "BINARY"),
        (lib + "libQt6Gui.so.6", "/qtg", "BINARY"),
        (lib + "libQt6Core.so.6", "/qtc", "BINARY"),
        (lib + "libicuuc.so.73", "/icu", "BINARY"),
        (lib + "libQt6Quick.so.6", "/quick", "BINARY"),  # only the virtual keyboard used it
        (lib + "libQt6Network.so.6", "/net", "BINARY"),
        ("PySide6/Qt/plugins/platforminputcontexts/libqtvirtualkeyboardplugin.so", "/vk", "BINARY"),
    ]
    deps = {"/w.so": ["libQt6Widgets.so.6"], "/qtw": ["libQt6Gui.so.6", "libQt6Core.so.6"],
            "/qtg": ["libQt6Core.so.6"], "/qtc": ["libicuuc.so.73"], "/vk": ["libQt6Quick.so.6"],
            "/quick": ["libQt6Network.so.6", "libQt6Core.so.6"]}
    kept, _datas, dropped = trim_module.trim(entries, [], "linux", needed=lambda p: deps.get(p, []))
    assert names(kept) == {"QtWidgets.abi3.so", "libQt6Widgets.so.6", "libQt6Gui.so.6",
                           "libQt6Core.so.6", "libicuuc.so.73"}
    assert {d.rsplit("/", 1)[-1] for d in dropped} == {
        "libQt6Quick.so.6", "libQt6Network.so.6", "libqtvirtualkeyboardplugin.so"}


def test_windows_walk_is_case_insensitive_and_spares_dynamically_loaded_dlls() -> None:
    entries = [
        ("PySide6\\QtCore.pyd", "C:/qc.pyd", "EXTENSION"),
        ("PySide6\\Qt6Core.dll", "C:/core.dll", "BINARY"),
        ("PySide6\\Qt6Pdf.dll", "C:/pdf.dll", "BINARY"),
        ("PySide6\\opengl32sw.dll", "C:/sw.dll", "BINARY"),  # loaded at run time, never linked
    ]
    needed: Callable[[str], list[str]] = lambda p: ["QT6CORE.DLL"] if p == "C:/qc.pyd" else []  # noqa: E731
    kept, _datas, dropped = trim_module.trim(entries, [], "windows", needed=needed)
    assert names(kept) == {"QtCore.pyd", "Qt6Core.dll", "opengl32sw.dll"}
    assert dropped == ["PySide6\\Qt6Pdf.dll"]


def test_macos_does_not_walk_dependencies() -> None:
    entries = binaries("PySide6/Qt/lib/QtNetwork.framework/Versions/A/QtNetwork")

    def never(_path: str) -> list[str]:
        raise AssertionError("no dependency walk on macOS")

    kept, _datas, _dropped = trim_module.trim(entries, [], "darwin", needed=never)
    assert kept == entries


def test_translations_and_dangling_symlinks_go() -> None:
    lib = "PySide6/Qt/lib/"
    entries = [
        ("PySide6/QtCore.abi3.so", "/c.so", "EXTENSION"),
        (lib + "libQt6Core.so.6", "/core", "BINARY"),
        (lib + "libQt6Network.so.6", "/net", "BINARY"),
    ]
    datas = [
        ("PySide6/Qt/translations/qtbase_de.qm", "/de.qm", "DATA"),
        ("resources/icons/relay.svg", "/relay.svg", "DATA"),
        ("libQt6Core.so.6", "PySide6/Qt/lib/libQt6Core.so.6", "SYMLINK"),
        ("libQt6Network.so.6", "PySide6/Qt/lib/libQt6Network.so.6", "SYMLINK"),
    ]
    kept, kept_datas, dropped = trim_module.trim(
        entries, datas, "linux", needed=lambda p: ["libQt6Core.so.6"] if p == "/c.so" else [])
    assert names(kept) == {"QtCore.abi3.so", "libQt6Core.so.6"}
    assert [d[0] for d in kept_datas] == ["resources/icons/relay.svg", "libQt6Core.so.6"]
    assert "libQt6Network.so.6" in dropped
    assert "PySide6/Qt/translations/qtbase_de.qm" in dropped


def test_the_platforms_relay_needs_are_kept() -> None:
    platforms = trim_module.KEEP_PLUGINS["platforms"]
    assert {"qoffscreen", "qxcb", "qwayland", "qcocoa", "qwindows"} <= platforms
    assert "qsvgicon" in trim_module.KEEP_PLUGINS["iconengines"]


def test_elf_needed_reads_direct_dependencies_only() -> None:
    """objdump -p on pygit2's extension: libgit2 (its own NEEDED), not libgit2's libssl (ldd would)."""
    if not sys.platform.startswith("linux") or shutil.which("objdump") is None:
        pytest.skip("ELF files and objdump (binutils) only on Linux")
    extension = next(Path(pygit2.__file__).parent.glob("_pygit2*.so"))
    needed = trim_module.elf_needed(str(extension))
    assert any(name.startswith("libgit2") for name in needed), needed
    assert not any(name.startswith("libssl") for name in needed), needed
