"""benchmarks/diff_view: time to open a 10,000-line diff in the diff view, against 1 s.

A real git repository (pygit2) gets a commit that rewrites every other line of
ten Python files, so its diff is about ``--lines`` rows long when shown unified
(hunk headers, deletions, additions, context). Each run computes the diff with
pygit2 (``Repository.diff`` + ``from_pygit2``: what the History dock's backend
does), hands it to a shown :class:`~relay.gui.docks.diff_view.DiffView` (offscreen
unless DISPLAY is set) and processes Qt events until the rows in sight have been
painted. "Open" is the sum: git diff + layout + first paint. Target: open < 1 s,
in unified and in side-by-side mode. The medians of ``--runs`` runs are printed,
with the number of rows painted (a screenful, whatever the diff's size).

Run: ``python benchmarks/diff_view/bench_diff_view.py [--lines 10000] [--runs 5]``;
``--smoke`` runs once on 3,000 lines (``./dev test``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make tests/ and benchmarks/ importable
if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402
from tests.gui.diff_helpers import diff_of, long_repo  # noqa: E402

from relay.gui.diff_rows import Mode  # noqa: E402
from relay.gui.docks.diff_view import DiffView  # noqa: E402

TARGET_S = 1.0


def open_once(app: QApplication, view: DiffView, repo: Path, old: str, new: str,
              mode: Mode) -> tuple[float, float, int, int]:
    """(git diff seconds, layout + first paint seconds, rows, rows painted)."""
    view.set_files([])
    view.set_mode(mode)
    app.processEvents()
    delegate = view.table.delegate
    delegate.painted = 0
    delegate.tokens.clear()
    start = time.perf_counter()
    files = diff_of(repo, old, new)
    parsed = time.perf_counter()
    view.set_files(files)
    deadline = parsed + 30
    while delegate.painted == 0 and time.perf_counter() < deadline:
        app.processEvents()
    painted = time.perf_counter()
    if delegate.painted == 0:
        raise SystemExit("the diff view never painted")
    return parsed - start, painted - parsed, view.rows.rowCount(), delegate.painted


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one run on 3,000 lines")
    args = parser.parse_args()
    lines, runs = (3_000, 1) if args.smoke else (args.lines, args.runs)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    print(f"platform: {app.platformName()}")
    view = DiffView()
    view.resize(1280, 800)
    view.show()
    app.processEvents()
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        repo, old, new = long_repo(Path(tmp) / "repo", lines=lines)
        for mode in ("unified", "split"):
            results = [open_once(app, view, repo, old, new, mode) for _ in range(runs)]
            git = statistics.median(r[0] for r in results) * 1000
            show = statistics.median(r[1] for r in results) * 1000
            total = statistics.median(r[0] + r[1] for r in results)
            rows, painted = results[-1][2], results[-1][3]
            ratio = total / TARGET_S
            verdict = "PASS" if total < TARGET_S else "MISS"
            verdicts.append(verdict)
            print(f"{mode:>7}: {rows:,} rows — git diff {git:.0f} ms, layout + first paint "
                  f"{show:.0f} ms ({painted} rows painted); open {total * 1000:.0f} ms = "
                  f"{ratio:.2f}× the {TARGET_S:.0f} s target → {verdict}")
    view.close()
    print(f"diff view ({lines:,} lines, median of {runs}): "
          f"{'PASS' if verdicts == ['PASS', 'PASS'] else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
