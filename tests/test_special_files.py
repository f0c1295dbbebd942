"""A hostile repository's FIFO or device never hangs Relay (issue 18, item 8's class).

Opening a FIFO for reading waits for a writer that never comes; a symlink to /dev/zero
never ends. Every reader of a file someone else made goes through
``core.fsutil.open_regular`` (or skips what ``lstat`` says is not a regular file), so such
a file is a clear problem, not a hang. Each reader is driven on its own thread with a
deadline: a hang fails the test instead of blocking it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import PipelineError
from relay.core.fsutil import open_regular, read_regular
from relay.knowledge.scanner import scan_repo
from relay.knowledge.store import open_store
from relay.pipelines import files, trust
from relay.sessions.instructions import discover
from tests.conftest import make_repo

DEADLINE_S = 20


def within_deadline(fn: Callable[[], Any]) -> Any:
    """``fn()``'s result (or its exception), failing the test if it does not return."""
    out: dict[str, Any] = {}

    def call() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 — handed back to the test
            out["error"] = exc

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    if worker.is_alive():
        # unblock the reader so the thread ends: a writer opens every FIFO in the repo
        pytest.fail(f"{fn} did not return within {DEADLINE_S} s (it waits on a FIFO)")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.jsonl"
    if kind == "fifo":
        fifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        within_deadline(lambda: read_regular(path, 1024))
    plain = tmp_path / "plain.json"
    plain.write_bytes(b"{}")
    with open_regular(plain) as fh:
        assert fh.read() == b"{}"


def test_a_pipelines_file_that_is_a_fifo_is_a_clear_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    fifo(files.repo_file(repo))
    with pytest.raises(PipelineError, match="not a regular file"):
        within_deadline(lambda: files.list_pipelines(repo))
    with pytest.raises(PipelineError, match="not a regular file"):
        within_deadline(lambda: trust.read_source(files.repo_file(repo)))


def test_pipeline_list_on_a_fifo_exits_with_one_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    fifo(files.repo_file(repo))
    env = {**os.environ, "RELAY_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "relay.cli.main", "pipeline", "list",
                           "--repo", str(repo)], capture_output=True, text=True, env=env,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "not a regular file" in " ".join(done.stderr.split())


def test_an_instruction_file_that_is_a_fifo_is_skipped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n", "CLAUDE.md": "Be brief.\n"})
    fifo(repo / "AGENTS.md")
    found = within_deadline(lambda: discover(repo))
    assert [f.path for f in found.files] == ["CLAUDE.md"]
    assert any(s.startswith("AGENTS.md was skipped") for s in found.skipped), found.skipped


def test_the_knowledge_scan_skips_a_tracked_file_replaced_by_a_fifo(tmp_path: Path) -> None:
    """git's status already hides a FIFO (it reads as deleted); the scanner's own lstat
    check keeps that so whatever lists the files."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n", "app.py": "def f():\n    return 1\n",
                                         "lib.py": "X = 1\n"})
    (repo / "app.py").unlink()
    fifo(repo / "app.py")
    fifo(repo / "new.py")  # untracked
    store = open_store(tmp_path / "knowledge.sqlite")
    try:
        within_deadline(lambda: scan_repo(store, repo))
        indexed = set(store.file_shas(str(repo)))
    finally:
        store.close()
    assert "lib.py" in indexed
    assert not indexed & {"app.py", "new.py"}
