"""``relay-cli serve`` with an event-loop lag probe beside it (benchmarks/host only).

Run as ``python benchmarks/host/probed_serve.py OUT.json serve --port 0 …``: the ordinary
``relay-cli`` entry point, whose event loop also runs one probe task that asks to wake every
``PERIOD_S`` and records how late it woke (``time.monotonic()``, lag in seconds). When the
host stops (SIGTERM) the samples are written to OUT.json. The probe lives here, not in the
product: nothing in app/ knows about it.

``time.monotonic()`` is one clock for every process on the machine (Linux's
CLOCK_MONOTONIC), so the benchmark keeps only the samples taken while the agent ran.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

PERIOD_S = 0.005


async def probe(samples: list[tuple[float, float]]) -> None:
    while True:
        asked = time.monotonic()
        await asyncio.sleep(PERIOD_S)
        woke = time.monotonic()
        samples.append((woke, woke - asked - PERIOD_S))


def main() -> int:
    out, argv = Path(sys.argv[1]), sys.argv[2:]
    from relay.cli import main as cli

    run = cli._run
    samples: list[tuple[float, float]] = []

    async def probed(*args):  # type: ignore[no-untyped-def]
        task = asyncio.create_task(probe(samples))
        try:
            return await run(*args)
        finally:
            task.cancel()
            out.write_text(json.dumps(samples))

    cli._run = probed
    sys.argv = [sys.argv[0], *argv]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
