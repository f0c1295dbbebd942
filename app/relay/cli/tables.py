"""The one table every relay-cli command prints: it fits the terminal and never cuts a figure.

A :class:`FitTable` is laid out when it is printed, for the width it gets. Its columns are of
two kinds:

* **figures** (``Column(..., figure=True)``: counts, amounts, prices, dates, ids, states) are
  always as wide as their widest value, so every value is shown whole on one line; only a
  figure's header may wrap (between words);
* **text** columns (tasks, paths, descriptions) take what is left: they wrap (``wrap=True``,
  the default) or end in an ellipsis (``wrap=False``) when the terminal is narrow.

When the figures and a few characters of each text column do not fit in the usual boxed
style, the table is drawn with less chrome (no frame, then no padding); and when even that is
too wide (a matrix of many figure columns, like ``doctor``'s capabilities), the columns are
shown as several tables one under the other, each repeating the first column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.box import HEAVY_HEAD, SIMPLE_HEAD, Box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

Justify = Literal["left", "right", "center"]

#: a text column is not squeezed below this many characters while less chrome can help
COMFORTABLE_TEXT = 20
#: … nor below this in any single table (then the columns are split into several tables)
LEAST_TEXT = 4
#: a wrapping text column's words up to this long are not broken unless nothing else fits
WHOLE_WORD = 40


@dataclass(frozen=True)
class Column:
    """One column: its header, whether it holds figures, how its text shrinks."""

    header: str
    #: a number, amount, date, id or state: never shortened or broken
    figure: bool = False
    #: text only: wrap when narrow (else one line ending in "…")
    wrap: bool = True
    justify: Justify = "left"
    #: text only: never wider than this, even on a wide terminal
    max_width: int | None = None


@dataclass(frozen=True)
class _Chrome:
    box: Box
    show_edge: bool
    pad: int

    def overhead(self, columns: int) -> int:
        """Characters a table of ``columns`` columns spends on borders and padding."""
        dividers = (columns - 1) + (2 if self.show_edge else 0)
        padding = 2 * self.pad * columns - (0 if self.show_edge else 2 * self.pad)
        return dividers + padding


#: from roomy to tight: the first that fits is used
_CHROMES = (_Chrome(HEAVY_HEAD, True, 1), _Chrome(SIMPLE_HEAD, False, 1),
            _Chrome(SIMPLE_HEAD, False, 0))
#: the text columns' floors, tried in this order (each with every chrome)
_FLOORS = (COMFORTABLE_TEXT, 12, 8, LEAST_TEXT)


def _lines(text: Text) -> list[str]:
    return text.plain.splitlines() or [""]


def _widest(texts: Iterable[Text]) -> int:
    return max((cell_len(line) for t in texts for line in _lines(t)), default=0)


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


class _Measured:
    """A column with the widths its cells need."""

    def __init__(self, column: Column, cells: list[Text]) -> None:
        self.column = column
        self.cells = cells
        values = _widest(cells)
        header = cell_len(column.header)
        #: the longest word of a wrapping text column (up to WHOLE_WORD): kept whole when the
        #: other layouts allow
        self.word = 0
        if column.figure:
            #: every value on one line; the header may wrap between its words
            self.least = max(values, _longest_word(column.header), 1)
            self.natural = max(values, header, 1)
        else:
            natural = max(values, header, 1)
            self.natural = min(natural, column.max_width) if column.max_width else natural
            self.least = self.natural
            if column.wrap:
                words = max((_longest_word(line) for t in cells for line in _lines(t)), default=0)
                self.word = min(words, WHOLE_WORD)

    def floor(self, text_floor: int) -> int:
        """The narrowest this column may be when text columns keep ``text_floor`` characters
        (and, above the least floor, their words whole)."""
        if self.column.figure:
            return self.least
        keep = text_floor if text_floor <= LEAST_TEXT else max(text_floor, self.word)
        return min(self.natural, keep)


def _fits(chrome: _Chrome, columns: Sequence[_Measured], width: int, text_floor: int) -> bool:
    return chrome.overhead(len(columns)) + sum(c.floor(text_floor) for c in columns) <= width


def _widths(chrome: _Chrome, columns: Sequence[_Measured], width: int,
            text_floor: int) -> list[int]:
    """Each column's width: the floors; then, from what is left, the figures whose header
    can then be on one line (the shortest wants first); the rest to the text columns (up to
    their natural width, shared evenly, the narrow ones served first)."""
    widths = [c.floor(text_floor) for c in columns]
    spare = width - chrome.overhead(len(columns)) - sum(widths)
    headers = sorted((i for i, c in enumerate(columns) if c.column.figure),
                     key=lambda i: columns[i].natural - widths[i])
    for i in headers:
        want = columns[i].natural - widths[i]
        if want <= spare:
            widths[i] += want
            spare -= want
    texts = sorted((i for i, c in enumerate(columns) if not c.column.figure),
                   key=lambda i: columns[i].natural - widths[i])
    for n, i in enumerate(texts):
        extra = min(columns[i].natural - widths[i], max(spare // (len(texts) - n), 0))
        widths[i] += extra
        spare -= extra
    return widths


def _layout(fits: Callable[[_Chrome, int], bool]) -> tuple[_Chrome, int] | None:
    """The roomiest chrome and text floor that ``fits`` accepts (a comfortable floor first)."""
    for floor in _FLOORS:
        for chrome in _CHROMES:
            if fits(chrome, floor):
                return chrome, floor
    return None


class FitTable:
    """A table that fits the width it is printed at without cutting any figure.

    Cells are console markup (escape what comes from users) or :class:`~rich.text.Text`.
    """

    def __init__(self, *columns: Column | str, title: str | None = None) -> None:
        self.columns = [c if isinstance(c, Column) else Column(c) for c in columns]
        self.title = title
        self.rows: list[list[Text]] = []

    def add_row(self, *cells: str | Text) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([c if isinstance(c, Text) else Text.from_markup(c) for c in cells])

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def _measured(self) -> list[_Measured]:
        return [_Measured(col, [row[i] for row in self.rows]) for i, col in enumerate(self.columns)]

    def tables(self, width: int) -> list[Table]:
        """The rich table(s) that show this one in ``width`` characters."""
        measured = self._measured()
        whole = _layout(lambda chrome, floor: _fits(chrome, measured, width, floor))
        if whole is not None:
            return [self._table(*whole, measured, list(range(len(measured))), width)]
        return [self._table(chrome, floor, measured, group, width)
                for chrome, floor, group in self._split(measured, width)]

    def _split(self, measured: list[_Measured],
               width: int) -> Iterator[tuple[_Chrome, int, list[int]]]:
        """Groups of columns, each with the first, that fit ``width`` one under the other."""
        rest = list(range(1, len(measured)))
        chrome, text_floor = _layout(lambda chrome, floor: all(
            _fits(chrome, [measured[0], measured[i]], width, floor) for i in rest)) or (
            _CHROMES[-1], LEAST_TEXT)
        groups: list[list[int]] = []
        for i in rest:
            if groups and _fits(chrome, [measured[j] for j in [0, *groups[-1], i]], width,
                                text_floor):
                groups[-1].append(i)
            else:
                groups.append([i])
        for group in groups:
            yield chrome, text_floor, [0, *group]

    def _table(self, chrome: _Chrome, text_floor: int, measured: list[_Measured],
               group: list[int], width: int) -> Table:
        shown = [measured[i] for i in group]
        first = len(group) < 2 or group[1] == 1
        table = Table(title=self.title if first else None, box=chrome.box,
                      show_edge=chrome.show_edge, pad_edge=chrome.show_edge,
                      padding=(0, chrome.pad), show_lines=False)
        for column, size in zip(shown, _widths(chrome, shown, width, text_floor), strict=True):
            spec = column.column
            one_line = not spec.figure and not spec.wrap
            table.add_column(Text(spec.header, no_wrap=False, overflow="fold"), width=size,
                             justify=spec.justify, no_wrap=one_line,
                             overflow="ellipsis" if one_line else "fold")
        for row in self.rows:
            table.add_row(*(row[i] for i in group))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.tables(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        measured = self._measured()
        chrome = _CHROMES[0]
        natural = chrome.overhead(len(measured)) + sum(c.natural for c in measured)
        least = _CHROMES[-1].overhead(len(measured)) + sum(c.floor(LEAST_TEXT) for c in measured)
        return Measurement(min(least, natural), natural).with_maximum(options.max_width)
