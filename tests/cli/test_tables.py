"""Every table relay-cli prints keeps each figure whole at 80, 100 and 200 columns (issue 16).

Each table is rendered by a rich Console of that width, as the commands print it; every
figure the data holds (a count, a cost, a price, a date, an id, a state) must appear whole,
on one line, in what was printed. Text columns are what shrink.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from relay.cli import budget_cmd
from relay.cli.tables import Column, FitTable
from relay.core.config import load_config
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
    lines = [line for line in out.splitlines() if re.search(r"\bshipped[ │]*$", line)]
    assert len(lines) == len(models), out  # one line per model: nothing wraps a price away
    for p in models:  # a line with the model's four prices and its date, each whole
        wanted = {f"{p.input:g}", f"{p.output:g}", f"{p.cache_read:g}", f"{p.cache_write:g}",
                  p.as_of}
        assert any(wanted <= set(line.replace("│", " ").split()) for line in lines), p
    assert_whole(out, sorted(figures))


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
