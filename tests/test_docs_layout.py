"""docs/architecture.md's layout lists every module as the code has it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("layout", ROOT / "scripts" / "layout.py")
assert _spec is not None
assert _spec.loader is not None
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)


def test_the_layout_block_is_the_code_as_it_is() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert layout.current(doc) == layout.block(), (
        "docs/architecture.md's layout is out of date: run python scripts/layout.py --write")


def test_every_module_is_listed_once() -> None:
    text = layout.block()
    for path in (ROOT / "app" / "relay").rglob("*.py"):
        if "__pycache__" in path.parts or path.name == "__init__.py":
            continue
        rel = path.relative_to(ROOT / "app" / "relay")
        listed = str(rel.relative_to(rel.parts[0])) if len(rel.parts) > 1 else str(rel)
        assert f" {listed} " in text or text.count(f"  {listed}") == 1, listed
