"""The handoffs of one session, folded from the journal and the step events (no Qt).

Each committed step is a :class:`~relay.core.events.HandoffStep` event (with
its time and detail); the journal (:class:`~relay.sessions.handoff.HandoffRecord`)
adds what a step produced (the contract folder) and is the last word on a
handoff's state. :class:`HandoffTimeline` merges both, each step event once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from relay.core.events import EventRecord, HandoffState, HandoffStep
from relay.gui.handoff_text import STEP_TITLES, STEPS, clock, rank
from relay.sessions.handoff import HandoffRecord


@dataclass
class HandoffLine:
    """One handoff: where it goes, and when each state was reached."""

    id: str
    from_entry: str | None = None
    to_entry: str | None = None
    reason: str | None = None
    state: HandoffState | None = None
    #: the last time each state was reached (``dispatched`` may repeat after a crash)
    reached: dict[HandoffState, datetime] = field(default_factory=dict)
    #: every step in commit order: (state, time, detail)
    steps: list[tuple[HandoffState, datetime, str | None]] = field(default_factory=list)
    contract_dir: str | None = None
    error: str | None = None

    def add_step(self, step: HandoffStep) -> None:
        self.from_entry = step.from_entry or self.from_entry
        self.to_entry = step.to_entry or self.to_entry
        self.reason = step.reason or self.reason
        self.reached[step.state] = step.ts
        self.steps.append((step.state, step.ts, step.detail))
        if step.state == "failed":
            self.error = step.detail or self.error
        self._advance(step.state)

    def merge(self, record: HandoffRecord) -> None:
        self.from_entry = record.from_entry or self.from_entry
        self.to_entry = record.to_entry or self.to_entry
        self.reason = record.reason or self.reason
        self.contract_dir = record.contract_dir or self.contract_dir
        self.error = record.error or self.error
        self._advance(record.state)

    def _advance(self, state: HandoffState) -> None:
        # events and journal reads may arrive in either order: never step back
        if rank(state) >= rank(self.state):
            self.state = state

    @property
    def title(self) -> str:
        return f"{self.from_entry or '?'} → {self.to_entry or '?'}"

    @property
    def failed_column(self) -> int | None:
        """The step (index into STEPS) a failed handoff did not reach; None unless failed."""
        if self.state != "failed":
            return None
        reached = [i for i, s in enumerate(STEPS) if s in self.reached]
        return min((reached[-1] + 1) if reached else 0, len(STEPS) - 1)

    def detail_of(self, state: HandoffState) -> str | None:
        """What the last step into ``state`` said (the pause, the commit, the contract…)."""
        for step, _ts, detail in reversed(self.steps):
            if step == state:
                return detail
        return None

    def describe(self) -> str:
        """Everything about the handoff, for the detail pane."""
        why = self.reason.replace("_", " ") if self.reason else "—"
        lines = [f"{self.title}   ({self.id})", f"Why: {why}"]
        snapshot = self.detail_of("snapshotted")
        if snapshot:
            # "<how the agent was paused>; commit <sha> on <branch>" (no pause: just the commit)
            pause, sep, commit = snapshot.rpartition("; commit ")
            lines.append(f"Pause: {pause}" if sep
                         else "Pause: none needed — the agent had already stopped")
            lines.append(f"Snapshot: commit {commit}" if sep else f"Snapshot: {snapshot}")
        lines.append(f"State: {STEP_TITLES[self.state] if self.state else '—'}")
        if self.error:
            lines.append(f"Failed: {self.error}")
        if self.contract_dir:
            lines.append(f"Contract: {self.contract_dir}")
        lines.append("")
        lines += [f"{clock(ts)}  {STEP_TITLES[s]:<10} {detail or ''}".rstrip()
                  for s, ts, detail in self.steps]
        return "\n".join(lines)


class HandoffTimeline:
    """A session's handoffs in the order they began.

    A view-model first adds the lines of handoffs it has not seen
    (:meth:`unknown_in` then :meth:`create`, between its row-insertion calls),
    then merges what the records say (:meth:`add_records`, :meth:`merge_journal`).
    """

    def __init__(self) -> None:
        self.lines: list[HandoffLine] = []
        self._rows: dict[str, int] = {}
        self._seen: set[int] = set()

    def row_of(self, handoff_id: str) -> int | None:
        return self._rows.get(handoff_id)

    def unknown_in(self, items: list[EventRecord] | list[HandoffRecord]) -> list[str]:
        """Ids of handoffs in ``items`` (step events or journal rows) with no line yet."""
        ids: list[str] = []
        for item in items:
            if isinstance(item, HandoffRecord):
                handoff_id = item.id
            elif item.event.kind == "handoff_step":
                handoff_id = item.event.handoff_id
            else:
                continue
            if handoff_id not in self._rows and handoff_id not in ids:
                ids.append(handoff_id)
        return ids

    def create(self, handoff_ids: list[str]) -> None:
        for handoff_id in handoff_ids:
            self._rows[handoff_id] = len(self.lines)
            self.lines.append(HandoffLine(handoff_id))

    def add_records(self, records: list[EventRecord]) -> list[int]:
        """Take the handoff steps among ``records`` (each record id once); the rows changed."""
        rows: list[int] = []
        for record in records:
            event = record.event
            if event.kind != "handoff_step" or record.id in self._seen:
                continue
            row = self._rows.get(event.handoff_id)
            if row is None:
                continue  # not created: the caller skipped unknown_in/create
            self._seen.add(record.id)
            self.lines[row].add_step(event)
            if row not in rows:
                rows.append(row)
        return rows

    def merge_journal(self, records: list[HandoffRecord]) -> list[int]:
        """Merge the journal's rows (the last word on state, contract folder, error)."""
        rows: list[int] = []
        for record in records:
            row = self._rows.get(record.id)
            if row is None:
                continue
            self.lines[row].merge(record)
            if row not in rows:
                rows.append(row)
        return rows
