"""The layers contract (pyproject.toml, docs/architecture.md "The stack") holds, and it would
catch every import that once ran the wrong way.

A copy of the package gets each historical offender planted back — at module level, lazily
inside a function, and under ``TYPE_CHECKING`` — and import-linter must name every one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c;"
        " sys.exit(c())"]

#: (importer, imported, how): the imports issue 17 named, each planted back in a copy
OFFENDERS = [
    ("relay.core.models", "relay.engine.engine", "typing"),        # core held the Engine
    ("relay.core.config", "relay.runtimes.registry", "lazy"),      # core drove an adapter
    ("relay.core.models", "relay.runtimes.base", "typing"),        # PermissionPolicy lived up there
    ("relay.runtimes.claude_stream", "relay.sessions.runner", "top"),  # the classifier in sessions
    ("relay.wallet.costs", "relay.runtimes.registry", "lazy"),     # wallet ↔ runtimes
    ("relay.sessions.briefing", "relay.knowledge.service", "top"),  # sessions → knowledge.facts
    ("relay.runtimes.http.structured", "relay.pipelines.service", "lazy"),  # → pipelines.model
    ("relay.pipelines.service", "relay.engine.engine", "typing"),  # features took the Engine
    ("relay.detect.adopt", "relay.pipelines.service", "top"),      # siblings stay apart
    ("relay.mcp.server", "relay.gui.shell", "lazy"),               # nothing imports the window
]

_PLANT = {
    "top": "\nimport {imported}  # planted\n",
    "lazy": "\n\ndef _planted() -> None:\n    import {imported}  # noqa: F401\n",
    "typing": "\nfrom typing import TYPE_CHECKING as _TC\nif _TC:\n    import {imported}  # planted\n",
}


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "app"), "COLUMNS": "200"}
    return subprocess.run([*LINT, "--no-cache", "--no-logo", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_the_stack_holds() -> None:
    proc = lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Relay is a stack" in proc.stdout


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(ROOT / "app" / "relay", root / "app" / "relay",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    for importer, imported, how in OFFENDERS:
        path = root / "app" / Path(*importer.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        with path.open("a", encoding="utf-8") as f:
            f.write(_PLANT[how].format(imported=imported))
    proc = lint(root)
    assert proc.returncode != 0
    return proc.stdout


@pytest.mark.parametrize(("importer", "imported", "how"), OFFENDERS)
def test_the_contract_names_each_planted_offender(planted: str, importer: str, imported: str,
                                                  how: str) -> None:
    assert f"{importer} -> {imported}" in planted, f"a {how} import was not caught"
