"""The wallet facade: what the engine, the CLI and the window ask of the wallet.

``Wallet`` gathers, per account: the official readings (:mod:`relay.wallet.limits`), the
model calls counted by the transcript index (estimate) or by Relay's own sessions
(recorded), the forecast of each window (:mod:`relay.wallet.forecast`), costs and budgets.
It owns the transcript usage index (its own SQLite file, refreshed in a worker thread).

**Which calls count** (decision): an account's CLI writes transcripts for Relay's sessions
too, so the transcript index already holds them; adding Relay's own records on top would
count them twice. The transcripts are used when the index holds any call of the account in
the two weeks the forecast looks at, else Relay's records (the demo, API runtimes, an index
not scanned yet).

**A simulated account** (the demo's ``demo:primary``…) is make-believe and belongs to the run
that made it up: when the guard judges one for a session it counts only that session's
readings and turns (:meth:`Wallet.pressure` with ``session_id``), so a demo run at 97 % of
its simulated window never makes the next demo run avoid the account. The views
(``relay-cli wallet``, the Wallet dock) still show everything the demos reported.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from relay.core.accounts import Account, AccountBook, split_entry
from relay.core.config import Config
from relay.core.models import simulated_entry
from relay.core.store.db import Store, now_ms
from relay.core.store.writer import EventWriter
from relay.wallet.blocks import current_block
from relay.wallet.budgets import ALL, BudgetBook, BudgetGuard
from relay.wallet.costs import Costs, day_bounds, local_day, price_usage, week_bounds
from relay.wallet.forecast import WindowInputs, forecast, learned_limit, tokens_per_minute
from relay.wallet.history import COST_DAYS, burn_series, window_history
from relay.wallet.limits import LimitBook, window_length_ms
from relay.wallet.model import (
    SEVEN_DAYS_MS,
    AccountHistory,
    AccountView,
    DayCost,
    Figure,
    GuardVerdict,
    LimitSnapshot,
    Source,
    Tokens,
    UsageEntry,
    WindowHistory,
    WindowKind,
    WindowView,
)
from relay.wallet.pricing import Pricing
from relay.wallet.transcripts import TranscriptSource
from relay.wallet.usage_agg import AggRow
from relay.wallet.usage_index import RefreshReport, UsageIndex
from relay.wallet.usage_sources import counted_sources

Progress = Callable[[int, int], None]
Clock = Callable[[], int]

#: the windows every account shows, whether or not the provider has said anything yet
SHOWN_WINDOWS: tuple[WindowKind, ...] = ("five_hour", "seven_day")


class Wallet:
    """Accounts' usage, limits, forecasts and costs. One per engine."""

    def __init__(self, config: Config, store: Store, writer: EventWriter, accounts: AccountBook,
                 clock: Clock = now_ms, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.store = store
        self.accounts = accounts
        self.limits = LimitBook(store, writer)
        self.pricing = Pricing.load(config)
        self.costs = Costs(store, self.pricing)
        self.budgets = BudgetGuard(store, self.pricing, flush=writer.flush)
        #: the budgets users set (relay-cli budget, the wallet dock)
        self.budget_book = BudgetBook(store, writer)
        self.watermark = config.wallet_watermark
        self.clock = clock
        self._env = dict(os.environ if env is None else env)
        self._index: UsageIndex | None = None
        self._refreshing = asyncio.Lock()
        self._opening = asyncio.Lock()
        self.last_report: RefreshReport | None = None

    # -- the transcript index --------------------------------------------------------

    async def sources(self, entries: set[str] | None = None) -> list[TranscriptSource]:
        accounts = await self.accounts.all()
        found = counted_sources(accounts, self._env, self.config.wallet_default_folders)
        return [s for s in found if entries is None or s.entry in entries]

    async def refresh_index(self, progress: Progress | None = None) -> RefreshReport:
        """Read what the CLIs appended to their transcripts since the last refresh.

        Runs in a worker thread (``progress(done, total)`` is called from it); official
        readings found in the transcripts (Codex's rate limits) join ``limit_snapshots``.
        Every source is passed each time: the index forgets files outside the sources it
        is given, and an unchanged file costs one ``stat``.
        """
        sources = await self.sources()
        async with self._refreshing:
            index = await self._open_index()
            report = await asyncio.to_thread(index.refresh, sources, progress)
            readings = await asyncio.to_thread(_readings, index, {s.entry for s in sources})
        await self.limits.record(readings)
        self.last_report = report
        return report

    async def _open_index(self) -> UsageIndex:
        async with self._opening:  # two first callers must not both create the file
            if self._index is None:
                self._index = await asyncio.to_thread(UsageIndex, self.config.usage_index_path)
        return self._index

    async def close(self) -> None:
        if self._index is not None:
            await asyncio.to_thread(self._index.close)
            self._index = None

    # -- calls ------------------------------------------------------------------------

    async def calls(self, entry: str, since_ms: int) -> tuple[list[tuple[int, int]], Source]:
        """(ts, total tokens) of the account's model calls since ``since_ms``, and their source."""
        index = await self._open_index()
        found = await asyncio.to_thread(_index_calls, index, entry, since_ms)
        if found:
            return found, "estimate"
        return await self._recorded_calls(entry, since_ms), "recorded"

    async def _recorded_calls(self, entry: str, since_ms: int,
                              session_id: str | None = None) -> list[tuple[int, int]]:
        """Turns of Relay's own sessions (or of ``session_id`` only) on ``entry`` (their
        per-turn usage events)."""
        provider, label = split_entry(entry)
        # a bare provider's runs include those recorded before runs had entries
        return await self.store.sessions.turn_tokens(
            entry, since_ms, bare_runtime=None if label else provider, session_id=session_id)

    # -- views ------------------------------------------------------------------------

    async def entries(self) -> list[tuple[str, Account | None]]:
        """Every account to show: registered ones, then bare providers with activity."""
        accounts = await self.accounts.all()
        shown: dict[str, Account | None] = {a.entry: a for a in accounts}
        for source in await self.sources():
            shown.setdefault(source.entry, None)
        for entry in await self.store.sessions.entries():
            shown.setdefault(entry, None)
        return sorted(shown.items(), key=lambda kv: (kv[1] is None, kv[0]))

    async def summary(self) -> list[AccountView]:
        """One view per account, for the Wallet dock and ``relay-cli wallet``."""
        return [await self.view(entry, account) for entry, account in await self.entries()]

    async def view(self, entry: str, account: Account | None = None) -> AccountView:
        now = self.clock()
        provider, label = split_entry(entry)
        windows, burn, source = await self.windows(entry, now)
        breaker = await self._breaker(entry, now)
        today, week = await self._costs(entry, now, source)
        return AccountView(
            entry=entry, provider=provider, label=label,
            auth_kind=account.auth_kind if account else "cli_login",
            config_dir=str(account.config_dir) if account and account.config_dir else None,
            preferred=bool(account and account.preferred),
            paused=bool(account and account.paused), registered=account is not None,
            windows=windows, burn_tpm=burn, cost_today=today, cost_week=week,
            budgets=await self.budgets.states(entry), breaker_until_ms=breaker[0],
            breaker_reason=breaker[1],
            warnings=await self._warnings(entry))

    async def _costs(self, entry: str, now: int, source: Source) -> tuple[Figure, Figure]:
        """Cost today and this week: the transcripts priced, or Relay's runs (see the docstring)."""
        day = datetime.fromtimestamp(now / 1000, UTC).astimezone().date()  # the local day
        (d0, _), (w0, w1) = day_bounds(day), week_bounds(day)
        if source == "estimate":
            rows = [(e, u.ts_ms, u.model, u.tokens, u.cost_usd)
                    for e, _, u in await self.index_entries(entry, w0)]

            def price() -> tuple[Figure, Figure]:
                return (price_usage(self.pricing, (r for r in rows if r[1] >= d0)).total,
                        price_usage(self.pricing, rows).total)

            return await asyncio.to_thread(price)
        if not await self.costs.runs_between(w0, w1, entry):  # nothing seen: unknown, not $0
            nothing = Figure(None, "unknown", detail="no usage seen this week")
            return nothing, nothing
        return await self.costs.account(entry, d0, w1), await self.costs.account(entry, w0, w1)

    async def session_totals(self, sessions: list[tuple[str, str]]
                             ) -> dict[tuple[str, str], Tokens]:
        """Tokens per (account entry, agent session id), from the index."""
        index = await self._open_index()
        return await asyncio.to_thread(index.session_totals, sessions)

    async def _warnings(self, entry: str) -> int:
        index = await self._open_index()
        found = await asyncio.to_thread(index.warnings, entry)
        return sum(found.get(entry, {}).values())

    async def index_entries(self, entry: str | None,
                            since_ms: int | None) -> list[tuple[str, str, UsageEntry]]:
        """The transcript index's calls (of one account, or all) since ``since_ms``."""
        index = await self._open_index()
        return await asyncio.to_thread(lambda: list(index.entries(entry=entry, since_ms=since_ms)))

    async def usage_rows(self, entry: str | None, since_ms: int | None,
                         by: str | None = None) -> list[AggRow]:
        """The index's usage sums (of one account, or all) since ``since_ms``, per report
        row and model with ``by``: what ``relay-cli usage`` is made of
        (:mod:`relay.wallet.usage_agg`)."""
        index = await self._open_index()
        return await asyncio.to_thread(index.aggregate, entry, since_ms, by)

    async def windows(self, entry: str, now: int, session_id: str | None = None
                      ) -> tuple[list[WindowView], Figure, Source]:
        """The account's windows, its burn rate, and where its calls were counted — with
        ``session_id``, as that session alone saw them (a simulated account's).

        The forecast goes over two weeks of calls (tens of thousands on a busy account):
        it runs in a worker thread, never on the caller's (the window's) loop.
        """
        since = now - 2 * SEVEN_DAYS_MS
        history: list[LimitSnapshot]
        if session_id is None:
            history = await self.limits.history(entry, since)
            calls, source = await self.calls(entry, since)
        else:
            history = await self.limits.session_history(entry, session_id)
            calls, source = await self._recorded_calls(entry, since, session_id), "recorded"

        def compute() -> tuple[list[WindowView], Figure]:
            return ([self._window(kind, now, history, calls, source)
                     for kind in _windows_of(history)], _burn(calls, now, source))

        found, burn = await asyncio.to_thread(compute)
        return found, burn, source

    def _window(self, kind: WindowKind, now: int, history: list[LimitSnapshot],
                calls: list[tuple[int, int]], source: Source) -> WindowView:
        return forecast(_inputs(kind, now, history, calls, source))

    async def history(self, entry: str) -> AccountHistory:
        """The series of the Wallet's plots for one account: each window's course since its
        start, the burn of the last five hours, the cost of the last days and the day budget."""
        now = self.clock()
        since = now - 2 * SEVEN_DAYS_MS
        readings = await self.limits.history(entry, since)
        calls, source = await self.calls(entry, since)
        day = local_day(now)
        first = day - timedelta(days=COST_DAYS - 1)
        if source == "estimate":
            start, _ = day_bounds(first)
            rows = [(e, u.ts_ms, u.model, u.tokens, u.cost_usd)
                    for e, _, u in await self.index_entries(entry, start)]
            priced = (await asyncio.to_thread(price_usage, self.pricing, rows)).by_day
            per_day = {first + timedelta(d): priced.get(first + timedelta(d), Figure(0.0, source))
                       for d in range(COST_DAYS)}
        else:
            per_day = await self.costs.days(first, day, entry)
        budgets = {b.entry: b.limit_usd for b in await self.budget_book.all() if b.scope == "day"}
        scope = entry if entry in budgets else ALL if ALL in budgets else ""

        def compute() -> tuple[list[WindowHistory], list[tuple[int, float]]]:
            return ([window_history(_inputs(kind, now, readings, calls, source))
                     for kind in _windows_of(readings)], burn_series(calls, now))

        windows, burn = await asyncio.to_thread(compute)
        return AccountHistory(
            entry=entry, now_ms=now, windows=windows, burn=burn,
            days=[DayCost(d.isoformat(), f) for d, f in sorted(per_day.items())],
            day_budget_usd=budgets.get(scope), day_budget_scope=scope)

    async def _breaker(self, entry: str, now: int) -> tuple[int | None, str | None]:
        async with self.store.conn.execute(
                "SELECT until_ms, reason FROM breakers WHERE entry=?", (entry,)) as cur:
            row = await cur.fetchone()
        if row is None or (row[0] is not None and row[0] <= now):
            return None, None
        return row[0], row[1]

    # -- the guard --------------------------------------------------------------------

    async def pressure(self, entry: str, include_full: bool = True,
                       session_id: str | None = None) -> tuple[WindowView, str] | None:
        """The first window of ``entry`` past the watermark or running out soon, and why.

        ``include_full=False`` leaves out windows already at their wall: a running session
        meets that as a limit, which the runner's limit path answers. ``session_id``: judge
        the account by that session's own readings and turns only (a simulated account).
        """
        now = self.clock()
        windows, _burn_rate, _source = await self.windows(entry, now, session_id)
        least = _RANK[self.config.wallet_preempt_confidence]
        for w in windows:
            used = w.used.value
            if used is not None and used >= 1.0 and not include_full:
                continue
            # an official level only grows until the reset: an old one is still a floor
            trusted = w.used.source == "official" or _RANK[w.confidence] >= least
            if used is not None and used >= self.watermark and trusted:
                return w, (f"{entry}'s {_title(w.kind)} window is at {used:.0%} "
                           f"({_said(w.used, now)}); the watermark is {self.watermark:.0%}")
            horizon = self.config.wallet_horizon * 1000
            if (w.exhausts_at_ms is not None and w.exhausts_at_ms - now <= horizon
                    and _RANK[w.confidence] >= least):
                mins = max((w.exhausts_at_ms - now) / 60_000, 0)
                return w, (f"{entry}'s {_title(w.kind)} window runs out in about {mins:.0f} min "
                           f"at the current burn ({_said(w.used, now)}, {w.confidence} "
                           "confidence), before its reset")
        return None


_RANK = {"none": 0, "low": 1, "medium": 2, "high": 3}


def _inputs(kind: WindowKind, now: int, history: list[LimitSnapshot],
            calls: list[tuple[int, int]], source: Source) -> WindowInputs:
    """What the forecast (and the plot) of one window of an account is made from."""
    length = window_length_ms(kind) or SEVEN_DAYS_MS
    mine = [r for r in history if r.window == kind]
    rejections = [(r.observed_ms, r.resets_at_ms or 0) for r in mine if r.status == "rejected"]
    block = current_block(((ts, Tokens(input=n), None, None) for ts, n in calls), now) \
        if kind == "five_hour" else None
    return WindowInputs(
        kind=kind, now_ms=now, readings=mine,
        calls=[(ts, n) for ts, n in calls if ts >= now - length], calls_source=source,
        block_start_ms=block.start_ms if block else None,
        learned_limit=learned_limit(rejections, calls, length))


def _windows_of(history: list[LimitSnapshot]) -> list[WindowKind]:
    seen = [w for w in SHOWN_WINDOWS]
    for r in history:
        if r.window not in seen and r.window != "other":
            seen.append(r.window)
    return seen


def _burn(calls: list[tuple[int, int]], now: int, source: Source) -> Figure:
    tpm = tokens_per_minute(calls, now)
    return Figure(tpm, source if tpm is not None else "unknown", now, "tokens per minute")


def _title(kind: str) -> str:
    return {"five_hour": "five-hour", "seven_day": "seven-day"}.get(
        kind, kind.replace("_", " "))


def _said(figure: Figure, now: int) -> str:
    """"official · 2 min ago", "estimate" — where a figure comes from, and its age."""
    if figure.observed_ms is None or figure.source == "unknown":
        return figure.source
    age = max((now - figure.observed_ms) // 60_000, 0)
    return f"{figure.source}, {'just now' if age < 1 else f'{age} min ago'}"


def _readings(index: UsageIndex, entries: set[str]) -> list[LimitSnapshot]:
    out: list[LimitSnapshot] = []
    for entry in entries:
        out.extend(replace(r, entry=entry) for r in index.limit_snapshots(entry).values())
    return out


def _index_calls(index: UsageIndex, entry: str, since_ms: int) -> list[tuple[int, int]]:
    return sorted((e.ts_ms, e.tokens.total)
                  for _, _, e in index.entries(entry=entry, since_ms=since_ms))


class WalletGuard:
    """The runner's :class:`~relay.sessions.run_types.TurnGuard`: paused accounts, budgets,
    and the pre-emptive handoff when an account nears its limit."""

    def __init__(self, wallet: Wallet) -> None:
        self.wallet = wallet
        self._told: set[tuple[str, str, str]] = set()

    async def before_run(self, session_id: str, entry: str) -> GuardVerdict | None:
        account = await self.wallet.accounts.for_entry(entry)
        if account is not None and account.paused:
            return GuardVerdict("handoff", f"{entry} is paused in the wallet")
        spent = await self.wallet.budgets.before_run(session_id, entry)
        if spent is not None:
            return spent
        found = (await self.wallet.pressure(entry, session_id=_scope(session_id, entry))
                 if self.wallet.watermark < 1.0 else None)
        return GuardVerdict("avoid", found[1]) if found else None

    async def after_turn(self, session_id: str, run_id: str, entry: str) -> GuardVerdict | None:
        spent = await self.wallet.budgets.after_turn(session_id, run_id, entry)
        if spent is not None and spent.action == "stop":
            return spent
        return await self._forecast(session_id, entry) or spent

    async def _forecast(self, session_id: str, entry: str) -> GuardVerdict | None:
        spec = await self.wallet.store.sessions.spec(session_id)
        if spec.on_limit == "wait" or self.wallet.watermark >= 1.0:
            return None
        if split_entry(entry)[0] != "demo":
            await self.wallet.refresh_index()
        found = await self.wallet.pressure(entry, include_full=False,
                                           session_id=_scope(session_id, entry))
        if found is None:
            return None
        window, why = found
        key = (session_id, entry, window.kind)
        if key in self._told:
            return None
        self._told.add(key)
        return GuardVerdict("handoff", f"pre-emptive: {why}")


def _scope(session_id: str, entry: str) -> str | None:
    """A simulated entry is judged by its own session alone (see the module docstring)."""
    return session_id if simulated_entry(entry) else None
