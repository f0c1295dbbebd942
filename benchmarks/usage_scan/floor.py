"""The floor of benchmarks/usage_scan: one pass of ``orjson.loads`` over every line, on N cores.

Each worker process reads its share of the files (shares balanced by size, largest file
first, as ccusage splits its work) and decodes every non-empty line with ``orjson.loads``,
counting the lines that do not decode. Nothing is kept: this is the cost of looking at every
byte once with the fastest JSON decoder Python has, the least a reader that parses each
line could spend.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass
from pathlib import Path

import orjson


@dataclass(frozen=True)
class FloorResult:
    seconds: float
    lines: int
    bad_lines: int
    bytes: int


def shares(files: list[Path], n: int) -> list[list[str]]:
    """``files`` split into ``n`` lists of about equal total size (largest first, greedy)."""
    sized = sorted(((f.stat().st_size, str(f)) for f in files), reverse=True)
    out: list[list[str]] = [[] for _ in range(n)]
    totals = [0] * n
    for size, name in sized:
        i = totals.index(min(totals))
        out[i].append(name)
        totals[i] += size
    return [s for s in out if s]


def decode_all(paths: list[str]) -> tuple[int, int, int]:
    """(lines, lines that did not decode, bytes) of one share: read, split, ``orjson.loads``."""
    loads = orjson.loads
    lines = bad = nbytes = 0
    for path in paths:
        with open(path, "rb") as fh:
            data = fh.read()
        nbytes += len(data)
        for line in data.split(b"\n"):
            if not line:
                continue
            lines += 1
            try:
                loads(line)
            except orjson.JSONDecodeError:
                bad += 1
    return lines, bad, nbytes


def floor_pass(files: list[Path], workers: int = 2) -> FloorResult:
    """Wall time of decoding every line of ``files`` in ``workers`` processes (start-up included)."""
    parts = shares(files, workers)
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    start = time.perf_counter()
    with ctx.Pool(len(parts)) as pool:
        results = pool.map(decode_all, parts, chunksize=1)
    seconds = time.perf_counter() - start
    return FloorResult(seconds, sum(r[0] for r in results), sum(r[1] for r in results),
                       sum(r[2] for r in results))
