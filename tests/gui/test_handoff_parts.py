"""The Handoff panel's parts on their own: countdown, target field, timeline, notifications."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from relay.core.events import EventRecord, HandoffState, HandoffStep, StateChanged
from relay.gui.bridge import EngineBridge
from relay.gui.handoff_text import countdown, parse_target, resumes_in
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.handoff_timeline import HandoffTimeline
from relay.gui.viewmodels.handoffs import _cell_text, cell_state
from relay.gui.viewmodels.notifier import HandoffNotifier
from relay.sessions.handoff import HandoffRecord

T0 = datetime(2025, 5, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def bridge(shell: RelayShell) -> EngineBridge:
    return shell.bridge


@pytest.mark.parametrize(("left", "text"), [
    (timedelta(hours=4, minutes=59, seconds=1), "4:59:01"),
    (timedelta(minutes=4, seconds=59), "4:59"),
    (timedelta(seconds=0.2), "0:01"),
    (timedelta(seconds=-5), "0:00"),
])
def test_countdown(left: timedelta, text: str) -> None:
    assert countdown(T0 + left, T0) == text


def test_resumes_in_says_resuming_once_the_wait_is_over() -> None:
    assert resumes_in(T0 + timedelta(minutes=5), T0) == "resumes in 5:00"
    assert resumes_in(T0, T0) == "resuming…"


@pytest.mark.parametrize(("text", "entry"), [
    ("", None), ("  ", None), ("codex", "codex"), (" claude:work ", "claude:work"),
    ("codex:me@example.com", "codex:me@example.com"),
])
def test_parse_target(text: str, entry: str | None) -> None:
    assert parse_target(text) == entry


@pytest.mark.parametrize(("text", "problem"), [
    ("codex:", "name the account"), ("co dex", "not provider or provider:account"),
    ("a:b:c", "not provider or provider:account"),
])
def test_parse_target_refuses(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_target(text)


def step(record_id: int, state: HandoffState, seconds: int, detail: str | None = None,
         handoff: str = "h-1", replay: bool = False) -> EventRecord:
    event = HandoffStep(handoff_id=handoff, state=state, from_entry="claude:work",
                        to_entry="codex", reason="usage_limit", detail=detail,
                        ts=T0 + timedelta(seconds=seconds), replay=replay)
    return EventRecord(record_id, "s-1", None, event)


def timeline_of(records: list[EventRecord]) -> HandoffTimeline:
    timeline = HandoffTimeline()
    timeline.create(timeline.unknown_in(records))
    timeline.add_records(records)
    return timeline


def test_a_failed_handoff_shows_where_it_failed_and_why() -> None:
    timeline = timeline_of([step(1, "pausing", 0), step(2, "snapshotted", 1, "commit abc on x"),
                            step(3, "failed", 2, "the vault is locked")])
    line = timeline.lines[0]
    assert line.state == "failed"
    assert line.failed_column == 2  # the Contract step was not reached
    assert [cell_state(line, col) for col in range(7)] == [
        "failed", "reached", "reached", "failed", "", "", ""]
    assert _cell_text(line, 3, "failed").startswith("✗ failed ")
    assert "Failed: the vault is locked" in line.describe()


def test_each_step_counts_once_and_the_journal_never_steps_back() -> None:
    records = [step(1, "pausing", 0), step(2, "snapshotted", 1)]
    timeline = timeline_of(records)
    assert timeline.add_records(records) == []  # the same records again: nothing changes
    assert len(timeline.lines[0].steps) == 2
    older = HandoffRecord(id="h-1", session_id="s-1", from_run_id=None, from_entry="claude:work",
                          to_entry="codex", reason="usage_limit", state="pausing",
                          contract_dir="/tmp/c", created_at=T0, updated_at=T0)
    assert timeline.merge_journal([older]) == [0]
    assert timeline.lines[0].state == "snapshotted"  # a stale journal read does not step back
    assert timeline.lines[0].contract_dir == "/tmp/c"


def test_the_notifier_announces_live_ends_once(bridge: EngineBridge) -> None:
    notifier = HandoffNotifier(bridge, lambda sid: "Fix the parser" if sid == "s-1" else None)
    got: list[tuple[str, str, bool]] = []
    notifier.notify.connect(lambda *args: got.append(args))
    done = step(5, "done", 5)
    notifier.on_records([step(4, "resuming", 4), done])
    notifier.on_records([done])  # seen again (e.g. followed from the store): not again
    notifier.on_records([step(9, "done", 9, handoff="h-old", replay=True)])  # history
    notifier.on_records([step(12, "failed", 12, "no safe point", handoff="h-2")])
    assert got == [
        ("Handoff done", "Session “Fix the parser” (s-1) handed off from claude:work to codex.",
         False),
        ("Handoff failed", "Session “Fix the parser” (s-1) could not be handed off from "
         "claude:work to codex: no safe point", True)]


def test_the_notifier_announces_a_wait_with_its_time(bridge: EngineBridge) -> None:
    notifier = HandoffNotifier(bridge)
    got: list[str] = []
    notifier.notify.connect(lambda _title, message, _warning: got.append(message))
    until = T0 + timedelta(hours=2, minutes=1)
    waiting = EventRecord(3, "s-2", None, StateChanged(state="waiting", until=until, ts=T0))
    notifier.on_records([waiting, waiting])
    assert got == [f"Session s-2 waits for its limit's reset; it resumes at "
                   f"{until.astimezone():%H:%M} (in 2:01:00)."]

