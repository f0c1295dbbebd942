"""Reusable pieces for the integration tier: the real agent CLIs against loopback mocks.

Executables
    ``real_claude`` / ``real_codex`` (session fixtures) locate the real CLIs:
    ``RELAY_REAL_CLAUDE`` / ``RELAY_REAL_CODEX`` if set, otherwise the prefix of
    ``scripts/install-agent-clis.sh`` (``$RELAY_AGENTS_DIR``, default
    ``<repo>/.cache/agents``). They check the pinned version. A missing or wrong CLI
    **fails** the test with a message saying what to run; the only way to skip is
    ``RELAY_SKIP_INTEGRATION=1`` (set ``RELAY_REAL_CLI_ANY_VERSION=1`` to accept
    other versions).

Environments
    :func:`claude_env` / :func:`codex_env` build a complete environment from scratch
    (only ``PATH`` is inherited) in a per-test directory, pointing the CLI at a mock
    from ``tests.fakes.mock_anthropic`` / ``tests.fakes.mock_openai``. Nothing from the
    developer's shell leaks in (in particular not ``IS_SANDBOX``, which changes
    Claude Code's 529 handling, nor real API keys).

Running
    :func:`run_cli` runs an argument array with stdin ``/dev/null`` (both CLIs block
    or merge stdin otherwise) and a bounded timeout; :func:`jsonl` parses the
    ``stream-json`` / ``--json`` output.

relay-cli
    :func:`relay_env` adds Relay's variables to an agent's environment, :func:`relay_run`
    runs ``relay-cli run … --json``; :func:`events_of`, :func:`session_of`, :func:`kinds`
    and :func:`final_state` read its output.

The fixtures are named ``real_claude`` / ``real_codex``; the functions behind them are
``real_claude_fixture`` / ``real_codex_fixture`` so that importing them into a test
module or ``conftest.py`` (``from tests.integration.helpers import real_claude_fixture
# noqa: F401``) does not clash with the argument names (ruff F811).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
#: relay-cli as the integration tests start it (this interpreter, this checkout)
RELAY = [sys.executable, "-m", "relay.cli.main"]

CLAUDE_VERSION = "2.1.197"
CODEX_VERSION = "0.171.0"

#: Default per-invocation wall-clock bound. The scripted scenarios take about 1 s.
DEFAULT_TIMEOUT_S = 60.0

#: The key the codex config names in ``env_key``; sent as ``Authorization: Bearer …``.
CODEX_API_KEY = "sk-mock-relay"
CLAUDE_API_KEY = "test-key"


class HasBaseUrl(Protocol):
    @property
    def base_url(self) -> str: ...


# --------------------------------------------------------------------------- executables


def agents_dir() -> Path:
    """Where scripts/install-agent-clis.sh installs (``$RELAY_AGENTS_DIR``)."""
    override = os.environ.get("RELAY_AGENTS_DIR")
    return Path(override) if override else REPO_ROOT / ".cache" / "agents"


def _cli_version(exe: Path) -> str:
    try:
        proc = subprocess.run(
            [str(exe), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"<cannot run: {exc}>"
    match = re.search(r"\d+\.\d+\.\d+", proc.stdout)
    return match.group(0) if match else f"<exit {proc.returncode}: {proc.stdout}{proc.stderr}>"


def locate_cli(name: str, version: str) -> Path:
    """The real ``claude`` / ``codex`` executable; fails (or skips on opt-out) otherwise."""
    if os.environ.get("RELAY_SKIP_INTEGRATION") == "1":
        pytest.skip("RELAY_SKIP_INTEGRATION=1")
    env_var = f"RELAY_REAL_{name.upper()}"
    override = os.environ.get(env_var)
    exe = Path(override) if override else agents_dir() / name / "node_modules" / ".bin" / name
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        where = f"{env_var}={override}" if override else f"{exe} (from RELAY_AGENTS_DIR)"
        pytest.fail(
            f"real {name} CLI not found at {where}.\n"
            f"Run scripts/install-agent-clis.sh (installs {name} {version} under "
            f"{agents_dir()}), or set {env_var} to a {name} {version} executable, "
            "or set RELAY_SKIP_INTEGRATION=1 to skip the integration tier.",
            pytrace=False,
        )
    found = _cli_version(exe)
    if found != version and os.environ.get("RELAY_REAL_CLI_ANY_VERSION") != "1":
        pytest.fail(
            f"{exe} is {name} {found}, the integration tier is written against {version}. "
            "Run scripts/install-agent-clis.sh or set RELAY_REAL_CLI_ANY_VERSION=1.",
            pytrace=False,
        )
    return exe


@pytest.fixture(scope="session", name="real_claude")
def real_claude_fixture() -> Path:
    """The real Claude Code executable (pinned version)."""
    return locate_cli("claude", CLAUDE_VERSION)


@pytest.fixture(scope="session", name="real_codex")
def real_codex_fixture() -> Path:
    """The real Codex CLI executable (pinned version; its launcher needs ``node``)."""
    return locate_cli("codex", CODEX_VERSION)


# --------------------------------------------------------------------------- environments


def _base_env(home: Path, tmpdir: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmpdir),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "TERM": "dumb",
        "SHELL": "/bin/bash",
        "USER": os.environ.get("USER", "root"),
    }


def _url(mock: HasBaseUrl | str) -> str:
    return mock if isinstance(mock, str) else mock.base_url


def claude_env(
    tmp_path: Path,
    mock: HasBaseUrl | str,
    *,
    oauth: bool = False,
    max_retries: int = 0,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Environment for the real ``claude`` against a mock Messages API.

    Creates ``<tmp_path>/claude/{home,config,tmp}``; ``CLAUDE_CONFIG_DIR`` is where the
    transcripts go (``projects/<encoded cwd>/<session>.jsonl``). ``oauth=True`` uses
    ``CLAUDE_CODE_OAUTH_TOKEN`` instead of an API key: Claude Code then behaves like a
    subscriber (429 not retried, ``anthropic-ratelimit-unified-*`` headers parsed into
    ``rate_limit_event`` and "You've hit your … limit"). ``max_retries`` is
    ``CLAUDE_CODE_MAX_RETRIES`` (0 = a single attempt).
    """
    root = tmp_path / "claude"
    home, config, tmpdir = root / "home", root / "config", root / "tmp"
    for d in (home, config, tmpdir):
        d.mkdir(parents=True, exist_ok=True)
    env = _base_env(home, tmpdir)
    env.update({
        "ANTHROPIC_BASE_URL": _url(mock),
        "CLAUDE_CONFIG_DIR": str(config),
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
        "API_TIMEOUT_MS": "30000",
    })
    if oauth:
        env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-relay-mock-token"
    else:
        env["ANTHROPIC_API_KEY"] = CLAUDE_API_KEY
    env.update(extra or {})
    return env


def claude_transcript(env: Mapping[str, str], cwd: Path, session_id: str) -> Path:
    """``$CLAUDE_CONFIG_DIR/projects/<cwd, non-alphanumerics → '-'>/<session>.jsonl``."""
    encoded = re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    return Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / encoded / f"{session_id}.jsonl"


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value))  # a TOML basic string


def codex_config_toml(
    base_url: str,
    *,
    model: str = "gpt-5.5",
    provider: Mapping[str, object] | None = None,
    top: Mapping[str, object] | None = None,
) -> str:
    """A ``config.toml`` pointing codex at a custom Responses-API provider ``mock``.

    Retries are off by default (``request_max_retries`` / ``stream_max_retries`` 0) and
    the SSE idle timeout is 10 s, so failures surface in well under a second.
    """
    settings: dict[str, object] = {
        "name": "Mock",
        "base_url": base_url,
        "env_key": "MOCK_API_KEY",
        "wire_api": "responses",
        "request_max_retries": 0,
        "stream_max_retries": 0,
        "stream_idle_timeout_ms": 10000,
    }
    settings.update(provider or {})
    head: dict[str, object] = {"model": model, "model_provider": "mock"}
    head.update(top or {})
    lines = [f"{k} = {_toml_value(v)}" for k, v in head.items()]
    lines += ["", "[model_providers.mock]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


def codex_env(
    tmp_path: Path,
    mock: HasBaseUrl | str,
    *,
    model: str = "gpt-5.5",
    provider: Mapping[str, object] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Environment for the real ``codex`` against a mock Responses API.

    Creates ``<tmp_path>/codex/{home,codex_home,tmp}`` and writes
    ``codex_home/config.toml`` (:func:`codex_config_toml`). ``TMPDIR`` is set to the
    sibling ``tmp`` directory: codex refuses to create its helper aliases (and prints a
    ``WARNING: proceeding, even though we could not create PATH aliases`` line) only
    when ``CODEX_HOME`` lies under the *temp dir*, which it takes from ``TMPDIR`` — so
    this layout avoids the warning even though pytest's ``tmp_path`` is under /tmp.
    """
    root = tmp_path / "codex"
    home, codex_home, tmpdir = root / "home", root / "codex_home", root / "tmp"
    for d in (home, codex_home, tmpdir):
        d.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        codex_config_toml(_url(mock), model=model, provider=provider), encoding="utf-8"
    )
    env = _base_env(home, tmpdir)
    env.update({"CODEX_HOME": str(codex_home), "MOCK_API_KEY": CODEX_API_KEY})
    env.update(extra or {})
    return env


# --------------------------------------------------------------------------- running


@dataclasses.dataclass(frozen=True)
class CliRun:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float

    def events(self) -> list[dict[str, Any]]:
        return jsonl(self.stdout, context=self)

    def describe(self) -> str:
        return (f"argv={self.argv}\nexit={self.returncode} elapsed={self.elapsed_s:.2f}s\n"
                f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}")


def run_cli(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = DEFAULT_TIMEOUT_S,
    stdin: str | None = None,
) -> CliRun:
    """Run one CLI invocation: argument array, stdin ``/dev/null`` (or the text ``stdin``,
    then EOF: Claude's stream-json input lines), bounded time."""
    args = [os.fspath(a) for a in argv]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            args,
            env=dict(env),
            cwd=cwd,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else ""
        err = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else ""
        pytest.fail(f"{args} did not finish within {timeout}s\n--- stdout ---\n{out[-4000:]}"
                    f"\n--- stderr ---\n{err[-4000:]}", pytrace=False)
    return CliRun(args, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


def jsonl(text: str, *, context: CliRun | None = None) -> list[dict[str, Any]]:
    """Parse JSON lines (blank lines ignored); any other line fails the test."""
    events: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            where = f"\n{context.describe()}" if context else ""
            pytest.fail(f"stdout line {n} is not JSON: {line[:300]!r}{where}", pytrace=False)
        if not isinstance(value, dict):
            pytest.fail(f"stdout line {n} is not a JSON object: {line[:300]!r}", pytrace=False)
        events.append(value)
    return events


def of_type(events: Sequence[Mapping[str, Any]], type_: str,
            subtype: str | None = None) -> list[dict[str, Any]]:
    """Events whose ``type`` (and ``subtype``, if given) match."""
    return [dict(e) for e in events
            if e.get("type") == type_ and (subtype is None or e.get("subtype") == subtype)]


def only(events: Sequence[Mapping[str, Any]], type_: str, subtype: str | None = None,
         *, run: CliRun | None = None) -> dict[str, Any]:
    """The single event of that type; fails with the full output otherwise."""
    found = of_type(events, type_, subtype)
    if len(found) != 1:
        label = type_ + (f"/{subtype}" if subtype else "")
        pytest.fail(f"expected exactly one {label} event, got {len(found)}"
                    + (f"\n{run.describe()}" if run else ""), pytrace=False)
    return found[0]


# --------------------------------------------------------------------------- relay-cli


def relay_env(agent_env: Mapping[str, str], relay_home: Path, runtime: str,
              exe: Path) -> dict[str, str]:
    """``agent_env`` plus Relay's data folder and the real CLI as ``runtime``'s executable.

    ``PYTHONPATH`` is passed on when set, so that Relay's processes run the code the tests
    import (a checkout's ``app/`` ahead of an installed copy)."""
    env = dict(agent_env)
    env.update({"RELAY_HOME": str(relay_home), f"RELAY_{runtime.upper()}_BIN": str(exe),
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"})
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def relay_run(env: Mapping[str, str], repo: Path, runtime: str, task: str, *extra: str) -> CliRun:
    """``relay-cli run TASK --repo REPO --provider RUNTIME --json``: the default approvals
    there are ``deny`` (nobody is asked)."""
    return run_cli([*RELAY, "run", task, "--repo", str(repo), "--provider", runtime, "--json",
                    *extra], env=env, cwd=repo, timeout=120)


def events_of(run: CliRun | str) -> list[dict[str, Any]]:
    """The events of ``relay-cli … --json`` output (a run, or its stdout)."""
    out = run if isinstance(run, str) else run.stdout
    return [json.loads(line)["event"] for line in out.splitlines() if line.strip()]


def session_of(run: CliRun | str) -> str:
    """The session id of ``relay-cli run --json`` output (a run, or its stdout)."""
    out = run if isinstance(run, str) else run.stdout
    return str(json.loads(out.splitlines()[0])["session_id"])


def kinds(events: Sequence[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [dict(e) for e in events if e["kind"] == kind]


def final_state(events: Sequence[Mapping[str, Any]]) -> str:
    return str(kinds(events, "state_changed")[-1]["state"])
