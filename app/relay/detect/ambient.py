"""Ambient mode's watcher: which detected sessions to tell the user about, and the polling loop.

Qt-free: the GUI (tray) and ``relay-cli daemon`` pass an ``announce`` callable and a ``scan``
coroutine (the Detector's cheap refresh, which reads only what changed); this module decides.

:class:`Changes` compares each scan with what it saw before and returns the
:class:`Announcement` s, each ready for a tray notification:

``new``          a session first seen after the watcher's **first** scan, active since then.
                 The first scan is the baseline and announces nothing; a session first seen
                 later whose last activity predates the baseline (an account's folder added
                 later, history read again) is a replay and is never announced.
``needs_input``  its state became ``needs_input`` — or stayed so with newer activity (a new
                 question asked and the previous one answered between two scans).
``blocked``      its state became ``blocked`` (usage / rate limit) — or stayed so with another
                 reset time (a new limit); the reset time is in the text when known.

A session first seen (after the baseline) already waiting or blocked gets that announcement,
not ``new`` as well: one notification per event. Each transition is announced once: back to
``working`` and again to ``needs_input`` is a new announcement. An ``unknown`` state (a
transcript caught mid-write) keeps the previous state, so a flicker is not a transition.

:class:`Ambient` runs ``scan`` every ``interval`` seconds: as an asyncio task (``start`` /
``stop``) or awaited (``run``, until cancelled); ``poke`` scans at once. A failing scan or
``announce`` is logged, and the loop goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Literal

from relay.core.errors import RelayError
from relay.detect import present
from relay.detect.model import DetectedSession, DetectState

log = logging.getLogger(__name__)

AnnouncementKind = Literal["new", "needs_input", "blocked"]

#: how runtimes are named to the user
_PROMPT_CLIP = 80


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class Announcement:
    kind: AnnouncementKind
    #: the detected session's id (``runtime:agent session id``): what a click opens
    session_id: str
    title: str
    message: str
    resets_at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Seen:
    """What the watcher remembers of a session between scans."""

    state: DetectState
    last_activity_ms: int | None
    resets_at_ms: int | None


class Changes:
    """The announcements each scan brings (pure: feed it scans, read what it returns)."""

    def __init__(self, *, clock: Callable[[], int] = _now_ms, home: Path | None = None,
                 tz: tzinfo | None = None) -> None:
        self._clock = clock
        self._home = home
        self._tz = tz
        self.seen: dict[str, Seen] = {}
        #: when the baseline (first) scan was taken; None until then
        self.baseline_ms: int | None = None

    def update(self, sessions: Iterable[DetectedSession]) -> list[Announcement]:
        if self.baseline_ms is None:
            self.baseline_ms = self._clock()
            for s in sessions:
                self.seen[s.id] = Seen(s.state, s.last_activity_ms, s.resets_at_ms)
            return []
        out: list[Announcement] = []
        for s in sessions:
            prev = self.seen.get(s.id)
            state = prev.state if s.state == "unknown" and prev is not None else s.state
            kind = self._kind(s, state, prev)
            if kind is not None:
                out.append(self.announcement(kind, s))
            before = prev.last_activity_ms if prev is not None else None
            self.seen[s.id] = Seen(state, _newest(s.last_activity_ms, before),
                                   s.resets_at_ms if state == "blocked" else None)
        return out

    def _kind(self, s: DetectedSession, state: DetectState,
              prev: Seen | None) -> AnnouncementKind | None:
        if prev is None:
            if not self._fresh(s):
                return None                       # a replay: it was there before we looked
            if state in ("needs_input", "blocked"):
                return "needs_input" if state == "needs_input" else "blocked"
            return "new"
        if state == "needs_input":
            newer = (s.last_activity_ms is not None and prev.last_activity_ms is not None
                     and s.last_activity_ms > prev.last_activity_ms)
            return "needs_input" if prev.state != "needs_input" or newer else None
        if state == "blocked":
            other_reset = s.resets_at_ms is not None and s.resets_at_ms != prev.resets_at_ms
            return "blocked" if prev.state != "blocked" or other_reset else None
        return None

    def _fresh(self, s: DetectedSession) -> bool:
        """Active since the baseline (a session with no known time cannot be told from a
        replay, and is not announced as new)."""
        latest = _newest(s.last_activity_ms, s.started_ms)
        return latest is not None and self.baseline_ms is not None and latest >= self.baseline_ms

    # -- the words ---------------------------------------------------------------------------

    def announcement(self, kind: AnnouncementKind, s: DetectedSession) -> Announcement:
        name = present.runtime_name(s.runtime)
        who = name if not s.entry or s.entry == s.runtime else f"{name} ({s.entry})"
        folder = s.cwd or s.repo
        where = f" in {self._short(folder)}" if folder else ""
        if kind == "needs_input":
            return Announcement(kind, s.id, f"{name} needs your input",
                                f"{who}{where} needs your input")
        if kind == "blocked":
            resets = f" — resets {self.clock_time(s.resets_at_ms)}" if s.resets_at_ms else ""
            return Announcement(kind, s.id, f"{name} hit its usage limit",
                                f"{who}{where} hit its usage limit{resets}", s.resets_at_ms)
        prompt = " ".join(s.intent.initial_prompt.split())
        if len(prompt) > _PROMPT_CLIP:
            prompt = prompt[: _PROMPT_CLIP - 1].rstrip() + "…"
        return Announcement(kind, s.id, f"New {name} session",
                            f"{who} started{where}" + (f": “{prompt}”" if prompt else ""))

    def clock_time(self, ms: int) -> str:
        """``14:05`` today, ``Tue 14:05`` within the week, else ``3 Dec 14:05`` (local time)."""
        return present.clock_time(ms, self._clock(), self._tz)

    def _short(self, folder: str) -> str:
        return present.short_path(folder, self._home)


def _newest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


Scan = Callable[[], Awaitable[list[DetectedSession]]]
Announce = Callable[[Announcement], None]


class Ambient:
    """Polls ``scan`` and hands each announcement to ``announce``."""

    def __init__(self, scan: Scan, announce: Announce, interval: float, *,
                 changes: Changes | None = None) -> None:
        self._scan = scan
        self._announce = announce
        self.interval = interval
        self.changes = changes or Changes()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._last_error: str | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start polling (in the running event loop); a second call does nothing."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self.run(), name="relay-ambient")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def poke(self) -> None:
        """Scan now instead of at the end of the interval."""
        self._wake.set()

    async def tick(self) -> list[Announcement]:
        """One scan: what it brings is announced and returned."""
        announcements = self.changes.update(await self._scan())
        for item in announcements:
            try:
                self._announce(item)
            except Exception:
                log.exception("ambient: announcing %s of %s failed", item.kind, item.session_id)
        return announcements

    async def run(self) -> None:
        """Poll until cancelled (what :meth:`start` runs as a task; ``relay-cli daemon`` awaits
        it directly)."""
        while True:
            try:
                await self.tick()
                self._last_error = None
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
                if message != self._last_error:  # once per distinct failure, not every poll
                    log.warning("ambient: the scan failed (%s); trying again", message,
                                exc_info=not isinstance(exc, RelayError))  # a bug: where
                self._last_error = message
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()
