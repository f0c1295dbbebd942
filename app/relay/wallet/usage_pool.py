"""Worker processes for a big scan: ``python -c`` that imports the readers and nothing else.

Not :mod:`multiprocessing`: its ``spawn`` re-imports the parent's ``__main__`` in every
worker — ``relay-cli`` takes half a second to import, a script on stdin cannot be imported at
all — and ``fork`` would copy the GUI's threads. A worker here imports only
:mod:`relay.wallet.usage_scan` (~0.08 s), then answers batches of jobs sent as length-prefixed
pickles on its stdin with the results on its stdout. One thread per worker feeds it the next
batch from a shared queue when it answers, so a slow batch never holds the others back.

The pool is the wallet's and the Detector's (:mod:`relay.detect.reading`): a batch goes with
the function that runs it (pickled by name: the worker imports its module when first sent
one), :func:`run_batch` unless the caller names another.

A worker that cannot start or dies leaves its batch to the caller (:func:`results` reads it
in-process). A frozen build has no interpreter to start: its workers are the bundle's own
``relay-cli --usage-worker`` (installers/entry/relay_cli.py).
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from relay.wallet.usage_scan import Progress, ScanJob, ScanResult, run_batch, run_job

#: below this many bytes to read, starting processes costs more than it saves
PARALLEL_BYTES = 48 * 1024 * 1024
#: a worker gets files in batches of about this many bytes (fewer round trips)
BATCH_BYTES = 16 * 1024 * 1024
_HEADER = 8
_DONE = object()
J = TypeVar("J")
R = TypeVar("R")


def free_cores() -> int:
    """The cores this process may use less what the other programs keep busy, at least 1:
    a big read on a busy machine starts fewer workers instead of thrashing.

    Busy is the threads running right now besides this one (``/proc/loadavg``), else the
    1-minute load average — which lags by a minute: a build started a moment ago is not in
    it yet, and work that ended a moment ago (a scan just before) still is."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    running = _running_now()
    if running is not None:
        busy = float(running - 1)
    else:
        try:
            busy = os.getloadavg()[0]
        except (AttributeError, OSError):  # Windows
            busy = 0.0
    return max(1, min(cores, round(cores - busy)))


def _running_now() -> int | None:
    """Runnable threads on the machine now (``/proc/loadavg``'s fourth field); None: unknown."""
    try:
        with open("/proc/loadavg", "rb") as handle:
            return int(handle.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


def scan(jobs: list[ScanJob], progress: Progress | None = None,
         workers: int | None = None) -> Iterator[ScanResult]:
    """Run ``jobs``, yielding results as they finish (not in order).

    Args:
        jobs: the file regions to read.
        progress: called with (bytes done, bytes total) after each result.
        workers: processes for a big scan (default: :func:`free_cores` — at least one on
            a machine of several cores, reading while this process stores); small scans,
            ``workers=1`` and a one-core machine stay in this process.
    """
    total = sum(max(j.size - j.start, 0) for j in jobs)
    count = workers or free_cores()
    many = count > 1 if workers else (os.cpu_count() or 1) > 1
    parallel = many and len(jobs) > 1 and total >= PARALLEL_BYTES
    done = 0
    for result in results(list(_batches(jobs)), count) if parallel else map(run_job, jobs):
        done += max(result.job.size - result.job.start, 0)
        if progress is not None:
            progress(done, total)
        yield result


def _batches(jobs: list[ScanJob]) -> Iterator[list[ScanJob]]:
    return batches(jobs, lambda j: j.size - j.start, BATCH_BYTES)


def batches(jobs: list[J], cost: Callable[[J], int], most: int) -> Iterator[list[J]]:
    """Costliest first (the last worker to finish sets the wall time), grouped into batches
    of about ``most`` (bytes to read) and at most 256 jobs."""
    batch: list[J] = []
    size = 0
    for job in sorted(jobs, key=cost, reverse=True):
        batch.append(job)
        size += cost(job)
        if size >= most or len(batch) >= 256:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def results(batches: list[list[J]], workers: int,
            run: Callable[[list[J]], Sequence[R]] = run_batch,  # type: ignore[assignment]
            ) -> Iterator[R]:
    """The results of ``batches`` run by ``run`` (a module-level function: it is sent by
    name) in ``workers`` processes, as they come."""
    todo: queue.SimpleQueue[list[J]] = queue.SimpleQueue()
    for batch in batches:
        todo.put(batch)
    done: queue.SimpleQueue[Any] = queue.SimpleQueue()
    threads = [threading.Thread(target=_feed, args=(todo, done, run), daemon=True)
               for _ in range(max(1, min(workers, len(batches))))]
    for thread in threads:
        thread.start()
    left: list[list[J]] = []
    try:
        running = len(threads)
        while running:
            item = done.get()
            if item is _DONE:
                running -= 1
            elif isinstance(item, _Failed):
                left.append(item.batch)
            else:
                yield from item
    finally:
        while not todo.empty():   # what no worker took (all failed, or the caller stopped)
            left.append(todo.get())
    for batch in left:
        yield from run(batch)


class _Failed:
    def __init__(self, batch: list[Any]) -> None:
        self.batch = batch


def _feed(todo: queue.SimpleQueue[list[J]], done: queue.SimpleQueue[Any],
          run: Callable[[list[J]], Sequence[R]]) -> None:
    """One worker's life: start it, send it batches until none is left, stop it."""
    try:
        # no console window flashing up on Windows when the GUI starts a worker
        process = subprocess.Popen(_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
    except OSError:
        done.put(_DONE)
        return
    # both are pipes (typing does not know)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        while True:
            try:
                batch = todo.get_nowait()
            except queue.Empty:
                break
            try:
                _send(process.stdin, (run, batch))
                done.put(_receive(process.stdout))
            except (OSError, EOFError, pickle.UnpicklingError):
                done.put(_Failed(batch))
                break
    finally:
        _stop(process)
        done.put(_DONE)


def _command() -> list[str]:
    if getattr(sys, "frozen", False):  # no interpreter: the bundle's relay-cli is the worker
        name = "relay-cli.exe" if sys.platform.startswith("win") else "relay-cli"
        return [str(Path(sys.executable).with_name(name)), "--usage-worker"]
    root = str(Path(__file__).resolve().parents[2])   # the folder holding the relay package
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            "from relay.wallet.usage_pool import serve; serve()")
    return [sys.executable, "-c", code]


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        if process.stdin is not None:
            process.stdin.close()   # end of input: the worker returns
        process.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
    finally:
        if process.stdout is not None:
            process.stdout.close()


def _send(stream: IO[bytes], value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(_HEADER, "big") + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER)
    if len(header) < _HEADER:
        raise EOFError("the worker stopped")
    size = int.from_bytes(header, "big")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the worker stopped mid-answer")
    return pickle.loads(data)


def serve() -> None:
    """A worker's main loop: a batch (and the function that runs it) in, its results out,
    until stdin ends."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            run, batch = _receive(stdin)
        except EOFError:
            return
        _send(stdout, run(batch))
