"""installers/smoke.py against fake executables: what passes, what fails, when the window
window's own --smoke-test is required."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.installers.helpers import INSTALLERS, load

FAKE_CLI = """
import os, sys
args = sys.argv[1:]
outputs = {
    "--version": "relay 1.2.3",
    "doctor": "data folder: " + os.environ["RELAY_HOME"] + "\\ndatabase: x\\n"
              "secrets: encrypted file x\\ndesktop window: available (`relay`)",
    "demo": "COMPLETED session abc",
    "sessions": "abc completed",
    "audit": "audit log: ok",
    "wallet": "demo demo · a simulation",
    "detect": '{"sessions": []}',
    "pipeline": "engine A's late write was refused",
    "--usage-worker": "",
}
os.makedirs(os.environ["RELAY_HOME"], exist_ok=True)
if args[0] == "mcp":  # a minimal MCP server on stdio, until stdin closes
    import json
    tools = [{"name": n} for n in os.environ.get("FAKE_MCP_TOOLS", "relay_start_session "
             "relay_list_sessions relay_session_events relay_wallet_summary relay_run_pipeline").split()]
    answers = {"initialize": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "serverInfo": {"name": "relay", "version": "1.2.3"}},
               "tools/list": {"tools": tools}}
    for line in sys.stdin:
        frame = json.loads(line)
        if "id" in frame:
            print(json.dumps({"jsonrpc": "2.0", "id": frame["id"],
                              "result": answers[frame["method"]]}), flush=True)
    sys.exit(int(os.environ.get("FAKE_MCP_RC", "0")))
if args[0] == "show":  # an unknown session, named by a secret: printed scrubbed
    print("error: No session '[REDACTED:slack_token]'.", file=sys.stderr)
    sys.exit(2)
print(outputs[args[0]])
sys.exit(int(os.environ.get("FAKE_CLI_RC", "0")))
"""

FAKE_WINDOW = """
import os, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("relay 1.2.3")
elif args == ["--help"]:
    print("usage: relay [--demo]" + (" [--smoke-test]" if os.environ.get("FAKE_HAS_FLAG") else ""))
elif args == ["--smoke-test"]:
    sys.exit(int(os.environ.get("FAKE_SMOKE_RC", "0")))
elif args == ["--demo"]:
    if os.environ.get("FAKE_DEMO_CRASH"):
        print("Traceback: boom"); sys.exit(1)
    time.sleep(60)
"""


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "bundle"
    folder.mkdir()
    for name, body in (("relay-cli", FAKE_CLI), ("relay", FAKE_WINDOW)):
        exe = folder / name
        exe.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body), encoding="utf-8")
        exe.chmod(0o755)
    return folder


def smoke(bundle: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(INSTALLERS / "smoke.py"), str(bundle), *args],
        capture_output=True, text=True, timeout=120, check=False, env={**os.environ, **env})


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fake executables are scripts")


def test_a_window_without_the_smoke_flag_fails_the_build(bundle: Path) -> None:
    proc = smoke(bundle, FAKE_SMOKE_RC="2")  # argparse's answer to an unknown flag
    assert proc.returncode == 1
    assert "FAIL  relay --smoke-test" in proc.stdout


def test_flag_present_runs_it_and_never_skips(bundle: Path) -> None:
    proc = smoke(bundle, FAKE_HAS_FLAG="1")
    assert proc.returncode == 0, proc.stdout
    assert "ok    relay --smoke-test" in proc.stdout
    assert "ok    relay-cli mcp (initialize, tools/list)" in proc.stdout
    assert "SKIPPED" not in proc.stdout


def test_an_mcp_server_missing_tools_fails(bundle: Path) -> None:
    proc = smoke(bundle, "--no-window", FAKE_MCP_TOOLS="relay_start_session")
    assert proc.returncode == 1
    assert "FAIL  relay-cli mcp (initialize, tools/list): tools/list lacks relay_list_sessions" \
        in proc.stdout


def test_an_mcp_server_that_exits_badly_fails(bundle: Path) -> None:
    proc = smoke(bundle, "--no-window", FAKE_MCP_RC="1")
    assert proc.returncode == 1
    assert "FAIL  relay-cli mcp (initialize, tools/list): exit status 1 after stdin closed" \
        in proc.stdout


def test_the_mcp_step_against_the_real_relay_cli(tmp_path: Path) -> None:
    """The smoke test's own stdlib MCP client against this checkout's relay-cli mcp."""
    real = Path(sys.executable).with_name("relay-cli")
    if not real.exists():
        pytest.skip("relay-cli is not installed beside this interpreter")
    module = load("smoke")
    checker = module.Smoke("unused", str(real), tmp_path / "home")
    checker.mcp_step()
    assert checker.failures == []


def test_a_failing_window_smoke_test_fails(bundle: Path) -> None:
    proc = smoke(bundle, FAKE_HAS_FLAG="1", FAKE_SMOKE_RC="3")
    assert proc.returncode == 1
    assert "FAIL  relay --smoke-test" in proc.stdout
