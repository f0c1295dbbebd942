#!/usr/bin/env python3
"""A fake agent for the benchmark: writes a prepared stream-json file to stdout as fast as it can."""

import os
import sys

with open(os.environ["RELAY_BENCH_LINES"], "rb") as fh:
    sys.stdout.buffer.write(fh.read())
sys.stdout.buffer.flush()
