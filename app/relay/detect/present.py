"""How a detected session reads in the window and the CLI: its state, age, usage and place.

Plain Python (no Qt). An unknown figure reads "—", never 0; a time of day is local.
"""

from __future__ import annotations

import os
from datetime import datetime, tzinfo
from pathlib import Path

from relay.detect.model import DetectedSession, DetectState, PlanStatus
from relay.wallet.model import Tokens
from relay.wallet.present import UNKNOWN, duration
from relay.wallet.present import tokens as short_tokens

STATE_TITLES: dict[DetectState, str] = {
    "working": "working", "needs_input": "needs input", "blocked": "blocked",
    "idle": "idle", "ended": "ended", "crashed": "crashed", "unknown": "unknown",
}
#: what each state means, in a sentence (the detail pane's headline)
STATE_SENTENCES: dict[DetectState, str] = {
    "working": "Working: its agent is running and wrote within the last minute.",
    "needs_input": "Needs input: it asked a question or a permission and waits for an answer.",
    "blocked": "Blocked by a usage limit.",
    "idle": "Idle: its agent is running, its last turn finished and nothing is asked.",
    "ended": "Ended: no agent runs it any more; its last turn finished.",
    "crashed": "Crashed: no agent runs it any more and it stopped in the middle of a turn.",
    "unknown": "Unknown: not enough could be read to tell.",
}
PLAN_MARKS: dict[PlanStatus, str] = {"completed": "✓", "in_progress": "◐", "pending": "○"}


DISPLAY_NAMES: dict[str, str] = {
    "claude": "Claude", "codex": "Codex", "gemini": "Gemini", "pi": "Pi", "cline": "Cline",
    "copilot": "Copilot", "continue": "Continue", "cursor": "Cursor", "aider": "Aider",
    "opencode": "OpenCode", "cursor-agent": "Cursor Agent",
}


def runtime_name(runtime: str) -> str:
    """``claude`` → ``Claude`` (the names the tray uses too)."""
    return DISPLAY_NAMES.get(runtime, runtime.capitalize())


def clock_time(ms: int, now_ms: int, tz: tzinfo | None = None) -> str:
    """``14:05`` today, ``Tue 14:05`` within the week, else ``3 Dec 14:05`` (local time)."""
    at = datetime.fromtimestamp(ms / 1000, tz)
    now = datetime.fromtimestamp(now_ms / 1000, tz)
    if at.date() == now.date():
        return at.strftime("%H:%M")
    if abs((at.date() - now.date()).days) < 7:
        return at.strftime("%a %H:%M")
    return f"{at.day} {at.strftime('%b %H:%M')}"


def state_label(s: DetectedSession, now_ms: int, tz: tzinfo | None = None) -> str:
    """The table's State cell: ``needs input``, ``blocked until 14:05``, ``blocked · reset due``."""
    label = STATE_TITLES[s.state]
    if s.state == "blocked" and s.resets_at_ms is not None:
        if s.resets_at_ms <= now_ms:
            return f"{label} · reset due"
        return f"{label} until {clock_time(s.resets_at_ms, now_ms, tz)}"
    return label


def state_sentence(s: DetectedSession, now_ms: int, tz: tzinfo | None = None) -> str:
    """The state in a sentence, with the reset (when and how long) for a blocked session."""
    if s.state == "blocked":
        if s.resets_at_ms is None:  # unknown, or passed: its ``why`` says which
            return "Blocked by a usage limit when it last ran."
        if s.resets_at_ms <= now_ms:
            return "Blocked by a usage limit; its reset is due (it can go on)."
        return (f"Blocked by a usage limit until {clock_time(s.resets_at_ms, now_ms, tz)} "
                f"(in {duration(s.resets_at_ms - now_ms)}).")
    if s.hooked:  # exact: what the session's hooks reported, with their detail
        return f"{STATE_SENTENCES[s.state]} (Its hooks: {s.why}.)"
    return STATE_SENTENCES[s.state]


def age(s: DetectedSession, now_ms: int) -> str:
    """How long ago it last did something: ``<1m``, ``45m``, ``3h 12m``; unknown → ``—``."""
    return UNKNOWN if s.last_activity_ms is None else age_of(s.last_activity_ms, now_ms)


def age_of(ms: int, now_ms: int) -> str:
    """How long ago ``ms`` was: ``<1m``, ``45m``, ``3h 12m``, ``2d 4h``."""
    return duration(now_ms - ms)


def usage_short(usage: Tokens | None) -> str:
    """Every token it used, ``1.2M``; not in the wallet's index → ``—``."""
    return UNKNOWN if usage is None else short_tokens(usage.total)


def usage_detail(usage: Tokens | None) -> str:
    """``1.2M tokens: 12.3k in · 4.5k out · 1.1M cache read · 30.0k cache write``."""
    if usage is None:
        return f"{UNKNOWN} (not in the wallet's transcript index yet)"
    parts = [f"{short_tokens(usage.input)} in", f"{short_tokens(usage.output)} out"]
    if usage.cache_read:
        parts.append(f"{short_tokens(usage.cache_read)} cache read")
    if usage.cache_write:
        parts.append(f"{short_tokens(usage.cache_write)} cache write")
    return f"{short_tokens(usage.total)} tokens: " + " · ".join(parts)


def short_path(folder: str, home: Path | None = None) -> str:
    """A folder with the home folder as ``~``."""
    base = str(home or Path.home()).rstrip(os.sep)
    if folder == base:
        return "~"
    if base and folder.startswith(base + os.sep):
        return "~" + folder[len(base):]
    return folder


def repository(s: DetectedSession) -> str:
    """The table's Repository cell: the repository's folder name, else the working folder's
    (with ``~``), else ``—``."""
    if s.repo:
        return Path(s.repo).name or s.repo
    return short_path(s.cwd) if s.cwd else UNKNOWN


def where(s: DetectedSession, home: Path | None = None) -> str:
    """Where it works, in full: ``~/src/app (repository ~/src/app)`` or the folder alone."""
    if s.cwd and s.repo and s.cwd != s.repo:
        return f"{short_path(s.cwd, home)} (repository {short_path(s.repo, home)})"
    folder = s.cwd or s.repo
    return short_path(folder, home) if folder else f"{UNKNOWN} (its folder was not recorded)"


def one_line(text: str, limit: int = 120) -> str:
    """``text`` on one line, clipped with ``…``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
