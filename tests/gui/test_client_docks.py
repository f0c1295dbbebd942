"""In a window that is a client of a host, each feature dock does its work through the host:
wallet, detect, history, pipelines and knowledge go over the host's API (issue 19)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from relay.api.client import RelayClient
from relay.core.models import SessionSpec
from relay.gui.shell import RelayShell
from relay.gui.wallet_backend import AccountForm
from tests.conftest import fixtures_root, make_repo
from tests.gui.conftest import Runner, Started
from tests.gui.designer_helpers import write_pipelines

#: the recorded Claude session that hit its usage limit (tests/fixtures/claude/captures)
LIMITED = "8a2de846-6864-45b6-bc0a-af654af4dbe4"
CHECKED: dict[str, object] = {"name": "checked", "nodes": [
    {"id": "build", "provider": "demo", "task": "build it", "verify": ["true"],
     "position": {"x": 0, "y": 0}}]}


@pytest.fixture
def pair(window: Started, relay_home: Path, vault_env: None, qtbot: QtBot,
         monkeypatch: pytest.MonkeyPatch) -> tuple[RelayShell, RelayShell]:
    """A window that hosts and a second one attached to it as a client."""
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")
    _task, host = window()
    _task, client = window()
    assert host.hosting
    assert not client.hosting
    return host, client


def claude_folder(tmp_path: Path, repo: Path) -> Path:
    """A Claude configuration folder holding a recorded transcript, its cwd set to ``repo``."""
    folder = tmp_path / "claude-work"
    shutil.copytree(fixtures_root() / "claude" / "captures" / "f_usage_limit" / "config", folder)
    for transcript in folder.rglob("*.jsonl"):
        transcript.write_text(transcript.read_text().replace("<CWD>", str(repo)))
    return folder


def test_the_wallet_and_detect_docks_show_the_hosts_accounts_and_sessions(
        pair: tuple[RelayShell, RelayShell], relay_home: Path, git_repo: Path, tmp_path: Path,
        arun: Runner, qtbot: QtBot) -> None:
    host, client = pair
    wallet = client.wallet_vm
    qtbot.waitUntil(lambda: wallet.loaded, timeout=10_000)
    assert wallet.row_of("claude:work") is None
    # an account added over the API (by another front end) shows in the client's wallet
    api = RelayClient.for_home(relay_home)
    assert api is not None
    try:
        arun(api.accounts.add("claude", "work", claude_folder(tmp_path, git_repo)))
    finally:
        arun(api.aclose())
    wallet.refresh()
    qtbot.waitUntil(lambda: wallet.row_of("claude:work") is not None, timeout=10_000)
    assert wallet.is_registered("claude:work")
    assert wallet.watermark == host.engine.wallet.watermark
    # an account the client's dock adds is stored by the host
    wallet.save(AccountForm("claude", "home", tmp_path, "cli_login"))
    qtbot.waitUntil(lambda: wallet.is_registered("claude:home"), timeout=10_000)
    assert arun(host.engine.accounts.get("claude", "home")) is not None
    wallet.set_preferred("claude:home")
    qtbot.waitUntil(lambda: not wallet.is_busy("claude:home"), timeout=10_000)
    book = arun(host.engine.accounts.all())
    assert [a.entry for a in book if a.preferred] == ["claude:home"]

    # the host's detector scans that account's folder; the client's dock lists what it found
    detect = client.detect_vm
    detect.set_show_all(True)
    detect.refresh()
    qtbot.waitUntil(lambda: any(s.agent_session_id == LIMITED for s in detect.sessions()),
                    timeout=20_000)
    found = next(s for s in detect.sessions() if s.agent_session_id == LIMITED)
    assert found.entry == "claude:work"
    assert found.state == "blocked"
    assert detect.status.loaded
    detect.refresh_targets()  # where it can be adopted onto: the host's accounts
    qtbot.waitUntil(lambda: "claude:work" in detect.targets(), timeout=10_000)
    # adopting it starts the continuation in the host; the client window shows it
    with qtbot.waitSignal(detect.adopted, timeout=30_000) as adopted:
        detect.adopt(found.id, "demo")
    assert adopted.args is not None
    sid = str(adopted.args[0])
    assert arun(host.engine.get_session(sid)).runtime == "demo"
    qtbot.waitUntil(lambda: client.sessions_dock.selected_id() == sid, timeout=10_000)


def test_history_shows_a_demo_sessions_timeline_and_its_diff(
        pair: tuple[RelayShell, RelayShell], git_repo: Path, qtbot: QtBot) -> None:
    host, client = pair
    with qtbot.waitSignal(client.bridge.sessionStarted, timeout=10_000) as started:
        client.start_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    assert started.args is not None
    sid = str(started.args[0])
    assert host.engine.is_running_here(sid)
    client.history_dock.raise_()  # in sight: the dock reads
    client.history_vm.set_active(True)
    client.show_session(sid)
    vm = client.history_vm
    qtbot.waitUntil(lambda: vm.timeline is not None and vm.timeline.state == "completed"
                    and len(vm.timeline.stints) == 1, timeout=30_000)
    assert vm.session_id == sid
    assert vm.timeline is not None
    sha = next(e.sha for e in vm.timeline.entries if e.kind == "commit" and e.sha)
    vm.select(f"commit:{sha}")
    qtbot.waitUntil(lambda: bool(vm.files) and vm.source is not None
                    and vm.source.sha == sha, timeout=10_000)
    assert [(f.path, f.status) for f in vm.files] == [("RELAY_DEMO_NOTES.md", "added")]
    assert vm.diff_title.startswith(f"Commit {sha[:10]}")


def test_the_designer_validates_asks_trust_and_runs_in_the_host(
        pair: tuple[RelayShell, RelayShell], git_repo: Path, qtbot: QtBot) -> None:
    host, client = pair
    write_pipelines(git_repo, CHECKED)
    vm = client.designer_vm
    vm.set_repo(git_repo)
    qtbot.waitUntil(lambda: vm.pipeline.name == "checked", timeout=10_000)
    assert vm.problems() == []
    vm.connect_nodes("build", "build")  # refused: a step cannot wait for itself
    vm.edit_node("build", "provider", "")
    assert vm.problems()  # the draft says what is wrong before anything runs
    assert vm.run_problem() is not None
    vm.undo_stack.undo()
    assert vm.problems() == []

    assert vm.run_pipeline()
    dock = client.designer_dock
    # the host read the file: its commands are not accepted yet, so the dock asks
    qtbot.waitUntil(lambda: dock.question is not None and dock.question.isVisible(),
                    timeout=10_000)
    assert dock.question is not None
    assert "true" in dock.question.text() + dock.question.informativeText()
    dock.question.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: vm.run.run is not None and vm.run.run.finished, timeout=60_000)
    run = vm.run.run
    assert run is not None
    assert run.state == "succeeded", run.reason
    assert [r.id for r in host.engine.pipelines.runs()] == [run.id]  # it ran in the host
    assert vm.run.steps["build"].state == "succeeded"
    qtbot.waitUntil(lambda: [r.id for r in vm.run.runs] == [run.id], timeout=10_000)


def test_knowledge_scans_and_searches_through_the_host(
        pair: tuple[RelayShell, RelayShell], tmp_path: Path, qtbot: QtBot) -> None:
    _host, client = pair
    repo = make_repo(tmp_path / "k", {"greet.py": "def greet_the_user(name):\n"
                                                  "    return f'hello {name}'\n"})
    vm = client.knowledge_vm
    said: list[str] = []
    vm.statusChanged.connect(said.append)
    vm.scan_repo = repo
    vm.scan()
    qtbot.waitUntil(lambda: any(s.startswith("Scanned ") for s in said), timeout=20_000)
    vm.search("greet_the_user")
    qtbot.waitUntil(lambda: bool(vm.hits), timeout=10_000)
    assert vm.hits[0].path == "greet.py"
    previews: list[object] = []
    vm.previewChanged.connect(previews.append)
    vm.select(0)
    qtbot.waitUntil(lambda: any(p is not None for p in previews), timeout=10_000)
