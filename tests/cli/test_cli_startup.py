"""relay-cli imports only what the command needs (issue 16, item 7): no timing, just modules.

Each check is a fresh interpreter that runs relay-cli's ``main`` for one command and then
lists the heavy modules that got imported. ``benchmarks/cli_startup`` measures the time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay.cli.parser import COMMANDS, build_parser, subcommands
from tests.api.test_host_process import _serve, _stop

#: never needed to parse arguments, print help or the version, or list sessions
HEAVY = ("mcp", "httpx", "pygit2", "PySide6", "qasync", "pydantic", "cryptography", "keyring",
         "aiosqlite", "relay.engine.engine", "relay.core.events", "relay.sessions",
         "relay.runtimes.base", "relay.wallet", "relay.history", "relay.pipelines",
         "relay.knowledge", "relay.mcp", "relay.detect")

_PROBE = """
import contextlib, io, json, sys
from relay.cli.main import main
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = json.loads(sys.stdin.read())
loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")})
print(json.dumps({"code": code, "loaded": loaded, "out": out.getvalue()}))
"""


def loaded_by(*argv: str, heavy: tuple[str, ...] = HEAVY) -> tuple[object, list[str], str]:
    env = {**os.environ, "COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], input=json.dumps(heavy),
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    return result["code"], result["loaded"], result["out"]


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["sessions", "--help"],
                                  ["doctor", "--help"]])
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    code, loaded, out = loaded_by(*argv)

    assert code == 0
    assert out.strip()
    assert loaded == []


def test_a_command_s_help_imports_that_command_only() -> None:
    code, loaded, out = loaded_by("accounts", "-h",
                                  heavy=("mcp", "PySide6", "relay.cli.pipeline_cmd"))

    assert code == 0
    assert "ACTION" in out
    assert loaded == []


def test_the_top_level_help_imports_not_even_rich() -> None:
    code, loaded, out = loaded_by("--help", heavy=("rich", "asyncio", "logging", "relay.cli.commands"))

    assert code == 0
    assert "sessions" in out
    assert loaded == []


def test_sessions_reads_the_store_without_the_engine(relay_home: Path) -> None:
    created = subprocess.run([sys.executable, "-m", "relay.cli.main", "demo"], capture_output=True,
                             text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
                             env={**os.environ, "RELAY_DEMO_STEP_DELAY": "0"})
    assert created.returncode == 0, created.stderr

    code, loaded, out = loaded_by("sessions")

    assert code == 0
    assert "demo (simulation)" in out
    assert loaded == []


#: the runtimes' adapters and what only they need (doctor asks the registry's facts)
ADAPTERS = ("relay.runtimes.base", "relay.runtimes.claude", "relay.runtimes.codex",
            "relay.runtimes.gemini", "relay.runtimes.pi", "relay.runtimes.demo",
            "relay.runtimes.acp", "relay.runtimes.acp_agents", "relay.runtimes.http",
            "relay.core.events", "relay.core.models", "relay.core.procs")


def test_doctor_imports_no_runtime_adapter_and_not_the_engine(
        relay_home: Path, vault_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:1")  # no Ollama: no HTTP client either
    code, loaded, out = loaded_by("doctor", heavy=("mcp", "pygit2", "PySide6", "httpx",
                                                   "relay.engine.engine",
                                                   "relay.sessions", "relay.history",
                                                   "relay.pipelines", "relay.knowledge",
                                                   *ADAPTERS))

    assert code == 0
    assert "Agent runtimes" in out
    assert "The claude CLI (`claude`) is not installed" in out or "claude        ok" in out
    assert "Ollama is not reachable at http://127.0.0.1:1" in out
    assert "Capabilities" in out
    assert loaded == []


def test_sessions_json_through_a_host_imports_no_engine_pygit2_or_vault(
        relay_home: Path, vault_env: None) -> None:
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0"}
    host = _serve(relay_home, env)
    try:
        created = subprocess.run([sys.executable, "-m", "relay.cli.main", "demo"],
                                 capture_output=True, text=True, timeout=120, check=False,
                                 stdin=subprocess.DEVNULL, env=env)
        assert created.returncode == 0, created.stderr

        code, loaded, out = loaded_by("sessions", "--json", heavy=(
            "relay.engine", "relay.sessions", "pygit2", "cryptography", "keyring",
            "relay.core.vault", "relay.detect", "relay.wallet", "relay.pipelines",
            "relay.history", "relay.knowledge", "relay.runtimes", "relay.api.schemas",
            "relay.api.app", "fastapi", "mcp", "PySide6"))
    finally:
        _stop(host)

    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["runtime"] for row in rows] == ["demo"]
    assert rows[0]["state"] == "completed"
    assert loaded == []


def test_every_command_gets_its_arguments_and_the_help_relay_cli_lists() -> None:
    parser = build_parser(full=True)
    sub = subcommands(parser)

    assert set(sub.choices) == set(COMMANDS)
    # each module's own one-line help is the one relay-cli --help shows
    assert {name: COMMANDS[name] for name in sub.helps} == sub.helps
    assert parser.parse_args(["budget", "set", "day", "30"]).usd == 30.0
    assert parser.parse_args(["run", "x", "--provider", "codex:work"]).provider == ["codex:work"]


def test_a_lazy_parser_parses_as_the_full_one() -> None:
    for argv in (["run", "x", "--budget", "$2", "--permission", "full"],
                 ["demo", "--quota", "40,70,97"], ["accounts", "add", "claude", "work"],
                 ["--home", "/tmp/h", "pipeline", "status", "--json"], ["sessions", "--limit", "3"]):
        assert vars(build_parser().parse_args(argv)) == vars(build_parser(full=True).parse_args(argv))
