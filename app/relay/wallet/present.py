"""How the wallet's figures read in the window, the tray and the CLI.

Plain Python (no Qt). Every figure says where it came from and how old it is
(``official · 2 min ago``, ``estimate from transcripts``, ``unknown —``); an
unknown number reads "—", never 0.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

from relay.wallet.model import AccountView, Confidence, Figure, WindowKind, WindowView
from relay.wallet.usage_refresh import RefreshReport

UNKNOWN = "—"

WINDOW_TITLES: dict[WindowKind, str] = {
    "five_hour": "5-hour", "seven_day": "7-day", "seven_day_opus": "7-day Opus",
    "seven_day_sonnet": "7-day Sonnet", "other": "Other",
}
AUTH_TITLES = {"cli_login": "CLI login", "api_key": "API key"}
CONFIDENCE_TITLES: dict[Confidence, str] = {
    "high": "high confidence", "medium": "medium confidence", "low": "low confidence",
    "none": "no forecast",
}
#: environment variables whose values are never shown (a login command's env could hold one)
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def duration(ms: int) -> str:
    """``3h 12m``, ``45m``, ``2d 4h``; under a minute reads ``<1m``; never negative."""
    minutes = max(ms, 0) // 60_000
    if minutes < 1:
        return "<1m"
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {mins:02d}m" if mins else f"{hours}h"
    return f"{mins}m"


def ago(observed_ms: int, now_ms: int) -> str:
    """``just now``, ``2 min ago``, ``3 h ago``, ``2 d ago`` (a clock ahead reads just now)."""
    seconds = (now_ms - observed_ms) // 1000
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86_400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86_400} d ago"


def source_label(figure: Figure, now_ms: int) -> str:
    """Where a figure came from and how old it is, as the dock's bars say it."""
    if figure.source == "unknown" or figure.value is None:
        return f"unknown {UNKNOWN}"
    if figure.source == "estimate":
        return "estimate from transcripts"
    if figure.observed_ms is None:
        return figure.source
    return f"{figure.source} · {ago(figure.observed_ms, now_ms)}"


def percent(fraction: float | None) -> str:
    """0.423 → ``42%``; unknown → ``—``."""
    return UNKNOWN if fraction is None else f"{fraction * 100:.0f}%"


def money(usd: float | None) -> str:
    """``$1.23``, ``$0.004`` below a cent, ``$1,234`` from a thousand; unknown → ``—``."""
    if usd is None:
        return UNKNOWN
    if 0 < abs(usd) < 0.01:
        return f"${usd:.3f}"
    return f"${usd:,.0f}" if abs(usd) >= 1000 else f"${usd:,.2f}"


def cost(figure: Figure) -> str:
    """A cost with what it is: ``$1.23 reported`` (the CLI said so) or ``$1.23 estimate``.

    Costs computed from the price table have the source ``estimate`` (wallet.model).
    """
    if figure.value is None or figure.source == "unknown":
        return UNKNOWN
    if figure.value == 0 and figure.source != "estimate":
        return money(0.0)  # nothing was spent: nothing to label
    kind = "reported" if figure.source in ("official", "recorded") else "estimate"
    return f"{money(figure.value)} {kind}"


def tokens(count: float | None) -> str:
    """1234 → ``1.2k``, 3_400_000 → ``3.4M``; unknown → ``—``."""
    if count is None:
        return UNKNOWN
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(count) >= size:
            return f"{count / size:.1f}{suffix}"
    return f"{count:.0f}"


def burn(figure: Figure) -> str:
    """``1.2k tok/min (recorded)``; unknown → ``—``."""
    if figure.value is None or figure.source == "unknown":
        return UNKNOWN
    return f"{tokens(figure.value)} tok/min ({figure.source})"


def resets(window: WindowView, now_ms: int) -> str:
    """``resets in 3h 12m`` / ``reset due`` / ``reset time unknown``."""
    at = window.resets_at.value
    if at is None:
        return "reset time unknown"
    left = int(at) - now_ms
    return f"resets in {duration(left)}" if left > 0 else "reset due"


def runs_out(window: WindowView, now_ms: int) -> str:
    """``runs out in 2h 10m`` when the burn exhausts the window before its reset, else ""."""
    if window.exhausts_at_ms is None:
        return ""
    left = window.exhausts_at_ms - now_ms
    return f"runs out in {duration(left)}" if left > 0 else "exhausted"


def clock_ms(ms: int) -> str:
    """A local time of day, ``14:05``."""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%H:%M")


def when_ms(ms: int, now_ms: int) -> str:
    """``14:05`` within the next 12 hours, else with the day: ``Tue 14:05``."""
    if ms - now_ms < 12 * 3600 * 1000:
        return clock_ms(ms)
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%a %H:%M")


def used_text(window: WindowView) -> str:
    """``42% used``, or ``unknown —`` when nothing says how much is used."""
    if window.used.value is None or window.used.source == "unknown":
        return f"unknown {UNKNOWN}"
    return f"{percent(window.used.value)} used"


def projected_text(window: WindowView, now_ms: int) -> str:
    """Where the burn leads, bounded: ``runs out ~14:05, before the reset``, ``exhausted``,
    ``≈62% at reset`` (never above 100 %), or "" when nothing is projected."""
    at = window.exhausts_at_ms
    if at is not None:
        return f"runs out ~{when_ms(at, now_ms)}, before the reset" if at > now_ms else "exhausted"
    if window.projected.value is None or window.projected.source == "unknown":
        return ""
    return f"≈{percent(min(window.projected.value, 1.0))} at reset"


def window_detail(window: WindowView, now_ms: int) -> str:
    """Projection, reset, source and the projection's confidence, joined with dots (an
    unknown source is already in :func:`used_text`; nothing projected reads "no forecast")."""
    known = window.used.value is not None and window.used.source != "unknown"
    projection = projected_text(window, now_ms)
    parts = [projection, resets(window, now_ms),
             source_label(window.used, now_ms) if known else "",
             CONFIDENCE_TITLES[window.confidence]
             if projection or window.confidence == "none" else ""]
    return " · ".join(p for p in parts if p)


def level(window: WindowView, watermark: float) -> str:
    """How a window's bar is coloured: ``ok``, ``warn`` (80 %) or ``over`` (the watermark)."""
    used = window.used.value
    if used is None:
        return "unknown"
    if used >= watermark:
        return "over"
    projected = window.projected.value
    return "warn" if used >= 0.8 or (projected is not None and projected >= watermark) else "ok"


def past_watermark(window: WindowView, watermark: float) -> bool:
    """Whether used or projected is at or above ``watermark`` (what the tray warns about)."""
    return any(f.value is not None and f.source != "unknown" and f.value >= watermark
               for f in (window.used, window.projected))


def watermark_warning(account: AccountView, window: WindowView, now_ms: int) -> str:
    """The tray's sentence for a window past the watermark."""
    name = account.entry
    used = percent(window.used.value)
    projection = projected_text(window, now_ms)
    full = window.used.value is not None and window.used.value >= 1.0
    projected = f", {projection}" if projection and not full else ""
    at = window.resets_at.value
    when = (f"It resets at {clock_ms(int(at))} (in {duration(int(at) - now_ms)})."
            if at is not None else "Its reset time is unknown.")
    return (f"{name}: the {WINDOW_TITLES[window.kind]} window is at {used} used{projected} "
            f"({source_label(window.used, now_ms)}). {when}")


def report_text(report: RefreshReport) -> str:
    """What one refresh of the transcript index did, in one line."""
    if not report.files_seen:
        return "No transcripts found"
    read = (f"{report.files_changed} read ({size(report.bytes_read)}), "
            f"{report.entries_added} new calls" if report.files_changed else "nothing new")
    skipped = sum(report.warnings.values())
    warned = f" · {skipped} skipped (see the log)" if skipped else ""
    return (f"{report.files_seen} transcript files: {read}{warned} · "
            f"{report.elapsed_s:.1f} s")


def size(count: int) -> str:
    """Bytes as ``512 B``, ``1.2 MB``."""
    for unit, suffix in ((1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "kB")):
        if count >= unit:
            return f"{count / unit:.1f} {suffix}"
    return f"{count} B"


def scan_progress(done: int, total: int) -> str:
    """``Reading transcripts… 4 of 8 files`` (the total may not be known yet)."""
    return f"Reading transcripts… {done} of {total} files" if total else "Reading transcripts…"


def account_title(account: AccountView) -> str:
    """``work`` (``claude``) or the bare entry when it has no label."""
    return account.label or account.entry


def account_subtitle(account: AccountView, registered: bool = True) -> str:
    """``claude · CLI login``; an entry seen in use but not registered says so."""
    if account.provider == "demo":
        return "demo · a simulation"
    if account.label is None:  # the title is the provider already
        return "not registered · the CLI's default login"
    if not registered:
        return f"{account.provider} · not registered · seen in use"
    return f"{account.provider} · {AUTH_TITLES.get(account.auth_kind, account.auth_kind)}"


def shown_command(argv: Sequence[str], env: Mapping[str, str],
                  unset: Collection[str] = ()) -> str:
    """A command to copy into a terminal: ``CLAUDE_CONFIG_DIR=/x claude auth login``, with
    ``env -u NAME`` first for the variables it must not see.

    Values of variables that look secret are never shown.
    """
    assignments = [f"{name}={'<hidden>' if _secret(name) else shlex.quote(value)}"
                   for name, value in env.items()]
    removals = [f"-u {name}" for name in sorted(unset)]
    prefix = ["env", *removals] if removals else []
    return " ".join([*prefix, *assignments, shlex.join(argv)])


def _secret(name: str) -> bool:
    return any(word in name.upper() for word in _SECRET_WORDS)
