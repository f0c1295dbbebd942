"""benchmarks/usage_scan: Relay's transcript usage index against ccusage and an orjson floor.

Issue 5, "Speed". A seeded generator (``generate.py``) writes realistic Claude Code
transcripts — most bytes in tool results, streaming duplicates, 30 days, 40 projects,
subagents, forks, a few corrupt and truncated lines — of ``--size-mb`` MiB (default 1024)
under ``.cache/bench-data/`` (reused when present, keyed by generator version, seed, size
and oddities; removed after the run unless ``--keep``). Then, in one run on the same
machine, with the page cache warm (every file is read once first):

* **Relay cold**: a fresh ``UsageIndex`` (new database) refreshed over the folder as one
  Claude source — wall time, median of ``--runs``;
* **Relay refresh**: ~1 MiB of new turns appended to a few live sessions, then
  ``refresh`` on the warm index — wall time, and the bytes it read must be ≈ the bytes
  appended (the appended bytes are truncated away afterwards: the data set stays as built);
* **ccusage** (the named peer, ``scripts/install-bench-tools.sh`` pins it):
  ``ccusage daily --json --offline -z UTC`` with ``CLAUDE_CONFIG_DIR`` = the folder and an
  empty ``HOME``/XDG folders, so it reads that folder only and fetches no prices — wall
  time, median of ``--runs``;
* **floor**: one pass of ``orjson.loads`` over every line of the same files in two
  processes (both cores), wall time, median of ``--runs``.

It prints the table and the ratios against the targets — Relay cold / ccusage ≤ 1.0,
refresh < 100 ms — and Relay cold / floor; then compares tokens per UTC day (input,
output, cache read, cache write) of Relay and ccusage, before and after the appends,
and exits 1 when they differ (``--allow-diff``: report only). ``--profile FILE`` writes a
cProfile of one more cold scan and prints its top functions.

Run: ``python benchmarks/usage_scan/bench_usage_scan.py [--size-mb 1024] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make benchmarks/ importable

import orjson  # noqa: E402

from benchmarks.machine import cpu_name  # noqa: E402
from benchmarks.usage_scan import generate  # noqa: E402
from benchmarks.usage_scan.floor import floor_pass  # noqa: E402
from relay.wallet.usage_index import RefreshReport, TranscriptSource, UsageIndex  # noqa: E402
from relay.wallet.usage_scan import ScanJob, run_job  # noqa: E402

COLD_TARGET = 1.0  # Relay cold / ccusage
REFRESH_TARGET_MS = 100.0
CCUSAGE_VERSION = "20.0.24"  # what scripts/install-bench-tools.sh pins
#: per UTC day: input, output, cache read, cache write
Day = tuple[int, int, int, int]
FIELDS = ("input", "output", "cache_read", "cache_write")


QUIET = False


def log(msg: str) -> None:
    if not QUIET:
        print(f"[usage_scan] {msg}", file=sys.stderr, flush=True)


# ---- the data set --------------------------------------------------------------------------

def dataset(args: argparse.Namespace) -> Path:
    """The generated folder for (seed, size, oddities), built unless a complete one is cached."""
    name = f"s{args.seed}-{args.size_mb:g}mb{'' if args.oddities else '-clean'}"
    folder: Path = args.data_dir / name
    manifest = folder / generate.MANIFEST
    if manifest.exists():
        meta = json.loads(manifest.read_text())
        if meta.get("generator") == generate.GENERATOR_VERSION:
            log(f"reusing {folder}")
            return folder
    if folder.exists():
        shutil.rmtree(folder)
    log(f"generating {args.size_mb:g} MiB (seed {args.seed}) in {folder}")
    started = time.perf_counter()
    stats = generate.generate(folder, args.size_mb, args.seed, oddities=args.oddities)
    log(f"  {stats.files} files, {stats.bytes / generate.MIB:,.0f} MiB, {stats.lines:,} lines "
        f"in {time.perf_counter() - started:.1f} s")
    return folder


def transcript_files(folder: Path) -> list[Path]:
    return sorted((folder / "projects").rglob("*.jsonl"))


def warm(files: list[Path]) -> tuple[int, float]:
    """Read every file once (page cache warm for every contender); (bytes, seconds)."""
    started = time.perf_counter()
    total = 0
    for f in files:
        with f.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                total += len(chunk)
    return total, time.perf_counter() - started


# ---- ccusage ---------------------------------------------------------------------------------

def ccusage_exe() -> Path | None:
    env = os.environ.get("RELAY_BENCH_CCUSAGE")
    exe = Path(env) if env else ROOT / ".cache/bench-tools/ccusage/node_modules/.bin/ccusage"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def run_ccusage(exe: Path, folder: Path) -> tuple[float, dict[str, Any]]:
    """One ``ccusage daily --json`` over ``folder`` only: (seconds, its JSON)."""
    with tempfile.TemporaryDirectory(prefix="ccusage-home-") as home:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "LANG": "C.UTF-8",
               "TZ": "UTC", "NO_COLOR": "1", "CLAUDE_CONFIG_DIR": str(folder),
               "XDG_CONFIG_HOME": f"{home}/.config", "XDG_CACHE_HOME": f"{home}/.cache",
               "XDG_DATA_HOME": f"{home}/.local/share"}
        cmd = [str(exe), "daily", "--json", "--offline", "--timezone", "UTC"]
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, check=False)
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace")[-2000:]
        raise SystemExit(f"ccusage failed ({done.returncode}): {err}")
    report: dict[str, Any] = json.loads(done.stdout)
    for row in report.get("daily", []):
        agents = row.get("metadata", {}).get("agents", ["claude"])
        if agents != ["claude"]:
            raise SystemExit(f"ccusage read more than the Claude folder: agents {agents}")
    return seconds, report


def ccusage_days(report: dict[str, Any]) -> dict[str, Day]:
    days: dict[str, Day] = {}
    for row in report.get("daily", []):
        date = row.get("period") or row["date"]
        days[date] = (row["inputTokens"], row["outputTokens"], row["cacheReadTokens"],
                      row["cacheCreationTokens"])
    return days


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=30).stdout
    except OSError:
        return "not found"
    return out.strip().splitlines()[0] if out.strip() else "?"


# ---- Relay -----------------------------------------------------------------------------------

def source(folder: Path) -> TranscriptSource:
    return TranscriptSource(entry="claude", runtime="claude", root=folder)


@dataclass
class Cold:
    seconds: float
    index: UsageIndex
    report: RefreshReport


def relay_cold(folder: Path, db: Path) -> Cold:
    """A fresh index at ``db`` refreshed over ``folder``; the clock covers opening it too."""
    started = time.perf_counter()
    index = UsageIndex(db)
    report = index.refresh([source(folder)])
    return Cold(time.perf_counter() - started, index, report)


def relay_days(index: UsageIndex) -> dict[str, Day]:
    """Relay's tokens per UTC day (ccusage runs with ``--timezone UTC``)."""
    return {day.isoformat(): (t.input, t.output, t.cache_read, t.cache_write)
            for day, t in index.daily_totals(tz=UTC).items()}


# ---- comparing -------------------------------------------------------------------------------

def compare(relay: dict[str, Day], peer: dict[str, Day]) -> list[str]:
    """One line per day whose totals differ (empty: equal)."""
    out = []
    for day in sorted(set(relay) | set(peer)):
        a, b = relay.get(day, (0, 0, 0, 0)), peer.get(day, (0, 0, 0, 0))
        if a != b:
            parts = [f"{n} {x:,} vs {y:,} ({x - y:+,})" for n, x, y in zip(FIELDS, a, b, strict=True)
                     if x != y]
            out.append(f"  {day}: " + "; ".join(parts))
    return out


def summed(days: dict[str, Day]) -> Day:
    t = [sum(d[i] for d in days.values()) for i in range(4)]
    return t[0], t[1], t[2], t[3]


def paired(a: list[float], b: list[float]) -> float:
    """The median of the rounds' ratios a[i] / b[i]."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def spread_of(a: list[float], b: list[float]) -> str:
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return f"{min(ratios):.2f}–{max(ratios):.2f}" if len(ratios) > 1 else "1 round"


def fmt_s(values: list[float]) -> str:
    if not values:
        return "—"
    med = statistics.median(values)
    return f"{med:.2f} s" + (f" ({min(values):.2f}–{max(values):.2f})" if len(values) > 1 else "")


def breakdown(folder: Path, files: list[Path], work: Path, runs: int) -> list[tuple[str, list[float]]]:
    """Where a cold scan's time goes: the Claude reader alone over every file in this process
    (no SQLite, no workers), and a whole cold scan with ``workers=1`` (no worker processes)."""
    parse_s: list[float] = []
    single_s: list[float] = []
    jobs = [ScanJob(str(f), "claude", 0, f.stat().st_size) for f in files]
    for i in range(runs):
        started = time.perf_counter()
        rows = sum(len(run_job(job).rows) for job in jobs)
        parse_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        index = UsageIndex(work / f"single{i}.db", workers=1)
        index.refresh([source(folder)])
        single_s.append(time.perf_counter() - started)
        index.close()
        log(f"breakdown {i + 1}: reader alone {parse_s[-1]:.2f} s ({rows:,} rows), "
            f"cold scan in one process {single_s[-1]:.2f} s")
    return [("  reader alone, 1 process, no SQLite", parse_s), ("  cold scan, workers=1", single_s)]



def profile_cold(folder: Path, out: Path, db: Path) -> None:
    prof = cProfile.Profile()
    prof.enable()
    cold = relay_cold(folder, db)
    prof.disable()
    cold.index.close()
    prof.dump_stats(str(out))
    log(f"profile of one cold scan ({cold.seconds:.2f} s under cProfile) written to {out}")
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(20)


# ---- main ------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024, help="data set size in MiB (default 1024)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3, help="runs of each contender (median shown)")
    parser.add_argument("--skip-ccusage", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the generated data set for the next run")
    parser.add_argument("--allow-diff", action="store_true", help="report differing totals, exit 0")
    parser.add_argument("--no-oddities", dest="oddities", action="store_false",
                        help="no corrupt or truncated lines in the data set")
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "bench-data" / "usage_scan")
    parser.add_argument("--profile", type=Path, help="also cProfile one cold scan into this file")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the readers alone and a cold scan in one process")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args()
    global QUIET
    QUIET = args.quiet

    exe = None if args.skip_ccusage else ccusage_exe()
    if exe is None and not args.skip_ccusage:
        print("[usage_scan] ccusage is not installed (scripts/install-bench-tools.sh): skipping it",
              file=sys.stderr)
    folder = dataset(args)
    work = Path(tempfile.mkdtemp(prefix="usage-scan-"))
    appended: list[generate.Appended] = []
    failures: list[str] = []
    try:
        files = transcript_files(folder)
        nbytes, warm_s = warm(files)
        log(f"{len(files)} files, {nbytes / generate.MIB:,.0f} MiB; page cache warmed in {warm_s:.1f} s")

        # the contenders take turns, so a burst of load elsewhere hits each of them alike
        floor_s: list[float] = []
        cc_s: list[float] = []
        cold_s: list[float] = []
        cc_report: dict[str, Any] = {}
        cold: Cold | None = None
        load_before = os.getloadavg()[0]
        for i in range(args.runs):
            fl = floor_pass(files, 2)
            floor_s.append(fl.seconds)
            if exe is not None:
                seconds, cc_report = run_ccusage(exe, folder)
                cc_s.append(seconds)
            if cold is not None:
                cold.index.close()
            cold = relay_cold(folder, work / f"cold{i}.db")
            cold_s.append(cold.seconds)
            log(f"round {i + 1}: floor {fl.seconds:.2f} s ({fl.lines:,} lines, {fl.bad_lines} not JSON), "
                + (f"ccusage {cc_s[-1]:.2f} s, " if cc_s else "") + f"relay cold {cold.seconds:.2f} s")
        assert cold is not None
        log(f"relay cold report: {cold.report}")

        relay_before = relay_days(cold.index)
        diffs_before = compare(relay_before, ccusage_days(cc_report)) if exe else []

        # refresh: once with nothing changed (the fixed cost: listing and stat-ing every file),
        # then after each of --runs appends of ~1 MiB to a few live sessions
        started = time.perf_counter()
        idle = cold.index.refresh([source(folder)])
        idle_ms = (time.perf_counter() - started) * 1000
        if idle.bytes_read:
            failures.append(f"a refresh with nothing changed read {idle.bytes_read:,} bytes")
        refresh_ms: list[float] = []
        for i in range(args.runs):
            added = generate.append(folder, 1.0, args.seed + i)
            appended.append(added)
            started = time.perf_counter()
            rep = cold.index.refresh([source(folder)])
            refresh_ms.append((time.perf_counter() - started) * 1000)
            log(f"refresh after {added.bytes:,} bytes appended to {len(added.files)} files: "
                f"{refresh_ms[-1]:.1f} ms; report: {rep}")
            if not added.bytes <= rep.bytes_read <= added.bytes * 1.05 + 65_536:
                failures.append(f"refresh read {rep.bytes_read:,} bytes for {added.bytes:,} appended")
        relay_after = relay_days(cold.index)
        diffs_after: list[str] = []
        if exe:
            _, cc_after = run_ccusage(exe, folder)
            diffs_after = compare(relay_after, ccusage_days(cc_after))
        cold.index.close()
        load_after = os.getloadavg()[0]
        while appended:
            generate.restore(appended.pop())

        extra: list[tuple[str, list[float]]] = []
        if args.breakdown:
            extra = breakdown(folder, files, work, args.runs)
        if args.profile:
            profile_cold(folder, args.profile, work / "profile.db")
    finally:
        while appended:
            generate.restore(appended.pop())
        shutil.rmtree(work, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    cold_med = statistics.median(cold_s)
    floor_med = statistics.median(floor_s)
    refresh_med = statistics.median(refresh_ms)
    mib = nbytes / generate.MIB
    print(f"machine: {os.cpu_count()} cores ({cpu_name()}); Python {platform.python_version()}, "
          f"orjson {orjson.__version__}; node {tool_version(['node', '--version'])}; "
          f"{tool_version([str(exe), '--version']) if exe else 'ccusage not run'}; "
          f"load average {load_before:.1f} before, {load_after:.1f} after")
    print(f"data: {len(files)} files, {mib:,.0f} MiB, seed {args.seed}, "
          f"oddities {'on' if args.oddities else 'off'}; page cache warm; {args.runs} run(s) each, "
          "taking turns (median, and range)")
    print(f"{'':36}{'wall time':>24}{'MiB/s':>8}")
    rows = [("floor (orjson, 2 processes)", floor_s), ("ccusage daily --json", cc_s),
            ("Relay cold scan (new index)", cold_s), *extra]
    for label, values in rows:
        rate = f"{mib / statistics.median(values):,.0f}" if values else "—"
        print(f"{label:36}{fmt_s(values):>24}{rate:>8}")
    print(f"{'Relay refresh, nothing changed':36}{f'{idle_ms:.1f} ms':>24}")
    spread = f" ({min(refresh_ms):.1f}–{max(refresh_ms):.1f})" if len(refresh_ms) > 1 else ""
    print(f"{'Relay refresh after 1 MiB appended':36}{f'{refresh_med:.1f} ms{spread}':>24}")
    # the verdicts use the median of each round's ratio: the contenders of one round ran
    # back to back, so they saw about the same load from the rest of the machine
    if cc_s:
        ratio = paired(cold_s, cc_s)
        print(f"Relay cold / ccusage: {ratio:.2f}× per round ({spread_of(cold_s, cc_s)}; medians: "
              f"{cold_med / statistics.median(cc_s):.2f}×) (target ≤ {COLD_TARGET:.1f}) → "
              f"{'PASS' if ratio <= COLD_TARGET else 'MISS'}")
    else:
        print("Relay cold / ccusage: — (ccusage not run)")
    print(f"refresh after 1 MiB: {refresh_med:.1f} ms (target < {REFRESH_TARGET_MS:.0f} ms) → "
          f"{'PASS' if refresh_med < REFRESH_TARGET_MS else 'MISS'}")
    print(f"Relay cold / floor: {paired(cold_s, floor_s):.2f}× per round ({spread_of(cold_s, floor_s)}; "
          f"medians: {cold_med / floor_med:.2f}×)")
    equal = "totals not compared (ccusage not run)"
    if exe:
        total = summed(relay_before)
        print("tokens, Relay (all days): "
              + ", ".join(f"{n} {v:,}" for n, v in zip(FIELDS, total, strict=True)))
        equal = "totals per day equal to ccusage's"
        for when, diffs in (("as generated", diffs_before), ("after the appends", diffs_after)):
            if diffs:
                print(f"totals per day differ from ccusage ({when}):")
                print("\n".join(diffs))
                equal = "totals per day DIFFER from ccusage's"
                if not args.allow_diff:
                    failures.append(f"totals differ from ccusage ({when})")
            else:
                print(f"totals per day: equal to ccusage's on all {len(relay_before)} days ({when})")
    for failure in failures:
        print(f"FAIL: {failure}")
    peer = (f"ccusage {statistics.median(cc_s):.2f} s ({paired(cold_s, cc_s):.2f}×)"
            if cc_s else "ccusage skipped (not installed)" if not args.skip_ccusage else "ccusage skipped")
    print(f"usage_scan {mib:,.0f} MiB: Relay cold {cold_med:.2f} s, {peer}, floor {floor_med:.2f} s; "
          f"refresh after 1 MiB {refresh_med:.1f} ms; {equal}{'; FAILED' if failures else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
