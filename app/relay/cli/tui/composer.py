"""The composer: a multi-line box whose ↑/↓ walk the messages sent before, and the send
modes a session offers now (:func:`offered`)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import TextArea

from relay.core.events import MessageMode
from relay.core.models import TalkAbilities

#: how each mode reads in the composer's line
LABELS: dict[MessageMode, str] = {"queue": "Queue", "now": "Steer now",
                                  "interrupt": "Interrupt & send"}
#: capability levels that offer a mode
_CAN = ("yes", "partial")


def offered(abilities: TalkAbilities | None) -> list[MessageMode]:
    """The modes to offer, the default first: a session at rest takes a follow-up (the
    mode does not matter then); a busy one queues, steers where its runtime can, and
    interrupts and sends where it can stop a turn."""
    if abilities is None or not abilities.busy:
        return ["queue"]
    modes: list[MessageMode] = ["queue"]
    if abilities.steer in _CAN:
        modes.append("now")
    if abilities.interrupt in _CAN:
        modes.append("interrupt")
    return modes


def mode_line(abilities: TalkAbilities | None, mode: MessageMode) -> str:
    """The line over the composer: what Ctrl+S does now, and why steering is not offered."""
    if abilities is None:
        return "Ctrl+S sends"
    if not abilities.can_send:
        return f"cannot send: {abilities.why_not.get('send', 'nothing can run this session')}"
    if not abilities.busy:
        return "Ctrl+S sends a follow-up (continues the conversation)"
    modes = offered(abilities)
    line = f"^S: {LABELS[mode]}"
    if len(modes) > 1:
        line += " · ^T: " + " / ".join(LABELS[m] for m in modes if m != mode)
    if "now" not in modes:
        line += f" · no steering: {abilities.why_not.get('steer', abilities.runtime)}"
    return line


class Composer(TextArea):
    """A multi-line message; ↑ on the first line recalls the previous message sent, ↓ on
    the last line the next one."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("up", "older", show=False),
                                             Binding("down", "newer", show=False)]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, **kwargs)  # type: ignore[arg-type]
        self.sent: list[str] = []
        self._back = 0  # 0: the draft; n: the n-th last message sent
        self._draft = ""

    def remember(self, text: str) -> None:
        """``text`` was sent: the newest of the history, and the box is cleared."""
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._back, self._draft = 0, ""
        self.clear()

    def action_older(self) -> None:
        if self.cursor_location[0] > 0 or self._back >= len(self.sent):
            self.action_cursor_up()
            return
        if self._back == 0:
            self._draft = self.text
        self._back += 1
        self._show(self.sent[-self._back])

    def action_newer(self) -> None:
        if self.cursor_location[0] < self.document.line_count - 1 or self._back == 0:
            self.action_cursor_down()
            return
        self._back -= 1
        self._show(self.sent[-self._back] if self._back else self._draft)

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)
