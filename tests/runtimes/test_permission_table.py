"""The permission table of docs/architecture.md (permission × runtime → what the agent may
do): the table itself — every runtime × policy has a row, every test a row names exists,
the rows marked ⚠ are exactly the shortfalls Relay announces — and the cells' tests that
live nowhere else (flags and session modes, Relay's own tool loop, the announcement)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from relay.core.capabilities import RUNTIME_NAMES
from relay.core.config import load_config
from relay.core.events import Notice
from relay.core.models import PermissionPolicy, SessionSpec
from relay.engine.engine import Engine
from relay.runtimes import permissions
from relay.runtimes.acp import AcpAdapter
from relay.runtimes.acp_agents import ClaudeAcpAdapter, CodexAcpAdapter, GeminiAcpAdapter
from relay.runtimes.base import RunRequest
from relay.runtimes.http.tools import Toolbox, ToolRefused, offered
from relay.runtimes.pi import permission_label, tool_args
from tests.conftest import FAKES_DIR

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "architecture.md"
RO, WS, FULL = PermissionPolicy.READ_ONLY, PermissionPolicy.WORKSPACE, PermissionPolicy.FULL
FAKE_ACP = FAKES_DIR / "bin" / "fake-acp-agent"
_TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def table_rows() -> list[list[str]]:
    """The cells of the "Permission table" (one list per row, header and rule left out)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("#### Permission table"):]
    rows: list[list[str]] = []
    for line in section.splitlines()[1:]:
        if not line.strip():
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] not in ("runtime", "---"):
            rows.append(cells)
    return rows


def cells() -> dict[tuple[str, PermissionPolicy], list[str]]:
    found: dict[tuple[str, PermissionPolicy], list[str]] = {}
    for row in table_rows():
        for runtime in row[0].split(", "):
            key = (runtime, PermissionPolicy(row[1]))
            assert key not in found, f"two rows for {key}"
            found[key] = row
    return found


# =========================================================================== the table


def test_every_runtime_and_policy_has_a_row() -> None:
    table = cells()
    expected = {(r, p) for r in RUNTIME_NAMES if r != "demo" for p in PermissionPolicy}
    assert set(table) == expected
    assert all(len(row) == 6 for row in table.values())


def test_every_row_names_tests_that_exist() -> None:
    for key, row in cells().items():
        named = _TEST.findall(row[5])
        assert named, f"{key}: no test named"
        for path, name in named:
            source = (REPO / path).read_text(encoding="utf-8")
            assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), \
                f"{key}: {path}::{name} does not exist"


def test_the_marked_rows_are_the_shortfalls_relay_announces() -> None:
    marked = {key for key, row in cells().items() if "⚠" in row[4]}
    assert marked == set(permissions.SHORTFALLS)
    for (runtime, policy), words in permissions.SHORTFALLS.items():
        assert permissions.shortfall(runtime, policy) == words
    assert permissions.shortfall("codex", WS) is None


async def test_a_shortfall_is_said_at_the_start_of_the_run(
        relay_home: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions, "SHORTFALLS", {("demo", RO): "The demo cannot read."})
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:
        short = await engine.run_session(SessionSpec(repo=git_repo, task="t", runtime="demo",
                                                     permission=RO))
        fine = await engine.run_session(SessionSpec(repo=git_repo, task="t", runtime="demo"))
        said = [[r.event for r in await engine.session_events(row.id)] for row in (short, fine)]
    finally:
        await engine.close()
    kinds = [e.kind for e in said[0]]
    warnings = [e for e in said[0] if isinstance(e, Notice) and e.category == "warning"]
    assert [w.message for w in warnings] == ["The demo cannot read."]
    assert kinds.index("notice") < kinds.index("session_started")  # before the agent works
    assert not [e for e in said[1] if isinstance(e, Notice) and "cannot" in e.message]


# =========================================================================== Pi


def test_pi_policy_flags() -> None:
    assert tool_args(RO) == ["--tools", "read,grep,find,ls"]
    assert tool_args(WS) == tool_args(FULL) == []  # Pi's default tools: read, bash, edit, write
    assert permission_label(WS) == permission_label(FULL) == "unconfined"


# =========================================================================== ACP agents


@pytest.mark.parametrize(("policy", "flags"), [
    (RO, ["--approval-mode", "plan"]),
    (WS, ["--approval-mode", "auto_edit", "--allowed-tools", "run_shell_command"]),
    (FULL, ["--approval-mode", "yolo"])])
def test_gemini_acp_policy_flags(policy: PermissionPolicy, flags: list[str],
                                 tmp_path: Path) -> None:
    adapter = GeminiAcpAdapter({"RELAY_GEMINI_ACP_BIN": sys.executable})
    argv = adapter.build_argv(RunRequest(prompt="x", cwd=tmp_path, permission=policy))
    assert argv == [sys.executable, "--acp", "--skip-trust", *flags]


#: the modes each bridge offers (claude-code-acp 0.16.2, codex-acp 0.16.0), current first
_BRIDGES: dict[str, tuple[type[AcpAdapter], str]] = {
    "claude-acp": (ClaudeAcpAdapter, "default,acceptEdits,plan,bypassPermissions"),
    "codex-acp": (CodexAcpAdapter, "auto,read-only,full-access")}


@pytest.mark.parametrize(("runtime", "policy", "mode"), [
    ("claude-acp", RO, "plan"), ("claude-acp", WS, "acceptEdits"),
    ("claude-acp", FULL, "bypassPermissions"),
    ("codex-acp", RO, "read-only"), ("codex-acp", WS, "auto"), ("codex-acp", FULL, "full-access")])
async def test_acp_bridge_session_modes(runtime: str, policy: PermissionPolicy, mode: str,
                                        git_repo: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cls, modes = _BRIDGES[runtime]
    log = tmp_path / "acp.log"
    env = {"PATH": str(Path(sys.executable).parent), "RELAY_FAKE_LOG": str(log),
           "RELAY_FAKE_ACP_HOME": str(tmp_path / "acp"), "RELAY_FAKE_ACP_MODES": modes,
           f"RELAY_{runtime.upper().replace('-', '_')}_BIN": str(FAKE_ACP)}
    events = [e async for e in cls(env).run(RunRequest(prompt="x", cwd=git_repo,
                                                       permission=policy))]
    assert events[-1].kind == "session_ended"
    assert not [e for e in events if isinstance(e, Notice)]  # a mode matched: nothing to say
    sent: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    set_modes = [m["params"]["modeId"] for m in sent if m.get("method") == "session/set_mode"]
    in_force = set_modes[-1] if set_modes else modes.split(",")[0]
    assert in_force == mode


# =========================================================================== HTTP runtimes


def toolbox(root: Path, policy: PermissionPolicy) -> Toolbox:
    return Toolbox(root, policy, {"PATH": "/usr/bin:/bin"})


async def test_http_read_only_reads_only(git_repo: Path) -> None:
    assert [t.name for t in offered(RO)] == ["read_file", "list_files"]
    box = toolbox(git_repo, RO)
    assert "# demo" in (await box.call("read_file", {"path": "README.md"})).output
    for name, args in (("write_file", {"path": "x.txt", "content": "x"}),
                       ("edit_file", {"path": "README.md", "old_text": "#", "new_text": "!"}),
                       ("run_command", {"command": "ls"})):
        with pytest.raises(ToolRefused, match="not allowed under the read_only policy"):
            await box.call(name, args)
    assert not (git_repo / "x.txt").exists()


async def test_http_workspace_confines_paths_not_commands(git_repo: Path, tmp_path: Path) -> None:
    box = toolbox(git_repo, WS)
    assert not (await box.call("write_file", {"path": "a/b.txt", "content": "x"})).is_error
    ran = await box.call("run_command", {"command": "touch made-by-command.txt"})
    assert (ran.is_error, ran.exit_code) == (False, 0)
    assert (git_repo / "made-by-command.txt").exists()  # in the worktree
    outside = tmp_path / "outside.txt"
    for args in ({"path": str(outside), "content": "x"}, {"path": "../outside.txt", "content": "x"},
                 {"path": ".git/config", "content": "x"}):
        with pytest.raises(ToolRefused):
            await box.call("write_file", args)
    assert not outside.exists()
    # what it does not confine: a command's own arguments
    await box.call("run_command", {"command": f"touch {outside}"})
    assert outside.exists()


async def test_http_full_reaches_outside(git_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    written = await toolbox(git_repo, FULL).call("write_file", {"path": str(outside),
                                                                "content": "x"})
    assert not written.is_error
    assert outside.read_text() == "x"
