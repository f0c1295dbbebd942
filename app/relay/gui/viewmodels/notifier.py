"""HandoffNotifier: what the tray announces — a handoff finished, a session waits for a reset
or needs the user's input (once per question), an account passed the wallet's watermark,
and ambient mode's news of agent sessions Relay did not start (new, needs input, blocked by
a limit).

Only live records count (``replay`` records are history re-read from the store),
each handoff is announced once when it ends (``done`` or ``failed``), and each
wait once (per session and reset time). An account's limit window is announced
once when its used or projected share reaches the watermark, and again only after
that window has reset (or, its reset unknown, once it fell back under the watermark).
Ambient announcements come already decided once per transition (:mod:`relay.detect.ambient`);
clicking the latest notification when it is one of them asks for that session
(``sessionRequested``), which the window shows in the Detect dock.

A session whose hooks report to the host (``live_state`` records) is announced at once when
it goes to ``needs_input`` or ``quota_blocked`` — once per transition (it must leave that
state to be announced again) — and the transcript scan's later announcement of the same
state is then not repeated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Signal

from relay.core.events import EventRecord, HandoffStep, LiveStateChanged, NeedsInput, StateChanged
from relay.core.present import clip
from relay.detect.ambient import Announcement
from relay.detect.present import short_path
from relay.gui.bridge import EngineBridge
from relay.gui.handoff_text import countdown
from relay.wallet.model import AccountView
from relay.wallet.present import past_watermark, watermark_warning

#: a session's display name from its id (its task's first line), or None if unknown.
NameOf = Callable[[str], str | None]


class HandoffNotifier(QObject):
    """Turns live records into notifications.

    Signals:
        notify(str, str, bool): title, message, and whether it reports a problem.
        sessionRequested(str): the user clicked an ambient announcement (the detected
            session's id).
        questionRequested(str): the user clicked "needs your input" (the Relay session).
    """

    notify = Signal(str, str, bool)
    sessionRequested = Signal(str)
    questionRequested = Signal(str)

    def __init__(self, bridge: EngineBridge, name_of: NameOf | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._name_of = name_of
        self._announced: set[str] = set()
        #: (entry, window kind) → the window's reset (ms) when it was announced
        self._past_watermark: dict[tuple[str, str], int | None] = {}
        #: detected id → the ambient kind its hooks announced last, while it is in that state
        self._hooked: dict[str, str] = {}
        #: the detected session the latest notification is about (None: not an ambient one)
        self.target: str | None = None
        #: the Relay session the latest notification asks the user about (needs input)
        self.session: str | None = None
        bridge.records.connect(self.on_records)

    def _emit(self, title: str, message: str, warning: bool, target: str | None = None,
              session: str | None = None) -> None:
        self.target, self.session = target, session
        self.notify.emit(title, message, warning)

    def on_announcement(self, announcement: Announcement) -> None:
        """Ambient mode's news; a limit reads as a warning (not again what hooks told)."""
        if self._hooked.get(announcement.session_id) == announcement.kind:
            return
        self._emit(announcement.title, announcement.message, announcement.kind == "blocked",
                   announcement.session_id)

    def clicked(self) -> None:
        """The latest notification was clicked: its detected session, if it names one, or
        the Relay session that asks something."""
        if self.target is not None:
            self.sessionRequested.emit(self.target)
        elif self.session is not None:
            self.questionRequested.emit(self.session)

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        for record in batch:
            event = record.event
            if event.replay:
                continue
            if event.kind == "handoff_step" and event.state in ("done", "failed"):
                self._handoff(record.session_id, event)
            elif event.kind == "state_changed" and event.state == "waiting":
                self._waiting(record.session_id, event)
            elif isinstance(event, NeedsInput):
                self._asks(record.session_id, event)
            elif isinstance(event, LiveStateChanged):
                self._live(event)

    def _session(self, session_id: str) -> str:
        name = self._name_of(session_id) if self._name_of else None
        return f"Session “{clip(name, 60)}” ({session_id})" if name else f"Session {session_id}"

    def _once(self, key: str) -> bool:
        if key in self._announced:
            return False
        self._announced.add(key)
        return True

    def _handoff(self, session_id: str, step: HandoffStep) -> None:
        if not self._once(step.handoff_id):
            return
        route = f"from {step.from_entry or '?'} to {step.to_entry or '?'}"
        if step.state == "done":
            self._emit("Handoff done", f"{self._session(session_id)} handed off {route}.",
                       False)
        else:
            why = step.detail or "no reason recorded"
            self._emit("Handoff failed",
                       f"{self._session(session_id)} could not be handed off {route}: {why}",
                       True)

    def _waiting(self, session_id: str, change: StateChanged) -> None:
        until = change.until
        if not self._once(f"wait:{session_id}:{until.isoformat() if until else ''}"):
            return
        when = (f"; it resumes at {until.astimezone():%H:%M} (in {countdown(until, change.ts)})"
                if until else "")
        self._emit("Waiting for a limit's reset",
                   f"{self._session(session_id)} waits for its limit's reset{when}.", False)

    def _asks(self, session_id: str, question: NeedsInput) -> None:
        if not self._once(f"ask:{session_id}:{question.request_id}"):
            return
        options = " / ".join(o.label for o in question.options)
        self._emit("Needs your input", f"{self._session(session_id)} asks: "
                   f"{clip(question.prompt, 140)}" + (f" ({options})" if options else ""), True,
                   None, session_id)

    def _live(self, change: LiveStateChanged) -> None:
        """A hooked session that needs the user, or is stopped by a limit: said at once."""
        detected = f"claude:{change.agent_session_id}"
        kind = {"needs_input": "needs_input", "quota_blocked": "blocked"}.get(change.state)
        if kind is None:
            self._hooked.pop(detected, None)  # left it: the next time is announced again
            return
        if self._hooked.get(detected) == kind:
            return
        self._hooked[detected] = kind
        where = f" in {short_path(change.cwd)}" if change.cwd else ""
        detail = f": {clip(change.detail, 140)}" if change.detail else ""
        if kind == "blocked":
            self._emit("Claude hit its usage limit",
                       f"Claude{where} was stopped by a usage limit{detail}", True, detected)
            return
        what = "permission" if change.needs == "permission" else "input"
        relay = change.relay_session_id
        self._emit(f"Claude needs your {what}", f"Claude{where} needs your {what}{detail}",
                   True, None if relay else detected, relay)

    def on_wallet(self, accounts: Sequence[AccountView], watermark: float, now_ms: int) -> None:
        """Warn once per account and window whose used or projected share passed ``watermark``."""
        for account in accounts:
            for window in account.windows:
                key = (account.entry, window.kind)
                announced = key in self._past_watermark
                reset = self._past_watermark.get(key)
                if not past_watermark(window, watermark):
                    if announced and reset is None:
                        del self._past_watermark[key]  # back under it: warn again next time
                    continue
                if announced and (reset is None or now_ms < reset):
                    continue
                at = window.resets_at.value
                self._past_watermark[key] = int(at) if at is not None else None
                at_wall = (window.used.value or 0.0) >= 1.0
                self._emit("Account at its limit" if at_wall else "Account near its limit",
                           watermark_warning(account, window, now_ms), True)
