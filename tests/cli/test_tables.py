"""Every table relay-cli prints keeps each figure whole at 80, 100 and 200 columns (issue 16).

Each table is rendered by a rich Console of that width, as the commands print it; every
figure the data holds (a count, a cost, a price, a date, an id, a state) must appear whole,
on one line, in what was printed. Text columns are what shrink.
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from relay.cli import budget_cmd, doctor_cmd
from relay.cli.sessions_cmd import sessions_table
from relay.cli.tables import Column, FitTable
from relay.core.capabilities import RUNTIME_NAMES, Cap, Capabilities
from relay.core.config import load_config
from relay.core.store.sessions_quick import QuickRow, QuickUsage
from relay.wallet.pricing import Pricing

WIDTHS = (80, 100, 200)


def render(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(renderable)
    out = console.export_text()
    assert all(len(line) <= width for line in out.splitlines()), out
    return out


def assert_whole(out: str, figures: list[str]) -> None:
    missing = [f for f in figures if not any(f in line for line in out.splitlines())]
    assert not missing, f"cut or wrapped: {missing}\n{out}"


def session(n: int, state: str = "completed", runtime: str = "claude:work",
            tokens: tuple[int | None, int | None] = (123_456, 7_890), cost: float | None = 1.2345,
            task: str = "Refactor the wallet's forecast so that it explains each figure") -> QuickRow:
    return QuickRow(id=f"{n:012x}", state=state, runtime=runtime, simulated=runtime == "demo",
                    task=task, updated_at=datetime(2026, 11, 30, 23, n % 60, tzinfo=UTC),
                    refused_calls=0, usage=QuickUsage(tokens[0], tokens[1], None, None, None,
                                                      cost))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sessions_table_keeps_ids_states_tokens_costs_and_dates(width: int) -> None:
    rows = [session(1), session(2, "interrupted", "demo", (None, None), None, "x" * 90),
            session(3, "needs_input", "codex", (9_999_999, 1_234_567), 123.4567)]

    out = render(sessions_table(rows), width)

    assert_whole(out, [r.id for r in rows] + ["completed", "interrupted", "needs_input"]
                 + ["123456/7890", "9999999/1234567", "$1.2345", "$123.4567"]
                 + [f"{r.updated_at:%Y-%m-%d %H:%M}" for r in rows])
    assert "Refac" in out  # the task shrinks, but is there


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_price_table_keeps_every_price_whole(width: int, relay_home: Path) -> None:
    config = load_config()
    console = Console(width=width, record=True, color_system=None)

    await budget_cmd.prices(config, argparse.Namespace(json=False), console)

    out = console.export_text()
    models = Pricing.load(config).models()
    assert models
    figures = {f"{getattr(p, field):g}" for p in models
               for field in ("input", "output", "cache_read", "cache_write")}
    # a model's line ends with its date and origin (a wrapped note may end in "shipped" too)
    lines = [line for line in out.splitlines()
             if re.search(r"\d{4}-\d\d-\d\d[ │]+shipped[ │]*$", line)]
    assert len(lines) == len(models), out  # one line per model: nothing wraps a price away
    for p in models:  # a line with the model's four prices and its date, each whole
        wanted = {f"{p.input:g}", f"{p.output:g}", f"{p.cache_read:g}", f"{p.cache_write:g}",
                  p.as_of}
        assert any(wanted <= set(line.replace("│", " ").split()) for line in lines), p
    assert_whole(out, sorted(figures))


def matrix(out: str) -> dict[tuple[str, str], str]:
    """(capability, runtime) → the level printed, read back from every table of the output."""
    caps = {cap.value for cap in Cap}
    lines, cells = out.splitlines(), {}
    for i, header in enumerate(lines):
        if not re.search(r"\bcapability\b", header):
            continue
        starts = [(m.group(), m.start()) for m in re.finditer(r"[\w-]+", header)][1:]
        for row in lines[i + 1:]:
            first = re.match(r"[\s│┃]*([\w-]+)", row)
            if first is None or first.group(1) not in caps:
                if first is not None and not set(row.strip()) <= set("━┡╇┩─ "):
                    break
                continue
            for name, start in starts:
                cells[(first.group(1), name)] = row[start:].split()[0]
    return cells


@pytest.mark.parametrize("width", WIDTHS)
def test_the_capability_matrix_keeps_every_runtime_and_level(width: int) -> None:
    runtimes = list(RUNTIME_NAMES)

    out = render(doctor_cmd.capability_table(runtimes), width)

    assert "…" not in out
    expected = {(cap.value, name): Capabilities.for_runtime(name).level(cap).value
                for cap in Cap for name in runtimes}
    assert matrix(out) == expected, out


@pytest.mark.parametrize("width", WIDTHS)
def test_doctor_keeps_runtimes_states_and_versions(width: int, relay_home: Path,
                                                   vault_env: None) -> None:
    console = Console(width=width, record=True, color_system=None)

    assert doctor_cmd.doctor(load_config(), console) == 0

    out = console.export_text()
    assert_whole(out, ["claude-acp", "openai-chat", "scripted demo", "HTTP API", "missing",
                       "permission_policy", "choose_session_id"])
    assert all(len(line) <= width for line in out.splitlines())


@pytest.mark.parametrize("width", WIDTHS)
def test_figure_columns_never_shrink_text_columns_do(width: int) -> None:
    table = FitTable(Column("run", figure=True), "description",
                     *(Column(f"figure {n}", figure=True, justify="right") for n in range(6)),
                     Column("note", wrap=False), title="many figures")
    figures = []
    for n in range(4):
        values = [f"{(n + 1) * 10 ** k:,}" for k in range(6)]
        figures += values
        table.add_row(f"run-{n:04d}", "words " * 30, *values, "a note that is long " * 3)

    out = render(table, width)

    assert_whole(out, figures + [f"run-{n:04d}" for n in range(4)])


@pytest.mark.parametrize("width", WIDTHS)
def test_a_matrix_too_wide_for_the_terminal_is_split_repeating_its_first_column(
        width: int) -> None:
    names = [f"column-{n:02d}" for n in range(20)]
    table = FitTable(Column("key", figure=True), *(Column(n, figure=True) for n in names))
    table.add_row("first", *(f"{n * 1.5:.2f}" for n in range(20)))

    out = render(table, width)

    assert_whole(out, names + [f"{n * 1.5:.2f}" for n in range(20)])
    assert out.count("first") == len(table.tables(width)) > (1 if width < 200 else 0)


def test_markup_and_text_cells_measure_as_printed() -> None:
    table = FitTable(Column("state", figure=True), "why")
    table.add_row("[green]completed[/]", Text("a plain [bracket] text"))

    out = render(table, 80)

    assert "completed" in out
    assert "[green]" not in out
    assert "a plain [bracket] text" in out


def test_a_row_must_have_a_cell_per_column() -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        FitTable("a", "b", "c").add_row("1", "2")
