"""The GUI's modules import each other without a cycle (lazy and TYPE_CHECKING imports too).

An AST walk, not an import: every ``import`` / ``from … import`` anywhere in a module —
at the top, inside a function, under ``if TYPE_CHECKING`` — is an edge (to the module it
names, as import-linter counts them: a submodule's import is not one of its package). launch → smoke →
shell is the order the window's startup modules keep.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from pathlib import Path

import relay.gui

GUI_DIR = Path(relay.gui.__file__).parent
PACKAGE = "relay.gui"


def module_name(path: Path, root: Path = GUI_DIR) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def imported_names(tree: ast.AST, module: str, is_package: bool,
                   modules: Collection[str]) -> set[str]:
    """Every module of ``modules`` that ``tree`` imports. As grimp (import-linter) counts
    them: ``from a import b`` is an import of the module ``a.b`` when there is one, else of
    ``a``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[:len(package) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                names.add(sub if sub in modules else base)
    return {name for name in names if name in modules and name != module}


def gui_import_graph(root: Path = GUI_DIR) -> dict[str, set[str]]:
    """relay.gui module → the relay.gui modules it imports."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        graph[module] = imported_names(ast.parse(path.read_text(), str(path)), module,
                                       path.name == "__init__.py", files)
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or ``None``."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start}
        stack = [iter(sorted(graph[start]))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
                continue
            if nxt in on_path:
                return [*path[path.index(nxt):], nxt]
            if nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_the_gui_modules_import_each_other_without_a_cycle() -> None:
    graph = gui_import_graph()
    assert "relay.gui.launch" in graph
    assert "relay.gui.docks.handoff_dock" in graph

    cycle = find_cycle(graph)

    assert cycle is None, "import cycle in relay.gui: " + " → ".join(cycle or [])


def test_the_startup_modules_go_one_way() -> None:
    graph = gui_import_graph()
    assert {"relay.gui.shell", "relay.gui.smoke"} <= graph["relay.gui.launch"]
    assert "relay.gui.shell" in graph["relay.gui.smoke"]
    assert not {"relay.gui.launch", "relay.gui.smoke"} & graph["relay.gui.shell"]


def test_lazy_and_type_checking_imports_count(tmp_path: Path) -> None:
    pkg = tmp_path / "gui"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from relay.gui.b import g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from relay.gui import c\n")
    (pkg / "c.py").write_text("from . import a\n")

    graph = gui_import_graph(pkg)

    assert find_cycle(graph) == ["relay.gui.a", "relay.gui.b", "relay.gui.c", "relay.gui.a"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None

