"""benchmarks/knowledge_scan: a full knowledge-graph scan, tree-sitter against the old scanner.

The knowledge graph's code scanner outlines files with tree-sitter (``relay.knowledge.langs``);
the baseline is the hand-written line and keyword scanners it replaced, kept importable
here only (``baseline/``). Both run in one process, in one run, on one repository:

* the data set: ``generate.py``'s seeded polyglot git repository (``--files``, default
  4,000 files, ~50 MiB, in the seven languages), under ``.cache/bench-data/knowledge_scan/``
  (reused when present, removed after the run unless ``--keep``), or any checkout
  (``--repo PATH``); the page cache is warmed first;
* **full scan**: ``scan_repo`` into a new ``knowledge.sqlite`` — listing (pygit2), reading,
  outlining, storing nodes, edges, chunks and FTS5 — wall time and files/s, the hand-written
  scanner swapped in for the baseline (the rest of the scanner is the same code);
* **outline only**: every file's text, already in memory, outlined — the parsing alone;
* each **idle**, then **loaded**: ``--load`` busy Python processes (``while True: pass``,
  default one per core) started by this harness, running for the whole loaded pass.

The contenders take turns within each of ``--runs`` rounds (medians shown, with the range).
It prints the table, what each found (symbols, imports, damaged files) and, for idle and
loaded, tree-sitter's speed over the hand-written one: the full scan's (no target: the new
scanner records about twice the symbols, so it stores twice the rows), and the outline's
against the target — no slower (≥ 1.0×). ``--smoke``: 60 files, one round, one busy
process (``./dev test``).

Run: ``python benchmarks/knowledge_scan/bench_knowledge_scan.py [--files 4000] [--runs 3]
[--load N] [--repo PATH] [--keep]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "app")]  # benchmarks/, and this checkout's relay

import pygit2  # noqa: E402

from benchmarks.knowledge_scan import baseline, generate  # noqa: E402
from benchmarks.machine import busy, cpu_name  # noqa: E402
from relay.knowledge import scanner  # noqa: E402
from relay.knowledge.langs import Outline, language_of, outline  # noqa: E402
from relay.knowledge.store import open_store  # noqa: E402
from relay.sessions.worktree import repo_root  # noqa: E402

TARGET = 1.0  # tree-sitter's outline-only files/s over the hand-written scanner's
Outliner = Callable[[str, str, str], Outline]
QUIET = False


def log(msg: str) -> None:
    if not QUIET:
        print(f"[knowledge_scan] {msg}", file=sys.stderr, flush=True)


def handwritten(lang: str, text: str, path: str = "") -> Outline:
    return baseline.outline(lang, text)


CONTENDERS: dict[str, Outliner] = {"hand-written": handwritten, "tree-sitter": outline}


# ---- the data set --------------------------------------------------------------------------

def dataset(files: int, seed: int, data_dir: Path) -> Path:
    folder = data_dir / f"s{seed}-{files}"
    manifest = folder / generate.MANIFEST
    if manifest.exists() and json.loads(manifest.read_text()).get(
            "generator") == generate.GENERATOR_VERSION:
        log(f"reusing {folder}")
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    log(f"generating {files} files (seed {seed}) in {folder}")
    started = time.perf_counter()
    stats = generate.generate(folder, files, seed)
    log(f"  {stats.bytes / generate.MIB:,.1f} MiB in {time.perf_counter() - started:.1f} s")
    return folder


def sources(root: Path) -> list[tuple[str, str, str]]:
    """``(path, lang, text)`` of the source files git tracks (what a scan of a generated
    repository reads; of a checkout, about what it reads)."""
    out = []
    for entry in pygit2.Repository(str(root)).index:
        path, lang = entry.path, language_of(entry.path)
        target = root / path
        if lang is None or scanner.sensitive(path) or \
                scanner.SKIP_DIRS.intersection(Path(path).parts[:-1]) or not target.is_file() \
                or target.is_symlink() or target.stat().st_size > scanner.MAX_FILE_BYTES:
            continue
        data = target.read_bytes()
        if b"\0" not in data[:scanner.BINARY_PROBE]:
            out.append((path, lang, data.decode("utf-8", errors="replace")))
    return out


# ---- the measurements ----------------------------------------------------------------------

@contextmanager
def scanning_with(fn: Outliner) -> Iterator[None]:
    """``scan_repo`` with ``fn`` as its outliner (the scanner's code is otherwise the same)."""
    names = vars(scanner)  # the scanner calls the ``outline`` it imported
    saved = names["outline"]
    names["outline"] = fn
    try:
        yield
    finally:
        names["outline"] = saved


@dataclass
class Found:
    files: int = 0
    symbols: int = 0
    imports: int = 0
    damaged: int = 0
    index_bytes: int = 0


def full_scan(root: Path, fn: Outliner, work: Path) -> tuple[float, float, int, int]:
    """Wall and CPU seconds, files and bytes (the index file with its WAL) of a scan into a
    new index."""
    db = work / f"k-{time.monotonic_ns()}.sqlite"
    store = open_store(db)
    try:
        with scanning_with(fn):
            started, cpu = time.perf_counter(), time.process_time()
            report = scanner.scan_repo(store, root)
            took, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        store.close()
    size = 0
    for suffix in ("", "-wal", "-shm"):
        part = Path(str(db) + suffix)
        size += part.stat().st_size if part.exists() and suffix != "-shm" else 0
        part.unlink(missing_ok=True)
    return took, cpu, report.scanned, size


def outline_only(files: list[tuple[str, str, str]], fn: Outliner) -> tuple[float, float, Found]:
    """Wall and CPU seconds, and what was found."""
    found = Found(files=len(files))
    started, cpu = time.perf_counter(), time.process_time()
    for path, lang, text in files:
        shape = fn(lang, text, path)
        found.symbols += len(shape.symbols)
        found.imports += len(shape.imports)
        found.damaged += shape.damaged
    return time.perf_counter() - started, time.process_time() - cpu, found


def measure(root: Path, files: list[tuple[str, str, str]], runs: int, load: int,
            work: Path) -> tuple[dict[str, list[float]], dict[str, Found], list[float]]:
    """Per ``"<contender> <what>"``: seconds per round; what each outliner found; the load
    average (1 min) at the end."""
    times: dict[str, list[float]] = {}
    found: dict[str, Found] = {}
    loads = []
    with busy(load):
        for round_ in range(runs):
            for name, fn in CONTENDERS.items():
                took, cpu, scanned, size = full_scan(root, fn, work)
                times.setdefault(f"{name} full", []).append(took)
                times.setdefault(f"{name} full cpu", []).append(cpu)
                took, cpu, seen = outline_only(files, fn)
                times.setdefault(f"{name} outline", []).append(took)
                times.setdefault(f"{name} outline cpu", []).append(cpu)
                seen.index_bytes = size
                found[name] = seen
                log(f"{'loaded' if load else 'idle'} round {round_ + 1}: {name} full scan of "
                    f"{scanned} files {times[f'{name} full'][-1]:.2f} s, outline only {took:.2f} s")
            loads.append(os.getloadavg()[0])
    return times, found, loads


def fmt(values: list[float]) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.2f} s"
    return f"{med:.2f} s ({min(values):.2f}–{max(values):.2f})"



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=4000, help="files in the generated repository")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3, help="rounds (median shown)")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2,
                        help="busy processes for the loaded pass (0: idle only)")
    parser.add_argument("--repo", type=Path, help="scan this checkout instead of a generated one")
    parser.add_argument("--keep", action="store_true", help="keep the generated repository")
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "bench-data" / "knowledge_scan")
    parser.add_argument("--smoke", action="store_true", help="60 files, one round, one busy process")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args()
    global QUIET
    QUIET = args.quiet
    if args.smoke:
        args.files, args.runs, args.load = 60, 1, min(args.load, 1)

    generated = args.repo is None
    work = Path(tempfile.mkdtemp(prefix="knowledge-scan-"))
    data_dir = work if args.smoke else args.data_dir
    root = repo_root(args.repo) if args.repo else dataset(args.files, args.seed, data_dir)
    try:
        files = sources(root)
        nbytes = sum(len(t.encode("utf-8", errors="replace")) for _, _, t in files)
        by_lang: dict[str, int] = {}
        for _, lang, _ in files:
            by_lang[lang] = by_lang.get(lang, 0) + 1
        for fn in CONTENDERS.values():  # warm-up: imports, grammars
            outline_only(files[:50], fn)
        load_before = os.getloadavg()[0]
        idle, found, idle_loads = measure(root, files, args.runs, 0, work)
        loaded, _, loaded_loads = measure(root, files, args.runs, args.load, work) if args.load \
            else ({}, {}, [])
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if generated and not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    n = len(files)
    print(f"machine: {os.cpu_count()} cores ({cpu_name()}); Python {platform.python_version()}, "
          f"tree-sitter {version('tree-sitter')}; load average {load_before:.1f} before, "
          f"{idle_loads[-1]:.1f} after idle"
          + (f", {loaded_loads[-1]:.1f} after loaded" if loaded_loads else ""))
    source_name = f"generated, seed {args.seed}" if generated else str(root)
    langs = ", ".join(f"{lang} {count:,}" for lang, count in sorted(by_lang.items(), key=lambda i: -i[1]))
    print(f"data: {n:,} files, {nbytes / generate.MIB:,.1f} MiB ({source_name}; {langs}); page "
          f"cache warm; {args.runs} round(s), the contenders taking turns (median, and range)")
    loaded_label = f"loaded ({args.load} busy)"
    print(f"{'wall time (CPU time)':28}{'idle':>24}{'files/s':>9}{'CPU s':>8}"
          + (f"{loaded_label:>26}{'files/s':>9}{'CPU s':>8}" if loaded else ""))
    for name in CONTENDERS:
        for what, label in (("full", "full scan"), ("outline", "outline only")):
            key = f"{name} {what}"
            row = (f"{name + ', ' + label:28}{fmt(idle[key]):>24}{n / statistics.median(idle[key]):>9,.0f}"
                   f"{statistics.median(idle[key + ' cpu']):>8.1f}")
            if loaded:
                row += (f"{fmt(loaded[key]):>26}{n / statistics.median(loaded[key]):>9,.0f}"
                        f"{statistics.median(loaded[key + ' cpu']):>8.1f}")
            print(row)
    for name, seen in found.items():
        print(f"{name} found: {seen.symbols:,} symbols, {seen.imports:,} imports, "
              f"{seen.damaged} file(s) marked damaged; knowledge.sqlite "
              f"{seen.index_bytes / generate.MIB:,.0f} MiB")
    ts, hw = found["tree-sitter"], found["hand-written"]
    print(f"tree-sitter stores {ts.symbols / max(hw.symbols, 1):.2f}× the symbols (members of types), "
          "each a node, an edge and a chunk: its full scan does that much more writing")
    verdicts = [("idle", idle)] + ([(loaded_label, loaded)] if loaded else [])
    for label, times in verdicts:
        new_full, old_full = (statistics.median(times[f"{c} full"]) for c in ("tree-sitter", "hand-written"))
        new_out, old_out = (statistics.median(times[f"{c} outline"]) for c in ("tree-sitter", "hand-written"))
        cpu_full, cpu_out = (statistics.median(times[f"hand-written {w} cpu"])
                             / statistics.median(times[f"tree-sitter {w} cpu"]) for w in ("full", "outline"))
        ratio = old_out / new_out
        print(f"{label}: full scan tree-sitter {new_full:.2f} s ({n / new_full:,.0f} files/s) vs "
              f"hand-written {old_full:.2f} s ({n / old_full:,.0f} files/s), {old_full / new_full:.2f}× "
              f"(CPU {cpu_full:.2f}×); outline only {n / new_out:,.0f} vs {n / old_out:,.0f} files/s, "
              f"{ratio:.2f}× (CPU {cpu_out:.2f}×) (target ≥ {TARGET:.1f}×: "
              f"{'met' if ratio >= TARGET else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
