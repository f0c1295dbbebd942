"""AgentProcess and find_executable: no shell, own session, bounded output, whole-tree stop."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import psutil
import pytest

from relay.core.errors import AgentProcessError, AgentStalledError, CliNotFoundError
from relay.core.procs import STDERR_TAIL_BYTES, AgentProcess, Line, StdinMode, find_executable


def py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def agent(tmp_path: Path, argv: list[str], **kw: object) -> AgentProcess:
    return AgentProcess(argv=argv, cwd=tmp_path, env=dict(os.environ), **kw)  # type: ignore[arg-type]


async def collect(proc: AgentProcess, within: float = 30.0) -> list[Line]:
    async def _all() -> list[Line]:
        return [line async for line in proc.lines()]
    return await asyncio.wait_for(_all(), within)


async def next_line(it: AsyncIterator[Line], within: float = 30.0) -> Line:
    return await asyncio.wait_for(anext(it), within)


def wait_until(cond: Callable[[], bool], within: float = 10.0, what: str = "") -> None:
    """Bounded poll, used only for kernel process state nothing can signal us about."""
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


# -- argument arrays, session ---------------------------------------------------------


async def test_arguments_reach_the_child_verbatim_without_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    args = ["two words", 'he said "hi"', "it's", f"x; touch {marker}", f"$(touch {marker})",
            f"`touch {marker}`", "*", "", "a\\b", "tab\there", "ünïcødé"]
    proc = agent(tmp_path, py("import json, sys; print(json.dumps(sys.argv[1:]))", *args))
    await proc.start()
    lines = await collect(proc)
    result = await proc.wait()
    assert result.exit_code == 0, result.stderr_tail
    assert json.loads(lines[0].text) == args
    assert not marker.exists()


async def test_child_runs_in_its_own_session_and_process_group(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("import os, sys; print(os.getsid(0), os.getpgid(0)); sys.stdin.read()"),
                 stdin=StdinMode.PIPE)
    await proc.start()
    assert proc.pid is not None
    try:
        it = proc.lines()
        sid, pgid = map(int, (await next_line(it)).text.split())
        # The child is still alive (blocked on stdin): ask the kernel too.
        assert os.getsid(proc.pid) == proc.pid
        assert os.getpgid(proc.pid) == proc.pid
        assert sid == pgid == proc.pid
        assert os.getsid(proc.pid) != os.getsid(0)
        assert os.getpgid(proc.pid) != os.getpgid(0)
    finally:
        await proc.write_stdin(b"", close=True)
        await proc.wait()


async def test_cwd_and_env_are_passed(tmp_path: Path) -> None:
    env = {"RELAY_TEST_VALUE": "forty two", "PATH": os.environ.get("PATH", "")}
    proc = AgentProcess(argv=py("import os; print(os.getcwd()); print(os.environ.get('RELAY_TEST_VALUE')); "
                                "print(os.environ.get('RELAY_HOME'))"),
                        cwd=tmp_path, env=env)
    await proc.start()
    lines = [line.text for line in await collect(proc)]
    await proc.wait()
    assert Path(lines[0]).resolve() == tmp_path.resolve()
    assert lines[1] == "forty two"
    assert lines[2] == "None"  # only the given env, not the parent's


async def test_empty_argv_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentProcessError, match="No command"):
        await agent(tmp_path, []).start()


async def test_missing_executable_is_cli_not_found(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-cli")
    with pytest.raises(CliNotFoundError) as info:
        await agent(tmp_path, [missing, "--version"]).start()
    assert "no-such-cli" in info.value.message


async def test_methods_before_start_raise(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("pass"))
    assert proc.pid is None
    with pytest.raises(AgentProcessError, match="not started"):
        await proc.wait()
    await proc.stop()  # nothing to stop: a no-op, not an error


# -- stdin ------------------------------------------------------------------------------


async def test_devnull_stdin_gives_eof_immediately(tmp_path: Path) -> None:
    # If stdin were not at EOF the child would block and the inactivity timeout would fire.
    proc = agent(tmp_path, py("import sys; print(repr(sys.stdin.read()))"), inactivity_timeout=20)
    await proc.start()
    lines = await collect(proc)
    result = await proc.wait()
    assert [line.text for line in lines] == ["''"]
    assert result.exit_code == 0


async def test_devnull_stdin_cannot_be_written(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("pass"))
    await proc.start()
    with pytest.raises(AgentProcessError, match="stdin is closed"):
        await proc.write_stdin(b"hello")
    await proc.wait()


async def test_pipe_stdin_round_trip(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("import sys; print(sys.stdin.read().upper())"), stdin=StdinMode.PIPE)
    await proc.start()
    await proc.write_stdin(b"ping ")
    await proc.write_stdin(b"pong", close=True)
    lines = await collect(proc)
    assert [line.text for line in lines] == ["PING PONG"]
    assert (await proc.wait()).exit_code == 0


# -- lines() ------------------------------------------------------------------------------


async def test_lines_truncates_and_flags_long_lines_and_keeps_the_rest(tmp_path: Path) -> None:
    code = ("import sys; w = sys.stdout.buffer.write; "
            "w(b'x' * 100 + b'\\n'); w(b'0123456789\\n'); w(b'01234567890\\n'); "
            "w(b'short\\n'); w(b'\\n'); w(b'partial'); sys.stdout.flush()")
    proc = agent(tmp_path, py(code), max_line_bytes=10)
    await proc.start()
    lines = await collect(proc)
    await proc.wait()
    assert lines == [
        Line("x" * 10, truncated=True),
        Line("0123456789", truncated=False),       # exactly at the limit: intact
        Line("0123456789", truncated=True),        # one byte over
        Line("short", truncated=False),            # the flag does not leak onto the next line
        Line("", truncated=False),
        Line("partial", truncated=False),  # partial last line delivered
    ]


async def test_long_line_spanning_many_reads_is_truncated_exactly(tmp_path: Path) -> None:
    limit = 100_000
    code = ("import sys, os\n"
            "for _ in range(50): os.write(1, b'a' * 10_000)\n"  # 500 kB, many chunks
            "os.write(1, b'\\nnext\\n')\n"
            "os.write(1, b'b' * 150_000)\n")                     # truncated AND unterminated
    proc = agent(tmp_path, py(code), max_line_bytes=limit)
    await proc.start()
    lines = await collect(proc)
    await proc.wait()
    assert [(len(x.text), x.truncated) for x in lines] == [(limit, True), (4, False), (limit, True)]
    assert lines[0].text == "a" * limit
    assert lines[1].text == "next"
    assert lines[2].text == "b" * limit


async def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    code = ("import sys; sys.stdout.buffer.write(b'ok\\xff\\xfe done\\n\\xc3\\n'"
            " + 'é'.encode() + b'\\n'); sys.stdout.flush()")
    proc = agent(tmp_path, py(code))
    await proc.start()
    lines = await collect(proc)
    assert (await proc.wait()).exit_code == 0
    assert [line.text for line in lines] == ["ok\ufffd\ufffd done", "\ufffd", "é"]


async def test_multibyte_character_split_across_writes_is_reassembled(tmp_path: Path) -> None:
    # The child writes half of a UTF-8 character, waits for us, then the other half.
    code = ("import os, sys\n"
            "os.write(1, 'é'.encode()[:1])\n"
            "sys.stdin.readline()\n"
            "os.write(1, 'é'.encode()[1:] + b'!\\n')\n")
    proc = agent(tmp_path, py(code), stdin=StdinMode.PIPE)
    await proc.start()
    it = proc.lines()
    pending = asyncio.ensure_future(next_line(it))
    await proc.write_stdin(b"go\n", close=True)
    assert (await pending).text == "é!"
    await proc.wait()


# -- inactivity ------------------------------------------------------------------------


async def test_inactivity_timeout_raises_stalled(tmp_path: Path) -> None:
    timeout = 0.3
    # Generous until the first line, so a slow interpreter start on a loaded machine is not
    # mistaken for a stall; then the small timeout under test (read on every chunk).
    proc = agent(tmp_path, py("import sys; print('hello', flush=True); sys.stdin.read()"),
                 stdin=StdinMode.PIPE, inactivity_timeout=30)
    await proc.start()
    it = proc.lines()
    try:
        assert (await next_line(it)).text == "hello"
        proc.inactivity_timeout = timeout
        started = time.monotonic()
        with pytest.raises(AgentStalledError) as info:
            await next_line(it)
        assert time.monotonic() - started >= timeout * 0.9
        assert "0.3 s" in info.value.message
        assert info.value.hint
        assert proc._proc is not None
        assert proc._proc.returncode is None
    finally:
        await proc.stop(grace=5)
    result = await proc.wait()
    assert result.stalled is True
    assert result.stopped is True


async def test_output_resets_the_inactivity_timer(tmp_path: Path) -> None:
    # 8 lines, 0.2 s apart (the child paces itself): 1.6 s in all, longer than the 1 s
    # timeout, but no single gap is.
    code = "import time\nfor i in range(8):\n    print(i, flush=True)\n    time.sleep(0.2)\n"
    proc = agent(tmp_path, py(code), inactivity_timeout=1.0)
    await proc.start()
    started = time.monotonic()
    lines = await collect(proc)
    result = await proc.wait()
    assert time.monotonic() - started > 1.0
    assert [line.text for line in lines] == [str(i) for i in range(8)]
    assert result.stalled is False


# -- stderr ------------------------------------------------------------------------------


async def test_stderr_tail_is_bounded_and_keeps_the_end(tmp_path: Path) -> None:
    # 3 × STDERR_TAIL_BYTES + 7 bytes in 1000-byte writes; the tail must be exactly the
    # last STDERR_TAIL_BYTES bytes (not just "some suffix").
    total = 3 * STDERR_TAIL_BYTES + 7
    code = ("import os\n"
            f"data = b''.join(b'%07d|' % i for i in range({total} // 8 + 1))[:{total}]\n"
            "for i in range(0, len(data), 1000): os.write(2, data[i:i + 1000])\n")
    expected = b"".join(b"%07d|" % i for i in range(total // 8 + 1))[:total]
    proc = agent(tmp_path, py(code))
    await proc.start()
    await collect(proc)
    result = await proc.wait()
    assert result.exit_code == 0
    tail = result.stderr_tail.encode()
    assert len(tail) <= STDERR_TAIL_BYTES
    assert expected.endswith(tail)
    assert b"0000000|" not in tail  # the beginning was dropped
    assert tail == expected[-STDERR_TAIL_BYTES:]
    # What is kept in memory is bounded too (the tail plus at most one read chunk).
    assert proc._stderr_size <= 2 * STDERR_TAIL_BYTES


async def test_small_stderr_is_kept_whole(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("import sys; sys.stderr.write('first\\nboom: bad thing\\n'); sys.exit(2)"))
    await proc.start()
    await collect(proc)
    result = await proc.wait()
    assert result.stderr_tail == "first\nboom: bad thing\n"
    assert result.exit_code == 2


# -- exit status ---------------------------------------------------------------------


async def test_exit_code_reported(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("import sys; sys.exit(3)"))
    await proc.start()
    await collect(proc)
    result = await proc.wait()
    assert (result.exit_code, result.signal, result.stopped, result.stalled) == (3, None, False, False)


async def test_killed_by_signal_reported(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    await proc.start()
    await collect(proc)
    result = await proc.wait()
    assert result.exit_code is None
    assert result.signal == signal.SIGKILL
    assert result.signal == 9
    assert result.stopped is False


# -- stop() --------------------------------------------------------------------------

_GRANDCHILD = """
import os, signal, threading
if {escape}:
    os.setsid()  # leave the agent's process group: only the psutil tree walk can find it
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(os.getpid(), flush=True)
threading.Event().wait()
"""

_CHILD = """
import subprocess, sys
gc = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
gc.wait()
"""


@pytest.mark.parametrize("escape", [False, True], ids=["same-group", "own-session"])
async def test_stop_kills_the_whole_tree(tmp_path: Path, escape: bool) -> None:
    proc = agent(tmp_path, py(_CHILD, _GRANDCHILD.format(escape=escape)))
    await proc.start()
    assert proc.pid is not None
    it = proc.lines()
    gc_pid = int((await next_line(it)).text)  # printed after SIGTERM is ignored
    gc = psutil.Process(gc_pid)
    assert gc.is_running()
    assert gc.ppid() == proc.pid
    if escape:
        assert os.getpgid(gc_pid) != proc.pid
    else:
        assert os.getpgid(gc_pid) == proc.pid

    await asyncio.wait_for(proc.stop(grace=0.2), 30)

    # The grandchild holds the stdout pipe: EOF means it is dead (or stop() failed and
    # this times out).
    rest = [line async for line in _bounded(it, 30)]
    assert rest == []
    wait_until(lambda: gone(gc_pid), what=f"grandchild {gc_pid} to die")
    assert gone(proc.pid)
    result = await proc.wait()
    assert result.stopped is True
    assert result.signal in (signal.SIGTERM, signal.SIGKILL)


async def _bounded(it: AsyncIterator[Line], within: float) -> AsyncIterator[Line]:
    while True:
        try:
            yield await asyncio.wait_for(anext(it), within)
        except StopAsyncIteration:
            return


async def test_stop_escalates_to_sigkill_after_grace(tmp_path: Path) -> None:
    code = ("import signal, sys, threading; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); threading.Event().wait()")
    proc = agent(tmp_path, py(code))
    await proc.start()
    it = proc.lines()
    assert (await next_line(it)).text == "ready"
    started = time.monotonic()
    await asyncio.wait_for(proc.stop(grace=0.3), 30)
    assert time.monotonic() - started >= 0.25  # it did wait for the grace period
    result = await proc.wait()
    assert result.signal == signal.SIGKILL
    assert result.exit_code is None
    assert result.stopped is True


async def test_polite_stop_within_grace_uses_sigterm(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("import sys; print('ready', flush=True); sys.stdin.read()"),
                 stdin=StdinMode.PIPE)
    await proc.start()
    it = proc.lines()
    assert (await next_line(it)).text == "ready"
    await asyncio.wait_for(proc.stop(grace=30), 30)
    result = await proc.wait()
    assert result.signal == signal.SIGTERM
    assert result.stopped is True


async def test_stop_after_exit_is_a_no_op(tmp_path: Path) -> None:
    proc = agent(tmp_path, py("pass"))
    await proc.start()
    await collect(proc)
    await proc.wait()
    await proc.stop(grace=0.1)
    result = await proc.wait()
    assert result.stopped is False
    assert result.exit_code == 0


# -- find_executable -------------------------------------------------------------------


def _exe(path: Path, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


def test_find_executable_on_path(tmp_path: Path) -> None:
    a = _exe(tmp_path / "a" / "fakecli")
    _exe(tmp_path / "b" / "fakecli")
    env = {"PATH": f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"}
    assert find_executable("fake", "fakecli", "pip install fakecli", env=env) == str(a)


def test_find_executable_uses_os_environ_by_default(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    a = _exe(tmp_path / "bin" / "fakecli")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("RELAY_FAKE_BIN", raising=False)
    assert find_executable("fake", "fakecli", "pip install fakecli") == str(a)
    other = _exe(tmp_path / "elsewhere" / "my-fake")
    monkeypatch.setenv("RELAY_FAKE_BIN", str(other))
    assert find_executable("fake", "fakecli", "pip install fakecli") == str(other)


def test_find_executable_override_wins_over_path(tmp_path: Path) -> None:
    _exe(tmp_path / "bin" / "fakecli")
    override = _exe(tmp_path / "custom" / "my-fake")
    env = {"PATH": str(tmp_path / "bin"), "RELAY_FAKE_BIN": str(override)}
    assert find_executable("fake", "fakecli", "pip install fakecli", env=env) == str(override)


def test_find_executable_override_to_non_executable(tmp_path: Path) -> None:
    _exe(tmp_path / "bin" / "fakecli")
    plain = _exe(tmp_path / "custom" / "not-exec", mode=0o644)
    assert not plain.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = {"PATH": str(tmp_path / "bin"), "RELAY_FAKE_BIN": str(plain)}
    with pytest.raises(CliNotFoundError) as info:
        find_executable("fake", "fakecli", "pip install fakecli", env=env)
    assert "RELAY_FAKE_BIN" in info.value.message
    assert str(plain) in info.value.message
    assert info.value.hint
    assert "RELAY_FAKE_BIN" in info.value.hint


def test_find_executable_override_to_missing_file(tmp_path: Path) -> None:
    env = {"PATH": "", "RELAY_FAKE_BIN": str(tmp_path / "nope")}
    with pytest.raises(CliNotFoundError, match="RELAY_FAKE_BIN"):
        find_executable("fake", "fakecli", "pip install fakecli", env=env)


def test_find_executable_missing_names_cli_and_install_hint(tmp_path: Path) -> None:
    _exe(tmp_path / "bin" / "fakecli", mode=0o644)  # present but not executable: not a match
    env = {"PATH": str(tmp_path / "bin")}
    with pytest.raises(CliNotFoundError) as info:
        find_executable("fake", "fakecli", "Install it with `npm i -g fakecli`", env=env)
    assert "fakecli" in info.value.message
    assert "fake" in info.value.message
    assert info.value.hint is not None
    assert "npm i -g fakecli" in info.value.hint
    assert "RELAY_FAKE_BIN" in info.value.hint
    assert "npm i -g fakecli" in str(info.value)


# -- what the agent leaves behind ------------------------------------------------------

#: the agent: fork a grandchild (the middle process exits at once, so it is orphaned;
#: ``setsid`` also leaves the agent's session and process group) that writes its pid to
#: argv[1] and sleeps 300 s holding what ``hold`` says; then print a result and exit 0
#: (or, with ``stay``, wait on stdin until stopped)
_LEAVER = """
import os, sys, time
pidfile, setsid, hold, stay = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4] == "1"
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.close(ready_r)
    if setsid:
        os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        if hold in ("stderr", "none"):
            os.dup2(null, 1)
        if hold == "none":
            os.dup2(null, 2)
        open(pidfile, "w").write(str(os.getpid()))
        os.write(ready_w, b"x")
        time.sleep(300)
    os._exit(0)
os.close(ready_w)
os.read(ready_r, 1)
print("result", flush=True)
if stay:
    sys.stdin.read()
"""


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "grandchild.pid"
    yield path
    if path.exists() and not gone(pid := int(path.read_text())):
        os.kill(pid, signal.SIGKILL)  # a failing test leaves nothing behind


def leaver(tmp_path: Path, pidfile: Path, *, setsid: bool, hold: str = "both",
           stay: bool = False) -> AgentProcess:
    return agent(tmp_path, py(_LEAVER, str(pidfile), "1" if setsid else "0", hold,
                              "1" if stay else "0"),
                 stdin=StdinMode.PIPE if stay else StdinMode.DEVNULL, exit_grace=0.2)


def wait_gone(pid: int, within: float = 10.0) -> None:
    try:
        psutil.Process(pid).wait(timeout=within)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        if not gone(pid):
            pytest.fail(f"process {pid} outlived the agent")


@pytest.mark.parametrize("setsid", [False, True], ids=["same-group", "own-session"])
@pytest.mark.parametrize("hold", ["both", "stderr"])
async def test_output_ends_a_grace_after_the_agent_exits_whoever_holds_the_pipe(
        tmp_path: Path, pidfile: Path, setsid: bool, hold: str) -> None:
    proc = leaver(tmp_path, pidfile, setsid=setsid, hold=hold)
    await proc.start()
    started = time.monotonic()
    lines = await collect(proc, within=30)
    result = await asyncio.wait_for(proc.wait(), 30)
    took = time.monotonic() - started
    assert [line.text for line in lines] == ["result"]
    assert (result.exit_code, result.signal, result.stalled, result.stopped) == (0, None, False, False)
    assert took < 15
    wait_gone(int(pidfile.read_text()))


async def test_a_detached_child_that_lets_go_of_the_pipe_is_stopped_with_the_agent(
        tmp_path: Path, pidfile: Path) -> None:
    # The pipes end with the agent: nothing waits on them, but the child must not outlive it.
    proc = leaver(tmp_path, pidfile, setsid=True, hold="none")
    await proc.start()
    assert [line.text for line in await collect(proc, within=30)] == ["result"]
    result = await asyncio.wait_for(proc.wait(), 30)
    assert (result.exit_code, result.stopped) == (0, False)  # the agent itself had finished
    wait_gone(int(pidfile.read_text()))
    await asyncio.wait_for(proc.stop(grace=0.2), 30)  # the run's end: nothing left, no error
    assert (await proc.wait()).stopped is False


@pytest.mark.parametrize("setsid", [False, True], ids=["same-group", "own-session"])
async def test_stop_kills_orphaned_descendants_too(tmp_path: Path, pidfile: Path,
                                                  setsid: bool) -> None:
    proc = leaver(tmp_path, pidfile, setsid=setsid, stay=True)
    await proc.start()
    it = proc.lines()
    assert (await next_line(it)).text == "result"
    grandchild = int(pidfile.read_text())
    assert psutil.Process(grandchild).ppid() != proc.pid  # orphaned: not in the agent's tree
    await asyncio.wait_for(proc.stop(grace=0.2), 30)
    assert [line async for line in _bounded(it, 30)] == []
    wait_gone(grandchild)
    assert (await asyncio.wait_for(proc.wait(), 30)).stopped is True
