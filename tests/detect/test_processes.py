"""The live process scan: agents found by their executable or script, never by a word.

Live: the fake ``claude`` / ``codex`` (tests/fakes/bin) run for real and stay alive (their
signal scenarios wait until killed), beside processes that merely mention an agent; one exits
for real while the scan runs. Mocked: the command lines of the CLIs and editors not installed
here (a table), and a process table of stand-ins for account folders, wrappers and other users.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from relay.core.accounts import Account
from relay.detect.processes import (
    claude_session_from_argv,
    codex_session_from_argv,
    match_signature,
    scan_processes,
)

CLAUDE_SID = "44444444-4444-4444-8444-444444444444"
OTHER_SID = "55555555-5555-4555-8555-555555555555"
CODEX_SID = "0199a213-81c0-7800-8aa1-bbab2a035a53"
#: prints a line (so the test knows the process runs its code), then stays until killed
SLEEPER = "import sys, time; print('ready', flush=True); time.sleep(120)"

Spawn = Callable[..., "subprocess.Popen[bytes]"]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start a process in its own group; returns once it printed its first line."""
    started: list[subprocess.Popen[bytes]] = []

    def start(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
              cwd: Path | None = None, executable: str | None = None) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(list(argv), env=env, cwd=cwd, executable=executable,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        started.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline(), f"{argv[0]} exited before it printed anything"
        return proc

    yield start
    for proc in started:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def start_claude(spawn: Spawn, config: Path, cwd: Path, session_id: str = CLAUDE_SID
                 ) -> subprocess.Popen[bytes]:
    cwd.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config),
           "RELAY_FAKE_SCENARIO": "r_signals/run1_sigterm"}
    return spawn(["claude", "-p", "slow question", "--output-format", "stream-json", "--verbose",
                  "--session-id", session_id], env=env, cwd=cwd)


def only(pid: int, **kwargs: Any) -> Any:
    matches = [p for p in scan_processes(**kwargs).processes if p.pid == pid]
    assert len(matches) == 1, f"pid {pid} listed {len(matches)} times"
    return matches[0]


def pids(**kwargs: Any) -> set[int]:
    return {p.pid for p in scan_processes(**kwargs).processes}


# -- live --------------------------------------------------------------------------------


def test_a_running_claude_is_found_with_its_folder_account_and_session(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path) -> None:
    config = tmp_path / "claude-work"
    project = tmp_path / "src" / "app"
    work = Account("claude", "work", config.resolve())
    other = Account("claude", "home", (tmp_path / "claude-home").resolve())
    before = time.time()
    agent = start_claude(spawn, config, project)

    found = only(agent.pid, accounts=[other, work])

    assert found.runtime == "claude"
    assert found.cwd == os.path.realpath(project)
    assert found.config_dir == str(config.resolve())
    assert found.entry == "claude:work"
    assert found.agent_session_id == CLAUDE_SID          # its --session-id
    assert found.ppid == os.getpid()
    assert before * 1000 - 1000 <= found.started_ms <= time.time() * 1000
    assert found.cmdline[1] == str(fakes_on_path / "claude")
    assert found.problems == ()


def test_without_a_matching_account_it_is_the_bare_provider(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path) -> None:
    agent = start_claude(spawn, tmp_path / "cfg", tmp_path / "p")
    found = only(agent.pid, accounts=[Account("claude", "work", tmp_path / "elsewhere")])
    assert (found.entry, found.config_dir) == ("claude", str((tmp_path / "cfg").resolve()))


def test_processes_that_only_mention_an_agent_are_not_listed(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path) -> None:
    agent = start_claude(spawn, tmp_path / "cfg", tmp_path / "p")
    relay_cli = tmp_path / "bin" / "relay-cli"
    relay_cli.parent.mkdir()
    relay_cli.write_text(SLEEPER)
    bystanders = [
        # python -c whose code and arguments say claude
        spawn([sys.executable, "-c", SLEEPER + "  # claude", "claude",
               "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "--type=extensionHost"]),
        # a shell command line naming claude (its child, sleep, is no agent either)
        spawn(["sh", "-c", "echo ready; sleep 120; echo claude", "claude"]),
        # Relay itself, asked to run claude
        spawn([sys.executable, str(relay_cli), "run", "--provider", "claude"]),
        # an editor's helper that is not its extension host (argv[0] "code")
        spawn(["code", "-c", SLEEPER, "--type=renderer"], executable=sys.executable),
    ]
    listed = pids()
    assert agent.pid in listed
    assert not listed & {p.pid for p in bystanders}


def test_agents_run_as_scripts_and_editor_hosts_are_listed(spawn: Spawn, tmp_path: Path) -> None:
    aider = tmp_path / "bin" / "aider"
    aider.parent.mkdir()
    aider.write_text(SLEEPER)
    by_aider = spawn([sys.executable, str(aider), "--model", "sonnet"], cwd=tmp_path)
    host = spawn(["code", "-c", SLEEPER, "--type=extensionHost"], executable=sys.executable)

    found = {p.pid: p for p in scan_processes().processes}
    assert (found[by_aider.pid].runtime, found[by_aider.pid].entry) == ("aider", "aider")
    assert found[by_aider.pid].config_dir is None
    assert found[by_aider.pid].cwd == os.path.realpath(tmp_path)
    assert found[host.pid].runtime == "vscode"


def test_a_running_codex_is_linked_to_the_thread_it_resumes(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path) -> None:
    home = tmp_path / "codex-work"
    env = {**os.environ, "CODEX_HOME": str(home), "RELAY_FAKE_SCENARIO": "e7_sigterm_midturn"}
    agent = spawn(["codex", "exec", "resume", CODEX_SID, "go on", "--json"], env=env,
                  cwd=tmp_path)
    found = only(agent.pid, accounts=[Account("codex", "work", home.resolve())])
    assert (found.runtime, found.entry, found.agent_session_id) == ("codex", "codex:work",
                                                                    CODEX_SID)
    assert found.config_dir == str(home.resolve())


def test_claude_pid_file_links_the_session_when_this_process_wrote_it(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    agent = start_claude(spawn, config, tmp_path / "p")
    started_ms = int(psutil.Process(agent.pid).create_time() * 1000)
    pid_file = config / "sessions" / f"{agent.pid}.json"
    pid_file.parent.mkdir(parents=True)

    pid_file.write_text(json.dumps({"pid": agent.pid, "sessionId": OTHER_SID,
                                    "cwd": str(tmp_path), "startedAt": started_ms + 300}))
    assert only(agent.pid).agent_session_id == OTHER_SID       # the file wins over argv

    # an earlier process with the same pid wrote it: stale, the argument stands
    pid_file.write_text(json.dumps({"pid": agent.pid, "sessionId": OTHER_SID,
                                    "startedAt": started_ms - 3_600_000}))
    assert only(agent.pid).agent_session_id == CLAUDE_SID

    pid_file.write_text("{not json")
    found = only(agent.pid)
    assert found.agent_session_id == CLAUDE_SID
    assert any("is not a session record" in p for p in found.problems)


def test_an_environment_that_may_not_be_read_is_a_problem_not_a_failure(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path) -> None:
    agent = start_claude(spawn, tmp_path / "cfg", tmp_path / "p")

    def denied(proc: Any) -> Mapping[str, str]:
        raise psutil.AccessDenied(proc.pid)

    found = only(agent.pid, accounts=[Account("claude", "work", (tmp_path / "cfg").resolve())],
                 env_reader=denied)
    assert (found.config_dir, found.entry) == (None, "claude")
    assert found.agent_session_id == CLAUDE_SID
    assert any("environment could not be read (permission denied)" in p for p in found.problems)


def test_a_process_that_exits_during_the_scan_is_skipped(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    victim = start_claude(spawn, tmp_path / "a", tmp_path / "p")
    survivor = start_claude(spawn, tmp_path / "b", tmp_path / "p", OTHER_SID)
    real_iter = psutil.process_iter

    def iter_then_kill(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for proc in real_iter(*args, **kwargs):
            if proc.pid == victim.pid:  # listed (its command line read), then gone
                victim.kill()
                victim.wait()
            yield proc

    monkeypatch.setattr(psutil, "process_iter", iter_then_kill)
    scan = scan_processes()
    listed = {p.pid for p in scan.processes}
    assert survivor.pid in listed
    assert victim.pid not in listed
    assert not [p for p in scan.problems if str(victim.pid) in p]


@pytest.mark.parametrize(("method", "error", "listed"), [
    ("cwd", psutil.NoSuchProcess, False),
    ("create_time", psutil.ZombieProcess, False),
    ("cwd", psutil.AccessDenied, True),
])
def test_psutil_errors_for_one_process(
        fakes_on_path: Path, spawn: Spawn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        method: str, error: type[psutil.Error], listed: bool) -> None:
    hit = start_claude(spawn, tmp_path / "a", tmp_path / "p")
    other = start_claude(spawn, tmp_path / "b", tmp_path / "p", OTHER_SID)
    real = getattr(psutil.Process, method)

    def failing(self: Any) -> Any:
        if self.pid == hit.pid:
            raise error(self.pid)
        return real(self)

    monkeypatch.setattr(psutil.Process, method, failing)
    found = {p.pid: p for p in scan_processes().processes}
    assert other.pid in found
    assert (hit.pid in found) is listed
    if listed:
        assert found[hit.pid].cwd is None
        assert any("working folder could not be read" in p for p in found[hit.pid].problems)


# -- the signature table (command lines of what is not installed here) --------------------

NODE = "/usr/bin/node"
MODULES = "/usr/lib/node_modules"


@pytest.mark.parametrize(("argv", "runtime"), [
    ([NODE, f"{MODULES}/@anthropic-ai/claude-code/cli.js", "--resume"], "claude"),
    (["claude"], "claude"),                                   # process.title rewrote argv
    (["/home/u/.local/share/claude/versions/2.1.3", "-p", "x"], "claude"),
    (["bash", "/usr/local/bin/claude"], "claude"),
    ([r"C:\Program Files\nodejs\node.exe",
      r"C:\Users\u\AppData\Roaming\npm\node_modules\@anthropic-ai\claude-code\cli.js"], "claude"),
    ([NODE, "/usr/local/bin/codex", "exec", "hi"], "codex"),
    ([NODE, f"{MODULES}/@openai/codex/bin/codex.js"], "codex"),
    ([f"{MODULES}/@openai/codex/vendor/x86_64-unknown-linux-musl/codex/codex", "exec"], "codex"),
    ([NODE, "--max-old-space-size=8192", f"{MODULES}/@google/gemini-cli/dist/index.js"], "gemini"),
    ([NODE, "-r", "/tmp/hook.js", "/usr/local/bin/gemini"], "gemini"),
    ([NODE, f"{MODULES}/@mariozechner/pi-coding-agent/dist/cli.js"], "pi"),
    (["/usr/bin/python3", "/home/u/.local/bin/aider", "--model", "x"], "aider"),
    (["python3.12", "-u", "-m", "aider.main", "--yes"], "aider"),
    (["/home/u/.opencode/bin/opencode"], "opencode"),
    (["/home/u/.local/share/cursor-agent/versions/2025.09.04/node",
      "/home/u/.local/share/cursor-agent/versions/2025.09.04/index.js"], "cursor-agent"),
    (["/usr/share/code/code", "--ms-enable-electron-run-as-node",
      "/usr/share/code/resources/app/out/bootstrap-fork", "--type=extensionHost"], "vscode"),
    (["/usr/share/code/code", "--type=utility", "--utility-sub-type=node.mojom.NodeService",
      "--vscode-utility-kind=extensionHost"], "vscode"),
    (["/home/u/.vscode-server/bin/abc/node", "/home/u/.vscode-server/bin/abc/out/bootstrap-fork",
      "--type=extensionHost", "--transformURIs"], "vscode"),
    (["/usr/share/cursor/cursor", "--type=utility", "--vscode-utility-kind=extensionHost"],
     "cursor"),
    (["/Applications/Windsurf.app/Contents/Frameworks/Windsurf Helper (Plugin).app/Contents/MacOS/"
      "Windsurf Helper (Plugin)", "--type=extensionHost"], "windsurf"),
])
def test_signatures_match_agents(argv: list[str], runtime: str) -> None:
    sig = match_signature(argv)
    assert sig is not None
    assert sig.runtime == runtime


@pytest.mark.parametrize("argv", [
    ["python3", "-c", "import claude", "claude"],
    ["python3", "-Bc", "print('codex')"],
    ["bash", "-c", "claude -p hi"],
    ["bash", "-lc", "codex exec hi"],
    ["grep", "claude"],
    ["grep", "--", "--type=extensionHost"],
    ["less", "/usr/local/bin/claude"],
    ["vim", "/home/u/.claude/settings.json"],
    ["tail", "-f", "/home/u/.codex/log/codex-tui.log"],
    [NODE, "-e", "require('@anthropic-ai/claude-code/cli.js')"],
    [NODE, "/usr/bin/npm", "install", "-g", "@anthropic-ai/claude-code"],
    [f"{MODULES}/@anthropic-ai/claude-code/vendor/ripgrep/x64-linux/rg", "--files"],
    ["/usr/bin/pip", "install", "aider-chat"],
    ["/venv/bin/python", "/venv/bin/relay-cli", "run", "--provider", "claude"],
    ["/venv/bin/python", "-m", "relay", "adopt", "claude:4444", "--to", "codex"],
    ["/usr/share/code/code"],                                         # the editor's window
    ["/usr/share/code/code", "--type=renderer"],
    ["/usr/share/code/code", "--type=gpu-process"],
    ["/usr/share/code/code", "--type=utility", "--vscode-utility-kind=ptyHost"],
    ["/usr/share/cursor/cursor", "/home/u/src/app"],
    ["cursor-agent-installer.sh"],
    [],
    [""],
])
def test_signatures_ignore_everything_else(argv: list[str]) -> None:
    assert match_signature(argv) is None


@pytest.mark.parametrize(("args", "expected"), [
    (["resume", CODEX_SID], CODEX_SID),
    (["exec", "resume", CODEX_SID, "go on"], CODEX_SID),
    (["-m", "o3", "exec", "--json", "resume", CODEX_SID], CODEX_SID),
    (["exec", "resume", "--last", "go on"], None),
    (["--resume", CODEX_SID], CODEX_SID),
    (["exec", "resume the work"], None),
    (["exec", "fix it", CODEX_SID], None),
    (["exec", "resume", "not-an-id"], None),
])
def test_codex_session_from_argv(args: list[str], expected: str | None) -> None:
    assert codex_session_from_argv(args) == expected


@pytest.mark.parametrize(("args", "expected"), [
    (["--resume", CLAUDE_SID], CLAUDE_SID),
    ([f"--resume={CLAUDE_SID}"], CLAUDE_SID),
    (["-r", CLAUDE_SID, "--fork-session"], None),
    (["-p", "hi", "--session-id", CLAUDE_SID], CLAUDE_SID),
    (["--continue"], None),
    (["-p", "resume", CLAUDE_SID], None),
])
def test_claude_session_from_argv(args: list[str], expected: str | None) -> None:
    assert claude_session_from_argv(args) == expected


# -- a mocked process table ---------------------------------------------------------------


@dataclass
class StandIn:
    """Enough of a psutil.Process for the scan."""

    pid: int
    cmdline: list[str]
    ppid_: int = 1
    env: dict[str, str] = field(default_factory=dict)
    cwd_: str = "/home/u/src/app"
    uid: int = field(default_factory=lambda: os.getuid())

    @property
    def info(self) -> dict[str, Any]:
        return {"pid": self.pid, "cmdline": self.cmdline,
                "uids": SimpleNamespace(real=self.uid)}

    def oneshot(self) -> Any:
        return nullcontext()

    def status(self) -> str:
        return str(psutil.STATUS_SLEEPING)

    def create_time(self) -> float:
        return 1_700_000_000.0 + self.pid

    def ppid(self) -> int:
        return self.ppid_

    def cwd(self) -> str:
        return self.cwd_

    def environ(self) -> dict[str, str]:
        return self.env


def scan_table(monkeypatch: pytest.MonkeyPatch, table: list[StandIn],
               accounts: Sequence[Account] = (), **kwargs: Any) -> dict[int, Any]:
    monkeypatch.setattr(psutil, "process_iter", lambda *a, **k: iter(table))
    return {p.pid: p for p in scan_processes(accounts, **kwargs).processes}


def test_accounts_are_matched_by_each_clis_folder(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path / "home")}
    accounts = [Account("gemini", "work", tmp_path / "g" / ".gemini"),
                Account("pi", "work", tmp_path / "pi"),
                Account("codex", "main", tmp_path / "home" / ".codex")]
    found = scan_table(monkeypatch, [
        StandIn(10, [NODE, "/usr/local/bin/gemini"], env={**home, "GEMINI_CLI_HOME": str(tmp_path / "g")}),
        StandIn(11, [NODE, "/usr/local/bin/gemini"], env=home),
        StandIn(12, [NODE, "/usr/local/bin/pi"], env={**home, "PI_CODING_AGENT_DIR": str(tmp_path / "pi")}),
        StandIn(13, ["codex"], env=home),                  # unset: the default folder's account
    ], accounts)
    assert {pid: p.entry for pid, p in found.items()} == {10: "gemini:work", 11: "gemini",
                                                          12: "pi:work", 13: "codex:main"}
    assert found[10].config_dir == str((tmp_path / "g" / ".gemini").resolve())


def test_a_wrapper_and_the_agent_it_starts_are_one(monkeypatch: pytest.MonkeyPatch) -> None:
    found = scan_table(monkeypatch, [
        StandIn(20, [NODE, f"{MODULES}/@openai/codex/bin/codex.js", "resume", CODEX_SID]),
        StandIn(21, [f"{MODULES}/@openai/codex/vendor/x86_64-unknown-linux-musl/codex/codex",
                     "resume", CODEX_SID], ppid_=20),
        StandIn(22, ["claude"], ppid_=21),                 # a different agent it started
    ])
    assert sorted(found) == [20, 22]
    assert found[20].agent_session_id == CODEX_SID


def test_this_process_and_other_users_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    table = [StandIn(os.getpid(), ["claude"]), StandIn(30, ["claude"], uid=os.getuid() + 1),
             StandIn(31, ["claude"])]
    assert sorted(scan_table(monkeypatch, table)) == [31]
    assert sorted(scan_table(monkeypatch, table, all_users=True)) == [30, 31]
