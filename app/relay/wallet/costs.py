"""What Relay's work cost: per run, session, account (chain entry) and local day.

A run's cost is what its CLI reported (``runs.cost_usd``: Claude, Pi, the demo) — source
``recorded`` — else an estimate from its tokens and model at list prices (Codex reports
no cost) — source ``estimate`` — else unknown (no model, no price, no usage). A cost on a
run of a runtime whose provider reports none (the model APIs, Ollama: the capability
table's ``cost`` is no) was estimated by Relay at the run, and is an ``estimate`` too.
Totals add what is known and say what they left out; they are never silently short.

A run counts on the local day (and week) it started. :func:`price_usage` prices usage
read from transcripts the same way, for the wallet's views of work done outside Relay.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING

from relay.core.capabilities import Cap, Capabilities, Level
from relay.wallet.model import Figure, Source, Tokens
from relay.wallet.pricing import Pricing

if TYPE_CHECKING:  # the usage report prices with this module without loading the store
    from relay.core.store.db import Store
    from relay.core.store.sessions_repo import RunUsage

#: runtimes whose reported input tokens include the cached ones (OpenAI's convention)
INPUT_INCLUDES_CACHE_READ = frozenset({"codex"})

#: (entry, ts_ms, model, tokens, cost the CLI wrote or None) — one transcript usage entry
UsageRow = tuple[str, int, str | None, Tokens, float | None]


@dataclass(frozen=True, slots=True)
class RunCost:
    """One run's cost and what it is charged to."""

    run_id: str
    session_id: str
    entry: str
    started_ms: int
    cost: Figure


@dataclass
class CostSum:
    """Adds figures and remembers how sure the parts were."""

    value: float = 0.0
    recorded: int = 0
    estimated: int = 0
    unknown: int = 0
    observed_ms: int | None = None
    missing: set[str] = field(default_factory=set)

    def add(self, figure: Figure, count: int = 1) -> None:
        """Add a figure standing for ``count`` runs or calls (their summed cost)."""
        if figure.observed_ms is not None:
            self.observed_ms = max(self.observed_ms or 0, figure.observed_ms)
        if figure.value is None:
            self.unknown += count
            self.missing.add(figure.detail)
            return
        self.value += figure.value
        if figure.source == "recorded":
            self.recorded += count
        else:
            self.estimated += count

    @property
    def source(self) -> Source:
        if not self.recorded and not self.estimated:
            return "unknown" if self.unknown else "recorded"
        return "estimate" if self.estimated or self.unknown else "recorded"

    def figure(self, what: str = "run") -> Figure:
        """The total: ``Figure(0, "recorded")`` for nothing; None when nothing is known."""
        if self.unknown and not (self.recorded or self.estimated):
            return Figure(None, "unknown", self.observed_ms, self._unknown_text(what))
        parts = []
        if self.recorded:
            parts.append(f"{self.recorded} reported by the CLI")
        if self.estimated:
            parts.append(f"{self.estimated} estimated from list prices")
        if self.unknown:
            parts.append(self._unknown_text(what) + " — the total is a lower bound")
        detail = f"{_plural(self.count, what)}: " + ", ".join(parts) if parts else f"no {what}s"
        return Figure(round(self.value, 10), self.source, self.observed_ms, detail)

    @property
    def count(self) -> int:
        return self.recorded + self.estimated + self.unknown

    def _unknown_text(self, what: str) -> str:
        why = "; ".join(sorted(self.missing)[:3])
        return f"{_plural(self.unknown, what)} not priced ({why})"


class Costs:
    """Costs from the main database (the ``runs`` table), read-only."""

    def __init__(self, store: Store, pricing: Pricing, tz: tzinfo | None = None) -> None:
        self.store = store
        self.pricing = pricing
        #: the time zone days and weeks are counted in (None: the system's)
        self.tz = tz

    async def run(self, run_id: str) -> Figure:
        runs = self._costs(await self.store.sessions.run_usage(run_id=run_id))
        return runs[0].cost if runs else Figure(None, "unknown", detail=f"no run {run_id}")

    async def session(self, session_id: str) -> Figure:
        return _total(self._costs(await self.store.sessions.run_usage(session_id=session_id)))

    async def account(self, entry: str, start_ms: int | None = None,
                      end_ms: int | None = None) -> Figure:
        """An account's (chain entry's) runs, optionally those started in [start, end)."""
        return await self.between(start_ms, end_ms, entry)

    async def between(self, start_ms: int | None, end_ms: int | None,
                      entry: str | None = None) -> Figure:
        """Runs started in [start_ms, end_ms) (open ends: None), of one entry or all."""
        return _total(await self.runs_between(start_ms, end_ms, entry))

    async def day(self, day: date, entry: str | None = None) -> Figure:
        start, end = day_bounds(day, self.tz)
        return await self.between(start, end, entry)

    async def days(self, first: date, last: date, entry: str | None = None) -> dict[date, Figure]:
        """Cost per local day from ``first`` to ``last`` (inclusive); days without runs are 0."""
        start, _ = day_bounds(first, self.tz)
        _, end = day_bounds(last, self.tz)
        sums: dict[date, CostSum] = {first + timedelta(d): CostSum()
                                     for d in range((last - first).days + 1)}
        for run in await self.runs_between(start, end, entry):
            sums[local_day(run.started_ms, self.tz)].add(run.cost)
        return {d: s.figure() for d, s in sums.items()}

    async def by_account(self, start_ms: int | None = None,
                         end_ms: int | None = None) -> dict[str, Figure]:
        sums: dict[str, CostSum] = {}
        for run in await self.runs_between(start_ms, end_ms):
            sums.setdefault(run.entry, CostSum()).add(run.cost)
        return {entry: s.figure() for entry, s in sorted(sums.items())}

    async def runs_between(self, start_ms: int | None, end_ms: int | None,
                           entry: str | None = None) -> list[RunCost]:
        return self._costs(await self.store.sessions.run_usage(start_ms=start_ms, end_ms=end_ms,
                                                               entry=entry))

    def _costs(self, runs: Iterable[RunUsage]) -> list[RunCost]:
        return [RunCost(r.id, r.session_id, r.entry, r.started_ms, self.run_figure(r)) for r in runs]

    def run_figure(self, run: RunUsage) -> Figure:
        """A run's cost, from its recorded usage."""
        runtime, model, started, reported = run.runtime, run.model, run.started_ms, run.cost_usd
        counts = (run.input_tokens, run.output_tokens, run.cache_read_tokens,
                  run.cache_write_tokens, run.reasoning_tokens)
        if reported is not None and not _priced_by_relay(runtime):
            who = "the demo (simulated)" if runtime == "demo" else runtime
            return Figure(float(reported), "recorded", started, f"reported by {who}")
        if reported is not None:  # Relay's own estimate at the run (model APIs report none)
            return Figure(float(reported), "estimate", started,
                          f"estimated by Relay from {runtime}'s tokens at list prices")
        if all(c is None for c in counts):
            return Figure(None, "unknown", started, f"{runtime} reported no usage")
        figure = self.pricing.cost(run_tokens(runtime, counts), model)
        return Figure(figure.value, figure.source, started, figure.detail)


@functools.cache
def _priced_by_relay(runtime: str) -> bool:
    """A runtime whose provider reports no cost: any cost on its runs is Relay's estimate."""
    return Capabilities.for_runtime(runtime).level(Cap.COST) in (Level.NO, Level.PARTIAL)


def run_tokens(runtime: str, counts: Sequence[int | None]) -> Tokens:
    """The runs table's usage columns (input, output, cache read, cache write, reasoning)
    as disjoint :class:`Tokens` — Codex counts cached input inside input."""
    inp, out, read, write, reasoning = (int(c or 0) for c in counts)
    if runtime in INPUT_INCLUDES_CACHE_READ:
        inp = max(0, inp - read)
    return Tokens(inp, out, read, write, reasoning)


@dataclass
class UsageCosts:
    """Priced transcript usage: in total, per entry, per local day, per (entry, day)."""

    total: Figure
    by_entry: dict[str, Figure]
    by_day: dict[date, Figure]
    by_entry_day: dict[tuple[str, date], Figure]


def price_usage(pricing: Pricing, rows: Iterable[UsageRow], tz: tzinfo | None = None) -> UsageCosts:
    """Price transcript usage: the cost the CLI wrote (Pi) is taken as reported
    (``recorded``); otherwise the tokens are estimated at list prices."""
    total, entries = CostSum(), dict[str, CostSum]()
    days, entry_days = dict[date, CostSum](), dict[tuple[str, date], CostSum]()
    for entry, ts_ms, model, tokens, reported in rows:
        if reported is not None:
            figure = Figure(reported, "recorded", ts_ms, "reported by the CLI in its transcript")
        else:
            figure = pricing.cost(tokens, model)
            figure = Figure(figure.value, figure.source, ts_ms, figure.detail)
        day = local_day(ts_ms, tz)
        for acc in (total, entries.setdefault(entry, CostSum()), days.setdefault(day, CostSum()),
                    entry_days.setdefault((entry, day), CostSum())):
            acc.add(figure)
    return UsageCosts(total.figure("call"), {k: v.figure("call") for k, v in entries.items()},
                      {k: v.figure("call") for k, v in days.items()},
                      {k: v.figure("call") for k, v in entry_days.items()})


def _total(runs: Iterable[RunCost]) -> Figure:
    acc = CostSum()
    for run in runs:
        acc.add(run.cost)
    return acc.figure()


def _plural(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


# -- local days and weeks ----------------------------------------------------------------

def local_day(ms: int, tz: tzinfo | None = None) -> date:
    """The local date of an epoch-milliseconds time (``tz`` None: the system's zone)."""
    return datetime.fromtimestamp(ms / 1000, tz).date()


def day_bounds(day: date, tz: tzinfo | None = None) -> tuple[int, int]:
    """[start, end) of a local day in epoch milliseconds (23 or 25 hours across DST)."""
    return _midnight_ms(day, tz), _midnight_ms(day + timedelta(days=1), tz)


def week_bounds(day: date, tz: tzinfo | None = None) -> tuple[int, int]:
    """[start, end) of the calendar week (Monday to Sunday, local) holding ``day``."""
    monday = day - timedelta(days=day.weekday())
    return _midnight_ms(monday, tz), _midnight_ms(monday + timedelta(days=7), tz)


def _midnight_ms(day: date, tz: tzinfo | None) -> int:
    start = datetime.combine(day, time(), tz)
    if tz is None:
        start = start.astimezone()  # the system zone, DST included
    return int(start.timestamp() * 1000)
