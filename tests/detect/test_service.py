"""The Detector over real stores and the wallet's index; relay-cli detect, adopt and daemon."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from relay.core.accounts import Account
from relay.core.errors import DetectNotFoundError
from relay.detect.model import LiveProcess
from relay.detect.processes import ProcessScan
from relay.detect.service import Detector
from relay.detect.stores.base import StoreItem
from relay.detect.stores.claude import ClaudeStore
from relay.detect.stores.transcript import TranscriptRead
from relay.engine.engine import Engine
from tests.conftest import fixtures_root, make_repo, wait_until
from tests.detect.conftest import no_processes

CLI = [sys.executable, "-m", "relay.cli.main"]
LIMITED = "8a2de846-6864-45b6-bc0a-af654af4dbe4"


def claude_folder(tmp_path: Path, repo: Path, capture: str = "f_usage_limit") -> Path:
    """A Claude configuration folder holding a recorded transcript, its cwd set to ``repo``."""
    folder = tmp_path / f"claude-{capture}"
    shutil.copytree(fixtures_root() / "claude" / "captures" / capture / "config", folder)
    for transcript in folder.rglob("*.jsonl"):
        transcript.write_text(transcript.read_text().replace("<CWD>", str(repo)))
    return folder


async def test_a_session_blocked_by_quota_is_found_with_its_reset_and_usage(
        engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    await engine.accounts.add("claude", "work", claude_folder(tmp_path, repo))
    detector = Detector(engine.accounts, engine.wallet, process_scan=no_processes)
    report = await detector.scan(all_sessions=True)
    limited = next(s for s in report.sessions if s.agent_session_id == LIMITED)
    assert limited.entry == "claude:work"
    assert limited.state == "blocked"
    assert limited.repo == str(repo)
    assert "limit" in limited.why
    assert limited.usage is None  # its only reply was the CLI's own error: no usage indexed
    assert limited.process is None


async def test_unchanged_sessions_are_not_read_again(engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    folder = claude_folder(tmp_path, repo, "b_write_tool")
    await engine.accounts.add("claude", "work", folder)
    reads: list[Path] = []

    class Counting(ClaudeStore):
        def read(self, item: StoreItem) -> TranscriptRead:
            reads.append(item.path)
            return super().read(item)

    detector = Detector(engine.accounts, engine.wallet, stores={"claude": Counting()},
                        process_scan=no_processes)
    refreshes: list[int] = []
    real_refresh = engine.wallet.refresh_index

    async def counted(progress: Any = None) -> Any:
        refreshes.append(1)
        return await real_refresh(progress)

    engine.wallet.refresh_index = counted  # type: ignore[method-assign]
    first = await detector.scan(all_sessions=True)
    assert len(reads) == len(first.sessions) == 1
    usage = first.sessions[0].usage  # from the wallet's index, not a second reader
    assert usage is not None
    assert usage.total == sum(t.total for _, _, e in await engine.wallet.index_entries(
        "claude:work", None) for t in [e.tokens])
    assert usage.total > 0
    await detector.scan(all_sessions=True)
    assert len(reads) == 1  # nothing changed: nothing read
    assert len(refreshes) == 1  # … and the usage index is not asked again
    (transcript,) = folder.rglob("*.jsonl")
    with transcript.open("a") as handle:
        handle.write("\n")
    await detector.scan(all_sessions=True)
    assert len(reads) == 2
    assert len(refreshes) == 2


async def test_a_live_process_in_the_sessions_folder_makes_it_live(engine: Engine,
                                                                   tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    await engine.accounts.add("claude", "work", claude_folder(tmp_path, repo, "b_write_tool"))
    process = LiveProcess(pid=4242, runtime="claude", cmdline=("claude",), cwd=str(repo),
                          started_ms=1, ppid=1, entry="claude:work")

    def one(_: Sequence[Account]) -> ProcessScan:
        return ProcessScan(processes=[process])

    detector = Detector(engine.accounts, engine.wallet, process_scan=one)
    (session,) = (await detector.scan()).sessions
    assert session.process == process
    assert session.state in ("working", "idle")


async def test_find_by_prefix_and_clear_errors(engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    await engine.accounts.add("claude", "work", claude_folder(tmp_path, repo))
    detector = Detector(engine.accounts, engine.wallet, process_scan=no_processes)
    found, read = await detector.find(LIMITED[:8])
    assert found.id == f"claude:{LIMITED}"
    assert read.item.path == found.source
    with pytest.raises(DetectNotFoundError) as none:
        await detector.find("nothing-like-it")
    assert "relay-cli detect --all" in (none.value.hint or "")


def relay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=180,
                          check=False, env=env or os.environ.copy())


def test_detect_then_adopt_a_blocked_session_onto_codex(tmp_path: Path, vault_env: None,
                                                       fakes_on_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    repo = make_repo(tmp_path / "repo")
    (repo / "notes.txt").write_text("uncommitted work\n")
    folder = claude_folder(tmp_path, repo)
    assert relay("accounts", "add", "claude", "work", "--config-dir", str(folder)).returncode == 0

    listed = relay("detect", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    sessions = {s["id"]: s for s in json.loads(listed.stdout)["sessions"]}
    blocked = sessions[f"claude:{LIMITED}"]
    assert blocked["state"] == "blocked"
    assert blocked["repo"] == str(repo)

    adopted = relay("adopt", LIMITED[:8], "--to", "codex")
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    assert f"adopted claude:{LIMITED}" in adopted.stdout
    assert (repo / "notes.txt").read_text() == "uncommitted work\n"  # the user's tree as it was

    missing = relay("adopt", "no-such-session", "--to", "codex")
    assert missing.returncode == 2
    assert "No detected session" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_daemon_announces_a_new_session_once(tmp_path: Path, vault_env: None) -> None:
    repo = make_repo(tmp_path / "repo")
    folder = claude_folder(tmp_path, repo, "b_write_tool")
    assert relay("accounts", "add", "claude", "work", "--config-dir", str(folder)).returncode == 0
    daemon = subprocess.Popen([*CLI, "daemon", "--json", "--interval", "0.2"], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=os.environ.copy())
    lines: list[dict[str, Any]] = []

    def read() -> None:
        assert daemon.stdout is not None
        lines.extend(json.loads(line) for line in daemon.stdout)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # the baseline is the session already there: announced never; a new one: once
        wait_until(lambda: any(n["kind"] == "watching" for n in lines), within=60,
                   what="the daemon's first look")
        extra = claude_folder(tmp_path / "more", repo, "a_text_stream_json")
        target = next(folder.glob("projects/*"))
        for transcript in extra.rglob("*.jsonl"):
            shutil.copy(transcript, target / transcript.name)
        wait_until(lambda: any(n["kind"] == "new" for n in lines), within=60,
                   what="the daemon's announcement of the new session")
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        reader.join(timeout=10)
    new = [n for n in lines if n["kind"] == "new"]
    assert len(new) == 1
    assert new[0]["session"] == "claude:11111111-1111-4111-8111-111111111111"
