"""What the harnesses say about the machine they measured on."""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "?"


def load_average() -> str:
    """The 1, 5 and 15-minute load averages (Linux's /proc/loadavg), else ``?``: on a shared
    machine the figures mean little without it."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


@contextmanager
def busy(count: int) -> Iterator[None]:
    """``count`` processes spinning on a core each (``while True: pass``), for the duration:
    the "loaded" machine of docs/performance.md (a build, a browser, an agent beside Relay)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                              stdin=subprocess.DEVNULL) for _ in range(count)]
    try:
        time.sleep(0.5 if count else 0)  # let them get going
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def verdict(what: str, value: float, target: float, *, unit: str = "×",
            baseline: str = "") -> str:
    """One line a harness prints for a target: the figure, the target, the baseline it is a
    ratio against (measured in the same run) and ``met``/``MISSED`` (lower is better)."""
    against = f" vs {baseline}" if baseline else ""
    word = "met" if value <= target else "MISSED"
    return f"{what}: {value:.2f}{unit}{against} (target ≤ {target:g}{unit}: {word})"
