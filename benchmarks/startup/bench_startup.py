"""benchmarks/startup: process start → first paint of the window, against a floor.

Targets (each a fresh process per run):

* ``floor``   a bare PySide6 main window with the same number of docks, no Relay code
              (``floor_window.py``, from source) — the baseline;
* ``source``  ``python -m relay`` from this checkout;
* ``frozen``  the PyInstaller bundle's ``relay`` (``dist/relay/relay``, or ``--frozen``);
* ``frozen-floor``  the floor frozen the same way (``--freeze-floor`` builds it once with
              PyInstaller into build/startup-floor; the fair baseline for ``frozen``).

How "first paint" is seen without a hook in the app: every target runs with
``QT_LOGGING_RULES=qt.widgets.painting.debug=true``, so Qt itself logs each time the
widget repaint manager flushes a window's backing store ("Flushing QRegion(…) of
MainWindow …"); the first such line on stderr is the first paint reaching the window.
The clock starts just before the process is spawned and stops when that line is read
(pipe latency is well under a millisecond). The data folder is a warm one (created by a
first, unmeasured start), the vault is the encrypted file unlocked by
RELAY_VAULT_PASSPHRASE, and the platform is ``offscreen`` (``--platform xcb`` under a
running X server or ``xvfb-run`` measures with a real X connection).

Each target is started once unmeasured (disk cache), then ``--runs`` times; the median
is compared with the floor's: the target is **≤ 1.5×**.

Run: ``python benchmarks/startup/bench_startup.py [--runs 10] [--freeze-floor]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TARGET_RATIO = 1.5
PAINT_MARK = "qt.widgets.painting"
FLUSH = "Flushing"
TIMEOUT_S = 60.0


@dataclass
class Target:
    name: str
    argv: list[str]
    times: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def first_paint(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from spawning ``argv`` to Qt's first backing-store flush; the process is then
    stopped (SIGTERM, as a user closing it; killed if it lingers)."""
    seen = threading.Event()
    lines: list[str] = []
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    painted_at = 0.0

    def read() -> None:
        nonlocal painted_at
        assert proc.stderr is not None
        for line in proc.stderr:
            if not seen.is_set() and PAINT_MARK in line and FLUSH in line:
                painted_at = time.monotonic()
                seen.set()
            elif len(lines) < 200:
                lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not seen.wait(TIMEOUT_S) or proc.poll() not in (None, 0):
            raise RuntimeError(f"{argv[0]}: no first paint within {TIMEOUT_S:.0f} s "
                               f"(exit status {proc.poll()}):\n" + "".join(lines[-30:]))
        return painted_at - started
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM if os.name != "nt" else signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(timeout=5)


def environment(home: Path, platform: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "RELAY_HOME": str(home),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "RELAY_VAULT_PASSPHRASE": "startup-benchmark",
        "QT_QPA_PLATFORM": platform,
        "QT_LOGGING_RULES": "qt.widgets.painting.debug=true",
        "QT_MESSAGE_PATTERN": "%{category} %{message}",
    })
    return env


def freeze_floor(python: str) -> Path:
    """The floor frozen with PyInstaller (onedir, like the bundle), built once."""
    out = ROOT / "build" / "startup-floor"
    exe = out / "dist" / "floor_window" / ("floor_window.exe" if os.name == "nt" else "floor_window")
    if exe.exists() and exe.stat().st_mtime > (HERE / "floor_window.py").stat().st_mtime:
        return exe
    print("freezing the floor with PyInstaller (once) …", file=sys.stderr)
    subprocess.run([python, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN", "--onedir",
                    "--distpath", str(out / "dist"), "--workpath", str(out / "work"),
                    "--specpath", str(out), str(HERE / "floor_window.py")], check=True)
    return exe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="measured starts per target (default 10)")
    parser.add_argument("--targets", default="floor,source,frozen,frozen-floor",
                        help="comma-separated subset of floor,source,frozen,frozen-floor")
    parser.add_argument("--frozen", type=Path, default=ROOT / "dist" / "relay" /
                        ("relay.exe" if os.name == "nt" else "relay"),
                        help="the frozen relay executable (default dist/relay/relay)")
    parser.add_argument("--freeze-floor", action="store_true",
                        help="build the frozen floor if missing (PyInstaller, ~40 s)")
    parser.add_argument("--docks", type=int, default=7, help="docks in the floor window (Relay's: 7)")
    parser.add_argument("--platform", default="offscreen", help="QT_QPA_PLATFORM (default offscreen)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when a Relay target is over {TARGET_RATIO}× its floor")
    args = parser.parse_args(argv)
    wanted = [t.strip() for t in args.targets.split(",") if t.strip()]

    targets: dict[str, Target] = {}
    floor = [sys.executable, str(HERE / "floor_window.py"), "--docks", str(args.docks)]
    if "floor" in wanted:
        targets["floor"] = Target("floor (bare PySide6, source)", floor)
    if "source" in wanted:
        targets["source"] = Target("relay from source", [sys.executable, "-m", "relay"])
    if "frozen" in wanted:
        if args.frozen.exists():
            targets["frozen"] = Target("relay frozen (PyInstaller)", [str(args.frozen)])
        else:
            print(f"no frozen build at {args.frozen}: skipping it (./dev bundle builds it)",
                  file=sys.stderr)
    if "frozen-floor" in wanted:
        frozen_floor = ROOT / "build" / "startup-floor" / "dist" / "floor_window" / (
            "floor_window.exe" if os.name == "nt" else "floor_window")
        if args.freeze_floor:
            frozen_floor = freeze_floor(sys.executable)
        if frozen_floor.exists():
            targets["frozen-floor"] = Target("floor frozen (PyInstaller)",
                                             [str(frozen_floor), "--docks", str(args.docks)])
        elif "frozen" in targets:
            print("no frozen floor (add --freeze-floor to build it): frozen is compared with "
                  "the source floor only", file=sys.stderr)
    if not targets:
        parser.error("nothing to measure")

    with tempfile.TemporaryDirectory(prefix="relay-startup-") as tmp:
        env = environment(Path(tmp) / "home", args.platform)
        for target in targets.values():
            first_paint(target.argv, env)  # warm: disk cache, and the data folder exists
            for _ in range(args.runs):
                target.times.append(first_paint(target.argv, env))

    print(f"process start → first paint, {args.runs} runs, QT_QPA_PLATFORM={args.platform}, "
          f"{os.cpu_count()} cores")
    print(f"{'target':32} {'median':>9} {'min':>9} {'max':>9}")
    for target in targets.values():
        print(f"{target.name:32} {target.median * 1000:7.0f} ms {min(target.times) * 1000:6.0f} ms "
              f"{max(target.times) * 1000:6.0f} ms")
    # each Relay target against its own kind of floor (the frozen one when there is one)
    judged = [("source", "floor"), ("frozen", "frozen-floor" if "frozen-floor" in targets else "floor")]
    over = False
    reference = [("frozen", "floor")] if ("frozen", "floor") not in judged else []
    for name, base in [*judged, *reference]:
        if name in targets and base in targets:
            ratio = targets[name].median / targets[base].median
            if (name, base) in judged:
                verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
                over = over or ratio > TARGET_RATIO
                print(f"ratio {name} / {base}: {ratio:.2f}× (target ≤ {TARGET_RATIO}×: {verdict})")
            else:
                print(f"ratio {name} / {base}: {ratio:.2f}× (for reference)")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
