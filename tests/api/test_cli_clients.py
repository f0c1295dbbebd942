"""relay-cli's session commands as clients of a host, each its own process over a real
socket: a session a client submitted survives the client's SIGKILL and its Ctrl-C (which
detaches); ``stop`` stops it in the host; a ``run`` with no host hosts (host.json exists
while it runs and ``show --follow`` attaches to it); two followers see the same events in
order; the host's vault is unlocked by a client, the passphrase never echoed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from relay.api.client import RelayClient
from relay.core.errors import VaultError
from relay.core.hostfile import read_host
from relay.core.models import SessionSpec
from tests.api.test_host_process import _serve
from tests.conftest import wait_until

CLI = [sys.executable, "-m", "relay.cli.main"]
NO_KEYRING = "keyring.backends.fail.Keyring"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RELAY_VAULT_PASSPHRASE"}
    return {**env, "RELAY_HOME": str(home), "RELAY_PORT": "0", "COLUMNS": "200",
            "PYTHON_KEYRING_BACKEND": NO_KEYRING, **extra}


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=_env(home),
                          timeout=120, check=False, stdin=subprocess.DEVNULL)


def _into_closed_pipe(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """relay-cli ARGS whose stdout is a pipe nobody reads any more."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has left before the first line
    try:
        return subprocess.run([*CLI, *args], stdout=write_end, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, env=_env(home), timeout=120,
                              check=False)
    finally:
        os.close(write_end)


def _start(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=_env(home))


def _session_line(proc: subprocess.Popen[str]) -> str:
    """The id from ``run``'s "Relay session ID · …" line (read as it is printed)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("Relay session "):
            return line.split()[2]
    raise AssertionError(f"no session line: {proc.communicate()}")


async def _final(home: Path, sid: str) -> str:
    client = RelayClient.for_home(home)
    assert client is not None
    async with client:
        return (await client.wait_session(sid)).state


async def test_detach_and_sigkill_of_a_run_client_leave_the_session_to_the_host(
        host_proc: subprocess.Popen[str], relay_home: Path, git_repo: Path) -> None:
    detached = _cli(relay_home, "run", "hello", "--repo", str(git_repo), "--provider", "demo",
                    "--detach", "--json")
    assert detached.returncode == 0, detached.stderr
    first = json.loads(detached.stdout)["id"]
    client = _start(relay_home, "run", "hello again", "--repo", str(git_repo),
                    "--provider", "demo")
    second = _session_line(client)
    client.kill()  # SIGKILL: nothing of the client can tidy up
    client.communicate()
    assert await _final(relay_home, first) == "completed"
    assert await _final(relay_home, second) == "completed"


async def test_ctrl_c_in_run_detaches_and_the_session_completes_in_the_host(
        host_proc: subprocess.Popen[str], relay_home: Path, git_repo: Path) -> None:
    client = _start(relay_home, "run", "hello", "--repo", str(git_repo), "--provider", "demo")
    sid = _session_line(client)
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 130, err
    lines = err.splitlines()
    assert f"detached: session {sid} goes on in the host" in lines
    assert f"  → follow: relay-cli show {sid} --follow" in lines  # whole, a line each
    assert f"  → stop:   relay-cli stop {sid}" in lines
    assert max(map(len, lines)) <= 80  # a terminal of 80 columns breaks no command
    assert "Traceback" not in out + err
    assert await _final(relay_home, sid) == "completed"


async def test_stop_stops_a_running_session_in_the_host(
        host_proc: subprocess.Popen[str], relay_home: Path, git_repo: Path) -> None:
    detached = _cli(relay_home, "run", "hello", "--repo", str(git_repo), "--provider", "demo",
                    "--detach")
    assert detached.returncode == 0, detached.stderr
    sid = detached.stdout.strip()
    stopped = _cli(relay_home, "stop", sid)
    assert stopped.returncode == 0, stopped.stderr
    assert f"Session {sid} stopped (cancelled)" in stopped.stdout
    assert await _final(relay_home, sid) == "cancelled"
    again = _cli(relay_home, "stop", sid)
    assert again.returncode == 1
    assert "is not running (cancelled)" in again.stdout


def test_detach_needs_a_host(relay_home: Path, git_repo: Path) -> None:
    done = _cli(relay_home, "run", "hello", "--repo", str(git_repo), "--provider", "demo",
                "--detach")
    assert done.returncode == 2
    assert "No Relay host runs" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_with_no_host_hosts_and_followers_attach(relay_home: Path, git_repo: Path) -> None:
    runner = _start(relay_home, "run", "hello", "--repo", str(git_repo), "--provider", "demo",
                    "--json")
    try:
        wait_until(lambda: read_host(relay_home) is not None or runner.poll() is not None, 60,
                   "the run to host")
        info = read_host(relay_home)
        assert info is not None
        assert info.kind == "run"
        assert info.pid == runner.pid
        assert runner.stdout is not None
        first = runner.stdout.readline()  # the session's first event, as JSON
        sid = json.loads(first)["session_id"]
        followers = [_start(relay_home, "show", sid, "--follow", "--json") for _ in range(2)]
        seen = []
        for follower in followers:
            out, err = follower.communicate(timeout=120)
            assert follower.returncode == 0, err
            seen.append([json.loads(line)["id"] for line in out.splitlines()])
        # the rest through the same buffered reader: communicate() would read the pipe
        # itself and miss the lines readline() already buffered
        out = runner.stdout.read()
        assert runner.stderr is not None
        err = runner.stderr.read()
        assert runner.wait(timeout=120) == 0, err
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    ran = [json.loads(line)["id"] for line in (first + out).splitlines()]
    assert seen[0] == seen[1] == ran  # every event, once, in the same order
    assert ran == sorted(ran)
    assert len(ran) >= 3
    assert read_host(relay_home) is None  # the host went with the run


async def test_a_client_unlocks_the_hosts_vault_and_the_passphrase_is_nowhere(
        relay_home: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.core.errors import VaultLockedError

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", NO_KEYRING)
    monkeypatch.delenv("RELAY_VAULT_PASSPHRASE", raising=False)
    secret = "correct horse battery staple 19"
    proc = _serve(relay_home)
    try:
        client = RelayClient.for_home(relay_home)
        assert client is not None
        async with client:
            state = await client.vault_state()
            assert (state.backend, state.exists, state.unlocked) == ("file", False, False)
            spec = SessionSpec(repo=git_repo, task="x", runtime="claude",
                               chain=["claude:a", "codex"])
            with pytest.raises(VaultLockedError, match="hand off between accounts"):
                await client.start_session(spec)  # refused before anything exists
            assert await client.list_sessions() == []
            await client.unlock_vault(secret)  # a new vault: created with it
            state = await client.vault_state()
            assert (state.exists, state.unlocked) == (True, True)
            with pytest.raises(VaultError, match="Wrong passphrase"):
                await client.unlock_vault("not it")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    logs = "".join(p.read_text(errors="replace") for p in relay_home.rglob("*.log"))
    assert secret not in out + err + logs
    assert (relay_home / "vault.bin").exists()
    assert secret.encode() not in (relay_home / "vault.bin").read_bytes()


async def test_show_follow_into_a_closed_pipe_exits_quietly(
        host_proc: subprocess.Popen[str], relay_home: Path, git_repo: Path) -> None:
    """``relay-cli show ID --follow | head -1``: the reader leaves, the follower exits 1
    without a crash report (rich's SystemExit used to stop the loop mid-follow)."""
    detached = _cli(relay_home, "run", "hello", "--repo", str(git_repo), "--provider", "demo",
                    "--detach")
    assert detached.returncode == 0, detached.stderr
    sid = detached.stdout.strip()
    assert await _final(relay_home, sid) == "completed"
    follower = _into_closed_pipe(relay_home, "show", sid, "--follow")
    assert follower.returncode == 1, follower.stderr
    assert follower.stderr == ""
