"""A headless host in its own process (``relay-cli serve``) and clients in theirs: a session a
client started survives the client's SIGKILL; a follower resumes after any event id, across
a host restart too, and gets exactly the events it missed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from relay.api.client import RelayClient
from relay.core.hostfile import read_host
from tests.conftest import wait_until

CLI = [sys.executable, "-m", "relay.cli.main"]


def _serve(home: Path, env: dict[str, str] | None = None, port: int = 0
           ) -> subprocess.Popen[str]:
    """``relay-cli serve`` on ``port`` (0: any free one) for ``home`` (``env``: the process's
    whole environment, default this one's), once its host.json is written."""
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**(os.environ if env is None else env), "RELAY_HOME": str(home)})
    wait_until(lambda: read_host(home) is not None or proc.poll() is not None, 60,
               "the host to write host.json")
    assert proc.poll() is None, proc.communicate()
    return proc


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out


async def test_a_session_outlives_the_client_that_started_it(host_proc: subprocess.Popen[str],
                                                             relay_home: Path,
                                                             git_repo: Path) -> None:
    starter = textwrap.dedent(f"""
        import asyncio, sys
        from pathlib import Path
        from relay.api.client import RelayClient
        from relay.core.models import SessionSpec
        async def main():
            client = RelayClient.for_home(Path({str(relay_home)!r}))
            sid = await client.start_session(SessionSpec(repo={str(git_repo)!r},
                                                         task="hello", runtime="demo"))
            print(sid, flush=True)
            sys.stdin.read()  # stays until it is killed
        asyncio.run(main())
    """)
    client_proc = subprocess.Popen(  # noqa: ASYNC220 — a client process to kill, not awaited
        [sys.executable, "-c", starter], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
    assert client_proc.stdout is not None
    sid = client_proc.stdout.readline().strip()
    client_proc.kill()  # SIGKILL: nothing of it can tidy up
    client_proc.wait()
    assert sid
    client = RelayClient.for_home(relay_home)
    assert client is not None
    async with client:
        row = await client.wait_session(sid)
        assert row.state == "completed"
        stored = await client.events_after(0, sid, 5000)
        assert stored[-1].event.kind in ("session_ended", "state_changed")


async def test_a_follower_resumes_after_any_id_across_a_host_restart(
        relay_home: Path, git_repo: Path) -> None:
    from relay.core.models import SessionSpec

    proc = _serve(relay_home)
    try:
        client = RelayClient.for_home(relay_home)
        assert client is not None
        async with client:
            sid = await client.start_session(SessionSpec(repo=str(git_repo), task="hello",
                                                         runtime="demo"))
            whole = [r.id async for r in client.follow(sid)]
            assert len(whole) >= 3
            two_followers = [[r.id async for r in client.follow(sid)] for _ in range(2)]
            assert two_followers == [whole, whole]
            cut = whole[len(whole) // 2]
            assert [r.id async for r in client.follow(sid, after=cut)] == \
                [i for i in whole if i > cut]
        assert "closing" in _stop(proc)
        assert read_host(relay_home) is None  # the lock went with the host
        proc = _serve(relay_home)  # a new host, maybe on another port
        client = RelayClient.for_home(relay_home)
        assert client is not None
        async with client:
            assert [r.id async for r in client.follow(sid, after=cut)] == \
                [i for i in whole if i > cut]
            assert (await client.get_session(sid)).state == "completed"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_status_says_whether_a_host_runs(relay_home: Path) -> None:
    env = {**os.environ, "RELAY_HOME": str(relay_home), "COLUMNS": "80"}
    none = subprocess.run([*CLI, "status"], capture_output=True, text=True, env=env, timeout=60)
    assert none.returncode == 3, none.stderr
    assert "No Relay host runs" in none.stdout
    proc = _serve(relay_home)
    try:
        some = subprocess.run([*CLI, "status"], capture_output=True, text=True, env=env,
                              timeout=60)
        assert some.returncode == 0, some.stderr
        info = read_host(relay_home)
        assert info is not None
        assert info.url in some.stdout
        assert f"pid {proc.pid}" in some.stdout
        assert f"{info.url} · headless · pid {proc.pid}" in some.stdout
        assert "running: nothing · 0 event streams open" in some.stdout
        assert max(map(len, some.stdout.splitlines())) <= 80
        second = subprocess.run([*CLI, "serve", "--port", "0"], capture_output=True, text=True,
                                env=env, timeout=60)
        assert second.returncode == 2, second.stderr
        assert "already hosts" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        _stop(proc)
