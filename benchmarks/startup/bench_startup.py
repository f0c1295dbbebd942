"""benchmarks/startup: process start → first paint of the window, against a floor.

Targets (each a fresh process per run):

* ``floor``   a bare PySide6 main window with as many docks as Relay's, no Relay code
              (``floor_window.py``, from source) — the baseline;
* ``source``  ``python -m relay`` from this checkout (the ``relay`` package this harness
              finds beside it, whatever PYTHONPATH says);
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

Bytecode is written as an installed package has it: the runs use a private
``PYTHONPYCACHEPREFIX`` (filled by the unmeasured first start of each target) and never
``PYTHONDONTWRITEBYTECODE``, which this machine sets (``--no-bytecode`` measures that way:
every start compiles Relay's modules again). The targets run in turns (one start of each,
then the next round), so a burst of load elsewhere spreads over all of them.

The measurement runs **idle**, then **loaded**: beside ``--load`` busy loops
(:func:`benchmarks.machine.busy`; 0 skips it). Each pass prints the load average before
it, every target's median, and each Relay target's ratio to its floor measured in the same
pass with the verdict (:func:`benchmarks.machine.verdict`): the target is **≤ 1.5×**.

Run: ``python benchmarks/startup/bench_startup.py [--runs 10] [--load 2] [--freeze-floor]``;
``--smoke`` is one start of each, idle only (``./dev test``: proves the harness works).
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.machine import busy, cpu_name, load_average, verdict  # noqa: E402

TARGET_RATIO = 1.5
#: Relay's docks: sessions, live stream, handoff, wallet, detect, knowledge, board, pipelines
#: and history (relay.gui.main_window.DOCKS)
DOCKS = 9
PAINT_MARK = "qt.widgets.painting"
FLUSH = "Flushing"
TIMEOUT_S = 60.0


@dataclass
class Target:
    name: str
    argv: list[str]
    times: list[float] = field(default_factory=list)
    #: set in this target's environment on top of the common one
    env: dict[str, str] = field(default_factory=dict)

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


def environment(home: Path, platform: str, pycache: Path | None) -> dict[str, str]:
    """The targets' environment; ``pycache``: where bytecode is written (None: it is not,
    as this machine's ``PYTHONDONTWRITEBYTECODE`` has it)."""
    env = dict(os.environ)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    # this checkout's relay first (a venv may have another installed)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "app"), *filter(None, [
        env.get("PYTHONPATH")])])
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


def own(env: dict[str, str], target: Target) -> dict[str, str]:
    """``target``'s environment: its own data folder (a start stopped right after its paint
    leaves no host behind that the next target would find), and its own settings."""
    home = Path(env["RELAY_HOME"]) / "".join(c if c.isalnum() else "-" for c in target.name)
    return {**env, "RELAY_HOME": str(home), **target.env}


def measure(targets: dict[str, Target], env: dict[str, str], runs: int) -> None:
    """``runs`` starts of every target, in turns (each target's times are replaced)."""
    for target in targets.values():
        target.times = []
    for _ in range(runs):
        for target in targets.values():
            target.times.append(first_paint(target.argv, own(env, target)))


def report(targets: dict[str, Target], check: bool) -> bool:
    """Print the medians and each Relay target's ratio to its floor; whether one is over."""
    print(f"{'target':32} {'median':>9} {'min':>9} {'max':>9}")
    for target in targets.values():
        print(f"{target.name:32} {target.median * 1000:7.0f} ms {min(target.times) * 1000:6.0f} ms "
              f"{max(target.times) * 1000:6.0f} ms")
    # each Relay target against its own kind of floor (the frozen one when there is one)
    frozen_base = "frozen-floor" if "frozen-floor" in targets else "floor"
    judged = [("source", "floor"), ("before", "floor"), ("frozen", frozen_base)]
    reference = [("frozen", "floor")] if ("frozen", "floor") not in judged else []
    over = False
    for name, base in [*judged, *reference]:
        if name in targets and base in targets:
            ratio = targets[name].median / targets[base].median
            if (name, base) in judged:
                over = over or ratio > TARGET_RATIO
                print(verdict(f"first paint, {name} / {base}", ratio, TARGET_RATIO,
                              baseline=f"{targets[base].median * 1000:.0f} ms"), flush=True)
            else:
                print(f"first paint, {name} / {base}: {ratio:.2f}× (for reference)", flush=True)
    return over and check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="measured starts per target (default 10)")
    parser.add_argument("--load", type=int, default=2, metavar="N",
                        help="busy loops beside the loaded pass, after the idle one (default 2; "
                        "0: idle only)")
    parser.add_argument("--smoke", action="store_true",
                        help="one start of each target, idle only (./dev test)")
    parser.add_argument("--targets", default="floor,source,frozen,frozen-floor",
                        help="comma-separated subset of floor,source,frozen,frozen-floor")
    parser.add_argument("--frozen", type=Path, default=ROOT / "dist" / "relay" /
                        ("relay.exe" if os.name == "nt" else "relay"),
                        help="the frozen relay executable (default dist/relay/relay)")
    parser.add_argument("--freeze-floor", action="store_true",
                        help="build the frozen floor if missing (PyInstaller, ~40 s)")
    parser.add_argument("--docks", type=int, default=DOCKS,
                        help=f"docks in the floor window (Relay's: {DOCKS})")
    parser.add_argument("--platform", default="offscreen", help="QT_QPA_PLATFORM (default offscreen)")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="write no bytecode (PYTHONDONTWRITEBYTECODE): every start compiles")
    parser.add_argument("--before", type=Path, metavar="APP_DIR",
                        help="also start the relay of another checkout's app/ folder (e.g. main "
                        "before a change), in the same turns")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when a Relay target is over {TARGET_RATIO}× its floor")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.load = 1, 0
    wanted = [t.strip() for t in args.targets.split(",") if t.strip()]

    targets: dict[str, Target] = {}
    floor = [sys.executable, str(HERE / "floor_window.py"), "--docks", str(args.docks)]
    if "floor" in wanted:
        targets["floor"] = Target("floor (bare PySide6, source)", floor)
    if "source" in wanted:
        targets["source"] = Target("relay from source", [sys.executable, "-m", "relay"])
    if args.before is not None:
        targets["before"] = Target("relay before (--before)", [sys.executable, "-m", "relay"],
                                   env={"PYTHONPATH": str(args.before.resolve())})
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

    over = False
    print(f"process start → first paint, {args.runs} runs, QT_QPA_PLATFORM={args.platform}, "
          f"{cpu_name()}, {os.cpu_count()} cores, bytecode "
          f"{'not written' if args.no_bytecode else 'written (as installed)'}", flush=True)
    with tempfile.TemporaryDirectory(prefix="relay-startup-") as tmp:
        pycache = None if args.no_bytecode else Path(tmp) / "pycache"
        env = environment(Path(tmp) / "home", args.platform, pycache)
        for target in targets.values():
            first_paint(target.argv, own(env, target))  # warm: disk cache, bytecode, home
        passes = [("idle", 0)] + ([(f"beside {args.load} busy loops", args.load)]
                                  if args.load else [])
        for label, count in passes:
            with busy(count):
                print(f"{label}: load average before: {load_average()}", flush=True)
                measure(targets, env, args.runs)
            over = report(targets, args.check) or over
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
