"""Paths of the installer sources and a loader for the scripts under installers/."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
INSTALLERS = REPO / "installers"
SPEC = INSTALLERS / "relay.spec"


def load(name: str) -> ModuleType:
    """Import ``installers/<name>.py`` (not a package; the spec imports it the same way)."""
    module = sys.modules.get(f"installers_{name}")
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(f"installers_{name}", INSTALLERS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def spec_tree() -> ast.Module:
    return ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))


def _root_path(node: ast.expr) -> list[str] | None:
    """``["a", "b"]`` for ``ROOT / "a" / "b"`` (or ``str(ROOT / …)``), else ``None``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" \
            and len(node.args) == 1:
        return _root_path(node.args[0])
    if isinstance(node, ast.Name) and node.id == "ROOT":
        return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) \
            and isinstance(node.right, ast.Constant) and isinstance(node.right.value, str):
        left = _root_path(node.left)
        return None if left is None else [*left, node.right.value]
    return None


def spec_paths() -> list[Path]:
    """Every repository path the spec names as ``ROOT / "a" / "b"`` (longest forms only)."""
    paths = {REPO.joinpath(*parts) for node in ast.walk(spec_tree()) if isinstance(node, ast.BinOp)
             if (parts := _root_path(node))}
    return sorted(p for p in paths if not any(p in q.parents for q in paths))


def spec_datas() -> list[tuple[Path, str]]:
    """The spec's ``DATAS`` list: (repository file, destination folder in the bundle)."""
    for node in ast.walk(spec_tree()):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DATAS"
                                                for t in node.targets):
            assert isinstance(node.value, ast.List)
            out = []
            for elt in node.value.elts:
                assert isinstance(elt, ast.Tuple)
                assert len(elt.elts) == 2
                parts = _root_path(elt.elts[0])
                dest = elt.elts[1]
                assert parts
                assert isinstance(dest, ast.Constant)
                assert isinstance(dest.value, str)
                out.append((REPO.joinpath(*parts), dest.value))
            return out
    raise AssertionError("relay.spec has no DATAS list")
