"""installers/relay.spec: what it names exists, the frozen layout matches the app's lookups."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import relay
from tests.installers.helpers import REPO, load, spec_datas, spec_paths, spec_tree


def test_every_path_the_spec_names_exists() -> None:
    paths = spec_paths()
    assert paths, "the spec names no repository paths (did its ROOT / … style change?)"
    missing = [str(p.relative_to(REPO)) for p in paths if not p.exists()]
    assert not missing, f"relay.spec names files that do not exist: {missing}"


def test_datas_are_files_and_include_both_icons() -> None:
    datas = spec_datas()
    assert all(source.is_file() for source, _ in datas), datas
    names = {(source.name, dest) for source, dest in datas}
    assert ("relay.svg", "resources/icons") in names
    assert ("relay-256.png", "resources/icons") in names


def test_every_file_of_the_web_board_ships() -> None:
    web = REPO / "app" / "relay" / "api" / "web"
    shipped = {source for source, _ in spec_datas()}
    wanted = {p for sub in ("templates", "static") for p in (web / sub).iterdir() if p.is_file()}
    assert wanted
    assert wanted - shipped == set()


def test_the_frozen_layout_is_where_the_window_looks_for_its_icons(tmp_path: Path) -> None:
    """Lay the datas out as PyInstaller does (under sys._MEIPASS) and ask relay.gui.resources."""
    pytest.importorskip("PySide6")
    meipass = tmp_path / "_internal"
    for source, dest in spec_datas():
        (meipass / dest).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, meipass / dest / source.name)
    probe = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.frozen = True
        sys._MEIPASS = {str(meipass)!r}
        import relay.gui.resources as resources
        assert hasattr(resources, "_PACKAGE_DIR"), (
            "relay.gui.resources changed how it finds files: update the spec's DATAS and this test")
        # no package copy, no source checkout: only the frozen folder can answer
        resources._PACKAGE_DIR = Path({str(tmp_path / "elsewhere" / "app" / "relay")!r})
        for name in ("icons/relay.svg", "icons/relay-256.png"):
            found = resources.find_resource(name)
            assert found is not None, name
            assert Path(found).is_relative_to({str(meipass)!r}), found
        print("ok")
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_version_is_one_number_everywhere() -> None:
    """The spec stamps the bundle from package metadata; the CLI prints relay.__version__."""
    with open(REPO / "pyproject.toml", "rb") as fh:
        declared = tomllib.load(fh)["project"]["version"]
    assert relay.__version__ == declared
    assert importlib.metadata.version("relay") == declared, (
        "the installed metadata is stale: pip install -e . again")


def _imported_modules() -> set[str]:
    names: set[str] = set()
    for path in (REPO / "app" / "relay").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_nothing_relay_imports_is_excluded_from_the_bundle() -> None:
    """Using e.g. QtNetwork or QtSvgWidgets in the app needs installers/bundle_trim.py updated."""
    excluded = load("bundle_trim").EXCLUDED_MODULES
    used = _imported_modules()
    assert "PySide6.QtWidgets" in used  # the scan sees the GUI's imports
    clashes = sorted(name for name in used for ex in excluded
                     if name == ex or name.startswith(ex + "."))
    assert not clashes, f"excluded from the frozen build but imported by Relay: {clashes}"


def _calls(name: str) -> list[ast.Call]:
    return [node for node in ast.walk(spec_tree()) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id == name]


def _keyword(call: ast.Call, name: str) -> ast.expr:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    raise AssertionError(f"{ast.unparse(call.func)}(…) has no {name}=")


def test_two_executables_one_collect() -> None:
    exes = {ast.literal_eval(_keyword(call, "name")): call for call in _calls("EXE")}
    assert set(exes) == {"relay", "relay-cli"}
    assert ast.unparse(_keyword(exes["relay-cli"], "console")) == "True"
    assert ast.unparse(_keyword(exes["relay"], "console")) == "not (IS_WIN or IS_MAC)"
    (collect,) = _calls("COLLECT")
    # the window first: a .app's CFBundleExecutable is the first executable
    assert [ast.unparse(a) for a in collect.args[:2]] == ["gui_exe", "cli_exe"]
    assert ast.literal_eval(_keyword(collect, "name")) == "relay"


def test_the_cli_analysis_stays_qt_free() -> None:
    analyses = {ast.unparse(node.targets[0]): node.value for node in ast.walk(spec_tree())
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func) == "Analysis"}
    cli_excludes = ast.unparse(analyses["cli"])
    for module in ("PySide6", "shiboken6", "qasync", "relay.gui"):
        assert repr(module) in cli_excludes, module  # ast.unparse quotes with '


def test_macos_app_plist() -> None:
    (bundle,) = _calls("BUNDLE")
    assert ast.literal_eval(_keyword(bundle, "bundle_identifier")) == "dev.relay.Relay"
    assert ast.literal_eval(_keyword(bundle, "name")) == "Relay.app"
    plist = _keyword(bundle, "info_plist")
    assert isinstance(plist, ast.Dict)
    values = {ast.literal_eval(k): ast.unparse(v) for k, v in zip(plist.keys, plist.values, strict=True)
              if k is not None}
    assert values["LSUIElement"] == "False"
    assert values["LSBackgroundOnly"] == "False"  # relay-cli is a console EXE; the app is not
    assert values["NSHighResolutionCapable"] == "True"


def test_keyring_metadata_and_backends_are_frozen() -> None:
    text = ast.unparse(spec_tree())
    assert "copy_metadata('relay')" in text
    assert "copy_metadata('keyring')" in text  # keyring finds backends through entry points
    assert "collect_submodules('keyring.backends')" in text
    assert "collect_submodules('relay.runtimes')" in text  # the registry imports adapters by name


def test_the_tui_and_textual_freeze() -> None:
    """relay-cli tui: Textual loads its widgets by name and reads its version from metadata;
    its CSS and the TUI's are Python strings — a .tcss file would need a DATAS entry."""
    text = ast.unparse(spec_tree())
    assert "collect_submodules('textual.widgets')" in text
    assert "copy_metadata('textual')" in text
    shipped = {source for source, _ in spec_datas()}
    tui = REPO / "app" / "relay" / "cli" / "tui"
    assert (tui / "app.py").is_file()
    loose = {p for p in tui.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")}
    assert loose - shipped == set()
    found = importlib.util.find_spec("textual")
    assert found is not None
    assert found.origin is not None
    textual_css = [p.name for p in Path(found.origin).parent.rglob("*.tcss")]
    assert textual_css == [], "textual ships CSS files now: add them to the spec's DATAS"
