"""A store reads regular files only, and boundedly: a FIFO or a device named like a session
(``*.jsonl``) is a problem in the listing, never a read that hangs or never ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Lists the Claude store under argv[1], reads every item it lists and, whatever the listing
# says, each planted path too (a file can be swapped between listing and reading).
_PROBE = """
import json, sys
from pathlib import Path
from relay.detect.stores.base import StoreItem
from relay.detect.stores.claude import ClaudeStore
store = ClaudeStore()
listing = store.list(Path(sys.argv[1]), "claude")
reads = {i.agent_session_id: len(store.read(i).events) for i in listing.items}
problems = {}
for name in sys.argv[2:]:
    path = Path(sys.argv[1]) / "projects" / "-p" / f"{name}.jsonl"
    item = StoreItem("claude", name, "claude", path, 0, 0)
    problems[name] = store.read(item).problems
print(json.dumps({"listed": sorted(reads), "listing_problems": listing.problems,
                  "problems": problems}))
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_device_named_jsonl_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    (project / "good.jsonl").write_text(json.dumps(
        {"type": "user", "sessionId": "good", "message": {"role": "user", "content": "hi"},
         "timestamp": "2026-01-01T00:00:00Z", "cwd": "/tmp"}) + "\n")
    os.mkfifo(project / "fifo.jsonl")
    (project / "zero.jsonl").symlink_to("/dev/zero")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "claude"), "fifo", "zero"],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["listed"] == ["good"]
    assert sorted(p.split(": ", 1)[0] for p in out["listing_problems"]) == [
        f"cannot read {project / 'fifo.jsonl'}", f"cannot read {project / 'zero.jsonl'}"]
    assert all("not a regular file" in p for p in out["listing_problems"])
    for name in ("fifo", "zero"):
        assert any("not a regular file" in p for p in out["problems"][name]), out["problems"]


def test_a_whole_file_read_is_bounded(tmp_path: Path) -> None:
    from relay.detect.stores.base import read_regular

    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 1001)
    assert read_regular(path, 1001) == b"x" * 1001
    with pytest.raises(OSError, match="more than 1,000 bytes"):
        read_regular(path, 1000)
