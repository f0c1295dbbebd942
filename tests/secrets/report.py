"""Measure the corpus end to end and print the table as markdown (for docs/security.md).

``python -m tests.secrets.report [OUT.md]``: runs :func:`tests.secrets.measure.measure` in a
temporary folder (a few relay-cli sessions, about a minute) and prints the recall and false
positives per boundary, per format and per look-alike category; with a path, also writes it
there.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tests.secrets.measure import markdown, measure


def main(argv: list[str]) -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="relay-corpus-") as tmp:
        result = measure(Path(tmp))
    table = markdown(result)
    for failure in result.failures:
        print(f"warning: {failure}", file=sys.stderr)
    print(table, end="")
    print(f"\n(measured in {time.monotonic() - started:.0f} s)", file=sys.stderr)
    if argv:
        Path(argv[0]).write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
