"""Ambient mode's watcher: what is announced (the tracker, driven directly) and the loop.

The loop runs against a scripted scan: it is paced by the script (each scan call takes the next
batch) or by ``poke``, never by sleeping.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from relay.detect.ambient import Ambient, Announcement, Changes
from relay.detect.model import DetectedSession, DetectState, Intent

#: Monday 2 March 2026, 12:00 UTC: the watcher's clock
T0 = int(datetime(2026, 3, 2, 12, 0, tzinfo=UTC).timestamp() * 1000)
MINUTE = 60_000
HOME = Path("/home/u")


def session(sid: str, state: DetectState = "working", *, last: int | None = T0 + MINUTE,
            started: int | None = None, resets: int | None = None, runtime: str = "claude",
            entry: str | None = None, cwd: str | None = "/home/u/src/app",
            prompt: str = "") -> DetectedSession:
    return DetectedSession(runtime=runtime, agent_session_id=sid, entry=entry or runtime,
                           source=Path("/x") / sid, cwd=cwd, started_ms=started,
                           last_activity_ms=last, state=state, resets_at_ms=resets,
                           intent=Intent(initial_prompt=prompt))


def tracker(now: int = T0) -> Changes:
    return Changes(clock=lambda: now, home=HOME, tz=UTC)


def kinds(notes: Sequence[Announcement]) -> list[tuple[str, str]]:
    return [(n.kind, n.session_id) for n in notes]


# -- the tracker ----------------------------------------------------------------------------


def test_the_first_scan_is_the_baseline_and_announces_nothing() -> None:
    changes = tracker()
    assert changes.update([session("a"), session("b", "needs_input"),
                           session("c", "blocked", resets=T0 + 60 * MINUTE)]) == []
    assert changes.baseline_ms == T0
    assert changes.update([session("a"), session("b", "needs_input"),
                           session("c", "blocked", resets=T0 + 60 * MINUTE)]) == []


def test_a_new_session_is_announced_once() -> None:
    changes = tracker()
    changes.update([session("a")])
    new = session("b", entry="claude:work", prompt="fix the login\n bug")
    notes = changes.update([session("a"), new])
    assert notes == [Announcement("new", "claude:b", "New Claude session",
                                  "Claude (claude:work) started in ~/src/app: “fix the login bug”")]
    assert changes.update([session("a"), new]) == []
    assert changes.update([new]) == []
    assert changes.update([session("a"), new]) == []     # back after a scan without it


def test_a_long_first_prompt_is_clipped() -> None:
    changes = tracker()
    changes.update([])
    [note] = changes.update([session("b", prompt="word " * 50)])
    assert note.message.endswith("…”")
    assert len(note.message) < 130


def test_a_replayed_session_is_never_announced_as_new() -> None:
    changes = tracker()
    changes.update([session("a")])
    # first seen now, but its last activity is before the watcher looked (a folder read late)
    old = session("old", "ended", last=T0 - 30 * MINUTE, started=T0 - 90 * MINUTE)
    undated = session("undated", last=None)
    assert changes.update([session("a"), old, undated]) == []
    assert changes.update([session("a"), old, undated]) == []
    # it is resumed later and waits: that transition is real
    notes = changes.update([session("a"), session("old", "needs_input", last=T0 + 5 * MINUTE)])
    assert kinds(notes) == [("needs_input", "claude:old")]


def test_needs_input_is_announced_once_per_transition() -> None:
    changes = tracker()
    changes.update([session("a", last=T0)])
    waiting = session("a", "needs_input", last=T0 + MINUTE)
    assert changes.update([waiting]) == [Announcement(
        "needs_input", "claude:a", "Claude needs your input",
        "Claude in ~/src/app needs your input")]
    assert changes.update([waiting]) == []
    assert changes.update([session("a", "unknown", last=T0 + MINUTE)]) == []   # a flicker
    assert changes.update([waiting]) == []
    assert changes.update([session("a", "working", last=T0 + 2 * MINUTE)]) == []
    assert kinds(changes.update([session("a", "needs_input", last=T0 + 3 * MINUTE)])) == [
        ("needs_input", "claude:a")]


def test_a_new_question_between_two_scans_is_announced_again() -> None:
    changes = tracker()
    changes.update([session("a", "needs_input", last=T0)])
    assert changes.update([session("a", "needs_input", last=T0)]) == []
    assert kinds(changes.update([session("a", "needs_input", last=T0 + MINUTE)])) == [
        ("needs_input", "claude:a")]


def test_blocked_is_announced_with_its_reset_time() -> None:
    changes = tracker()
    changes.update([session("w", runtime="codex", entry="codex:work", cwd=None)])
    resets = T0 + 125 * MINUTE                                   # 14:05 the same day
    blocked = session("w", "blocked", resets=resets, runtime="codex", entry="codex:work",
                      cwd=None)
    assert changes.update([blocked]) == [Announcement(
        "blocked", "codex:w", "Codex hit its usage limit",
        "Codex (codex:work) hit its usage limit — resets 14:05", resets)]
    assert changes.update([blocked]) == []
    # a new limit (another reset time) is news; unblocked then blocked again too
    later = session("w", "blocked", resets=resets + 60 * MINUTE, runtime="codex",
                    entry="codex:work", cwd=None)
    assert [n.message for n in changes.update([later])] == [
        "Codex (codex:work) hit its usage limit — resets 15:05"]
    changes.update([session("w", "working", runtime="codex", entry="codex:work", cwd=None)])
    assert kinds(changes.update([later])) == [("blocked", "codex:w")]


def test_reset_times_on_other_days_and_unknown_resets() -> None:
    changes = tracker()
    changes.update([session("a"), session("b")])
    tomorrow = T0 + 26 * 60 * MINUTE                              # Tuesday 14:00
    next_month = T0 + 40 * 24 * 60 * MINUTE                       # 11 April
    notes = changes.update([session("a", "blocked", resets=tomorrow),
                            session("b", "blocked", resets=None)])
    assert [n.message for n in notes] == [
        "Claude in ~/src/app hit its usage limit — resets Tue 14:00",
        "Claude in ~/src/app hit its usage limit"]
    assert changes.clock_time(next_month) == "11 Apr 12:00"


def test_a_session_first_seen_waiting_gets_one_announcement() -> None:
    changes = tracker()
    changes.update([])
    notes = changes.update([session("q", "needs_input", started=T0 + MINUTE),
                            session("z", "blocked", resets=T0 + 30 * MINUTE)])
    assert kinds(notes) == [("needs_input", "claude:q"), ("blocked", "claude:z")]


def test_a_folder_outside_home_is_shown_as_is() -> None:
    changes = tracker()
    changes.update([])
    [note] = changes.update([session("a", cwd="/srv/build", runtime="gemini")])
    assert note.message == "Gemini started in /srv/build"


# -- the loop -------------------------------------------------------------------------------


class ScriptedScan:
    """Each call takes the next batch (an exception is raised); then it blocks until cancelled."""

    def __init__(self, batches: Sequence[list[DetectedSession] | Exception]) -> None:
        self.batches = list(batches)
        self.calls = 0
        self.exhausted = asyncio.Event()
        self._reached: dict[int, asyncio.Event] = {}

    def reached(self, n: int) -> asyncio.Event:
        """Set once the scan has been called ``n`` times."""
        event = self._reached.setdefault(n, asyncio.Event())
        if self.calls >= n:
            event.set()
        return event

    async def __call__(self) -> list[DetectedSession]:
        self.calls += 1
        self.reached(self.calls).set()
        if not self.batches:
            self.exhausted.set()            # every batch went through a whole tick
            await asyncio.Event().wait()
        item = self.batches.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


async def within(event: asyncio.Event, seconds: float = 10.0) -> None:
    await asyncio.wait_for(event.wait(), seconds)


async def test_the_loop_announces_transitions_and_survives_a_failing_scan(
        caplog: pytest.LogCaptureFixture) -> None:
    scan = ScriptedScan([
        [session("a")],                                   # baseline
        [session("a"), session("b")],                     # b is new
        [session("a"), session("b")],
        RuntimeError("transcripts folder vanished"),
        [session("a"), session("b", "needs_input", last=T0 + 2 * MINUTE)],
        [session("a"), session("b", "needs_input", last=T0 + 2 * MINUTE), session("c")],
    ])
    notes: list[Announcement] = []
    watcher = Ambient(scan, notes.append, interval=0, changes=tracker())
    with caplog.at_level(logging.WARNING, logger="relay.detect.ambient"):
        watcher.start()
        watcher.start()                                   # once is enough
        await within(scan.exhausted)
    was_running = watcher.running
    await watcher.stop()
    assert (was_running, watcher.running) == (True, False)
    assert kinds(notes) == [("new", "claude:b"), ("needs_input", "claude:b"), ("new", "claude:c")]
    assert "transcripts folder vanished" in caplog.text


async def test_a_failing_announce_does_not_stop_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    scan = ScriptedScan([[], [session("a"), session("b")], [session("a"), session("b"),
                                                            session("c")]])
    seen: list[str] = []

    def announce(note: Announcement) -> None:
        seen.append(note.session_id)
        if note.session_id == "claude:a":
            raise OSError("the tray is gone")

    watcher = Ambient(scan, announce, interval=0, changes=tracker())
    watcher.start()
    try:
        await within(scan.exhausted)
    finally:
        await watcher.stop()
    assert seen == ["claude:a", "claude:b", "claude:c"]
    assert "the tray is gone" in caplog.text


async def test_poke_scans_before_the_interval_is_up() -> None:
    scan = ScriptedScan([[session("a")], [session("a"), session("b")]])
    got = asyncio.Event()
    notes: list[Announcement] = []

    def announce(note: Announcement) -> None:
        notes.append(note)
        got.set()

    watcher = Ambient(scan, announce, interval=3600, changes=tracker())
    watcher.start()
    try:
        await within(scan.reached(1))                     # the baseline; now an hour's wait
        watcher.poke()
        await within(got)
        assert kinds(notes) == [("new", "claude:b")]
        watcher.poke()
        await within(scan.exhausted)
        assert scan.calls == 3
    finally:
        await watcher.stop()
    await watcher.stop()                                  # stopping twice is harmless


async def test_tick_drives_one_scan_by_hand() -> None:
    scan = ScriptedScan([[session("a")], [session("a", "needs_input", last=T0 + 2 * MINUTE)]])
    notes: list[Announcement] = []
    watcher = Ambient(scan, notes.append, interval=60, changes=tracker())
    assert await watcher.tick() == []
    assert kinds(await watcher.tick()) == [("needs_input", "claude:a")]
    assert kinds(notes) == [("needs_input", "claude:a")]
    assert not watcher.running


async def test_run_is_awaitable_until_cancelled() -> None:
    scan = ScriptedScan([[session("a")], [session("a"), session("b")]])
    notes: list[Announcement] = []
    task = asyncio.create_task(Ambient(scan, notes.append, interval=0, changes=tracker()).run())
    await within(scan.exhausted)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert kinds(notes) == [("new", "claude:b")]
