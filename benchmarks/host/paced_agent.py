#!/usr/bin/env python3
"""benchmarks/host's fake agent: writes the file named by RELAY_BENCH_LINES to stdout, one
line at a time at RELAY_BENCH_RATE lines a second (unset or 0: all at once, as fast as it
can, like tests/fakes/bin/print-file).

Paced, it keeps to a schedule rather than sleeping a fixed gap per line: every wake-up it
writes (and flushes) the lines whose time has come, so a late wake-up is caught up and the
average rate is the one asked for.
"""

import os
import sys
import time

with open(os.environ["RELAY_BENCH_LINES"], "rb") as fh:
    lines = fh.read().splitlines(keepends=True)
rate = float(os.environ.get("RELAY_BENCH_RATE") or 0)
out = sys.stdout.buffer
if rate <= 0:
    out.writelines(lines)
else:
    start = time.perf_counter()
    done = 0
    while done < len(lines):
        due = min(len(lines), int((time.perf_counter() - start) * rate) + 1)
        if due > done:
            out.writelines(lines[done:due])
            out.flush()
            done = due
        else:
            time.sleep(0.0005)
out.flush()
