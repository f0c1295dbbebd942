"""benchmarks/stream: events/s through parse → persist → bus, against a json.loads floor.

A fake agent writes N recorded-style Claude stream-json lines (built from the
b_write_tool capture: assistant text, tool_use, tool_result, in a loop, then
the result line) as fast as it can. Relay runs it as a real session (real
subprocess, real parser, every event persisted in SQLite, published on the
bus). The baseline ("floor") is ``json.loads`` of the same lines in one
process. Target: Relay ≥ 30 % of the floor.

Run: ``python benchmarks/stream/bench_stream.py [--lines 100000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make tests/ and benchmarks/ importable

from tests.conftest import fixtures_root, make_repo  # noqa: E402
from tests.fakes.replay import fixtures_problem  # noqa: E402

from relay.core.config import load_config  # noqa: E402
from relay.core.models import SessionSpec  # noqa: E402
from relay.engine.engine import Engine  # noqa: E402

TARGET = 0.30


def build_lines(n: int) -> list[str]:
    """N lines shaped like the real CLI's output (ids varied so nothing is cached)."""
    capture = fixtures_root() / "claude" / "captures" / "b_write_tool" / "run1" / "stdout.ndjson"
    recorded = [json.loads(line) for line in capture.read_text().splitlines() if line.strip()]
    init, body, result = recorded[0], recorded[1:4], recorded[-1]
    lines = [json.dumps(init)]
    i = 0
    while len(lines) < n - 1:
        for template in body:
            obj = json.loads(json.dumps(template))
            obj["uuid"] = f"00000000-0000-4000-8000-{i:012d}"
            msg = obj["message"]
            if obj["type"] == "assistant":
                msg["id"] = f"msg_bench_{i // 3}"
                for block in msg["content"]:
                    if block["type"] == "tool_use":
                        block["id"] = f"toolu_bench_{i // 3}"
            else:
                msg["content"][0]["tool_use_id"] = f"toolu_bench_{i // 3}"
            lines.append(json.dumps(obj))
            i += 1
            if len(lines) >= n - 1:
                break
    lines.append(json.dumps(result))
    return lines


def floor_rate(lines: list[str]) -> float:
    start = time.perf_counter()
    for line in lines:
        json.loads(line)
    return len(lines) / (time.perf_counter() - start)


async def relay_rate(lines_file: Path, n: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RELAY_HOME"] = str(Path(tmp) / "home")
        os.environ["RELAY_CLAUDE_BIN"] = str(ROOT / "tests" / "fakes" / "bin" / "print-file")
        os.environ["RELAY_BENCH_LINES"] = str(lines_file)
        repo = make_repo(Path(tmp) / "repo")
        engine = await Engine.open(load_config())
        try:
            start = time.perf_counter()
            row = await engine.run_session(SessionSpec(repo=repo, task="bench", runtime="claude",
                                                       worktree=False))
            elapsed = time.perf_counter() - start
            stored = await engine.store.last_event_id()
        finally:
            await engine.close()
        if row.state != "completed":
            raise SystemExit(f"benchmark session ended {row.state}: {row.reason}")
    return n / elapsed, stored


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args()
    problem = fixtures_problem(fixtures_root())
    if problem:
        print(f"bench_stream: {problem}", file=sys.stderr)
        return 2
    lines = build_lines(args.lines)
    with tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False) as fh:
        fh.write("\n".join(lines) + "\n")
        lines_file = Path(fh.name)
    try:
        floor = floor_rate(lines)
        rate, stored = asyncio.run(relay_rate(lines_file, len(lines)))
    finally:
        lines_file.unlink()
    ratio = rate / floor
    print(f"lines: {len(lines):,}  events persisted: {stored:,}")
    print(f"floor  (json.loads, one process): {floor:,.0f} lines/s")
    print(f"relay  (subprocess → parse → SQLite → bus): {rate:,.0f} lines/s")
    print(f"ratio: {ratio:.1%} of floor (target ≥ {TARGET:.0%}) → {'PASS' if ratio >= TARGET else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
