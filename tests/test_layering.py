"""The core, the runtimes, the sessions and the CLI never import Qt."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys

import relay

QT_FREE = ("relay.core", "relay.runtimes", "relay.sessions", "relay.cli", "relay.wallet", "relay.detect",
           "relay.pipelines", "relay.history", "relay.knowledge", "relay.engine")

_PROBE = """
import importlib, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6', 'qasync'):
            raise ImportError('Qt is blocked in this test: ' + name)
sys.meta_path.insert(0, Block())
for name in sys.argv[1:]:
    importlib.import_module(name)
loaded = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync')]
assert not loaded, loaded
print('ok', len(sys.argv) - 1)
"""


def qt_free_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(relay.__path__, "relay."):
        if info.name.startswith(QT_FREE):
            names.append(info.name)
    return names


def test_core_and_cli_import_without_qt() -> None:
    modules = qt_free_modules()
    assert "relay.cli.main" in modules
    assert "relay.engine.engine" in modules
    proc = subprocess.run([sys.executable, "-c", _PROBE, *modules], capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"ok {len(modules)}"


def test_cli_demo_runs_with_qt_blocked(tmp_path: object) -> None:
    runner = _PROBE.replace("for name in sys.argv[1:]:\n    importlib.import_module(name)\n",
                            "from relay.cli.main import main\nrc = main(['demo'])\nassert rc == 0\n")
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0"}
    proc = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True,
                          check=False, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "COMPLETED" in proc.stdout
