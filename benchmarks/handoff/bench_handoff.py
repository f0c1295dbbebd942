"""benchmarks/handoff: from the limit signal to the next agent's first event, by state.

A real engine (real SQLite, real git worktree, real vault file, real subprocesses)
runs a session with the chain ``claude:work → codex``: the fake ``claude`` replays
the recorded subscriber usage limit, the fake ``codex`` the recorded text answer
(tests/fakes). Every committed record is timestamped as it reaches the bus. Each
interval is reported as median and worst over the rounds:

* ``limit → agent exit``: the limited agent finishing its output and exiting (agent);
* ``agent exit → pausing``: Relay ends the run, decides, journals the handoff;
* ``pausing → snapshotted``: the snapshot commit;
* ``snapshotted → envelope built``: the contract built, scrubbed, signed, written;
* ``envelope built → dispatched``: verified again, receiver prepared and started;
* ``dispatched → first event``: the receiver's start-up until Relay reads its first
  event and commits ``resuming`` (agent, excluded);
* ``first event → done``: confirming the handoff.

Timestamps are taken when a committed record reaches the bus, so each interval
includes the commit of its step.

Relay's own overhead is everything but the two agent intervals; the target (the
named baseline) is 2 s of it. The fakes are Python scripts, so their start-up is
that of an interpreter, which is why it is excluded.

Run: ``python benchmarks/handoff/bench_handoff.py [--rounds 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make tests/ importable

from tests.conftest import FAKES_DIR, make_repo  # noqa: E402

from relay.core.config import load_config  # noqa: E402
from relay.core.models import SessionSpec  # noqa: E402
from relay.engine.engine import Engine  # noqa: E402

TARGET_S = 2.0
AGENT = ("limit → agent exit", "dispatched → first event")
MARKS = ("limit", "agent exit", "pausing", "snapshotted", "envelope built", "dispatched",
         "first event", "done")
#: the journal's name for each mark (``resuming`` is committed on the receiver's first event)
STATES = {"envelope_built": "envelope built", "resuming": "first event"}


def environment(home: Path) -> None:
    os.environ["RELAY_HOME"] = str(home)
    os.environ["PATH"] = f"{FAKES_DIR / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    os.environ["RELAY_VAULT_PASSPHRASE"] = "benchmark-passphrase"
    os.environ["RELAY_FAKE_CLAUDE_SCENARIO"] = "f_usage_limit/run1_subscriber_five_hour"
    os.environ["RELAY_FAKE_CODEX_SCENARIO"] = "a_text"
    for name in ("RELAY_CLAUDE_BIN", "RELAY_CODEX_BIN"):
        os.environ.pop(name, None)


async def one_round(engine: Engine, repo: Path) -> dict[str, float]:
    marks: dict[str, float] = {}
    sub = engine.bus.subscribe()

    def mark(name: str) -> None:
        marks.setdefault(name, time.perf_counter())

    sid = await engine.start_session(SessionSpec(repo=repo, task="Add a greeting",
                                                 chain=["claude:work", "codex"]))
    async for record in sub:
        if record.session_id != sid:
            continue
        ev = record.event
        if ev.kind == "limit_hit":
            mark("limit")
        elif ev.kind == "session_ended" and "limit" in marks:
            mark("agent exit")
        elif ev.kind == "handoff_step":
            mark(STATES.get(ev.state, ev.state))
        if ev.kind == "state_changed" and ev.state in ("completed", "failed"):
            break
    sub.close()
    row = await engine.wait_session(sid)
    if row.state != "completed":
        raise SystemExit(f"the session ended {row.state}: {row.reason}")
    return {f"{a} → {b}": marks[b] - marks[a] for a, b in itertools.pairwise(MARKS)}


async def main_async(rounds: int) -> int:
    base = Path(tempfile.mkdtemp(prefix="relay-bench-handoff-"))
    environment(base / "home")
    engine = await Engine.open(load_config())
    samples: list[dict[str, float]] = []
    try:
        for n in range(rounds + 1):
            result = await one_round(engine, make_repo(base / f"repo{n}", {"README.md": "hi\n"}))
            if n:  # the first round warms the vault and the imports
                samples.append(result)
    finally:
        await engine.close()
    print(f"handoff: {rounds} rounds, claude:work (usage limit) → codex, fake CLIs")
    overheads = [sum(v for k, v in s.items() if k not in AGENT) for s in samples]
    for key in samples[0]:
        values = [s[key] for s in samples]
        tag = "  (agent, excluded)" if key in AGENT else ""
        print(f"  {key:<32} median {statistics.median(values) * 1000:7.1f} ms"
              f"   worst {max(values) * 1000:7.1f} ms{tag}")
    median = statistics.median(overheads)
    print(f"Relay overhead: median {median * 1000:.0f} ms, worst {max(overheads) * 1000:.0f} ms; "
          f"{median / TARGET_S:.2f}× the 2 s target ({'met' if max(overheads) < TARGET_S else 'MISSED'})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    return asyncio.run(main_async(parser.parse_args().rounds))


if __name__ == "__main__":
    sys.exit(main())
