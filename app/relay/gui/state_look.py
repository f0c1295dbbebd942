"""How a session's state looks, in one place: its plain words, its colour and its icon.

The sessions list, the stream header, the board, the tray and History call :func:`look`
rather than spelling a state themselves: "needs input", not ``needs_input``; "done", not
``completed``; "quota-blocked · resets 14:05"; "waiting · 3m 12s"; "handed off → personal".
The colour is a :mod:`relay.gui.theme` role's *name*, read when painted
(:meth:`StateLook.colour`), so a palette change recolours every state; the icon is drawn
here, in that colour (:func:`state_icon`), the same on every platform.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen, QPixmap, QPolygonF

from relay.core.events import utcnow
from relay.gui import theme

#: the words of each state that needs no time or target
_WORDS: dict[str, tuple[str, str, str]] = {  # state: (word, colour role, icon)
    "pending": ("pending", "MUTED", "pending"),
    "starting": ("starting", "ACCENT", "pending"),
    "running": ("running", "ACCENT", "running"),
    "needs_input": ("needs input", "NEEDS_INPUT", "needs-input"),
    "waiting": ("waiting", "WARNING", "waiting"),
    "quota_blocked": ("quota-blocked", "WARNING", "quota-blocked"),
    "handed_off": ("handed off", "HANDOFF", "handed-off"),
    "completed": ("done", "OK", "done"),
    "failed": ("failed", "ERROR", "failed"),
    "cancelled": ("cancelled", "MUTED", "cancelled"),
    "interrupted": ("interrupted", "WARNING", "interrupted"),
}
#: hooked agent sessions' live states (relay.core.live) in the same words
_LIVE = {"working": "running", "idle": "completed", "ended": "completed"}


@dataclass(frozen=True, slots=True)
class StateLook:
    """A state as people read it: ``word``, the :mod:`~relay.gui.theme` role of its colour,
    and its icon's name (:func:`state_icon`)."""

    word: str
    colour_role: str
    icon: str

    def colour(self) -> QColor:
        """The colour, from the theme as it is now."""
        return QColor(getattr(theme, self.colour_role, theme.TEXT))

    def qicon(self) -> QIcon:
        return state_icon(self.icon, self.colour().name())


def look(state: str, *, reset_at: datetime | None = None, resume_at: datetime | None = None,
         handed_to: str | None = None, now: datetime | None = None) -> StateLook:
    """The look of ``state`` (a session's, or a hooked session's live state).

    Args:
        reset_at: a quota-blocked session's limit resets then ("quota-blocked · resets 14:05").
        resume_at: a waiting session resumes then ("waiting · 3m 12s").
        handed_to: a handoff takes it to this entry now ("handed off → personal").
    """
    if handed_to:
        return StateLook(f"handed off → {entry_label(handed_to)}", "HANDOFF", "handed-off")
    word, role, icon = _WORDS.get(_LIVE.get(state, state), (state.replace("_", " "),
                                                              "TEXT", "pending"))
    if state == "waiting" and resume_at is not None:
        word = f"waiting · {time_left(resume_at, now or utcnow())}"
    elif state == "quota_blocked" and reset_at is not None:
        word = f"quota-blocked · resets {reset_at.astimezone():%H:%M}"
    return StateLook(word, role, icon)


def time_left(until: datetime, now: datetime) -> str:
    """'3m 12s', '4h 59m 12s', '40s'; 'now' once it is over."""
    left = int((until - now).total_seconds() + 0.999)
    if left <= 0:
        return "now"
    hours, rest = divmod(left, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {seconds:02d}s"
    return f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"


def entry_label(entry: str) -> str:
    """A chain entry as the list names it: its account (``claude:work`` → ``work``), else
    its provider (``ollama``)."""
    provider, _, account = entry.partition(":")
    return account or provider


def chain_label(entries: list[str]) -> str:
    """'work → personal → ollama': the entries a session ran on, in order."""
    return " → ".join(entry_label(e) for e in entries)


# -- icons ---------------------------------------------------------------------------------

ICON_PX = 16


@lru_cache(maxsize=128)
def state_icon(name: str, colour: str) -> QIcon:
    """The state icon ``name`` drawn in ``colour`` (cached per colour: a new palette draws
    anew)."""
    icon = QIcon()
    for scale in (1, 2):
        pixmap = QPixmap(ICON_PX * scale, ICON_PX * scale)
        pixmap.setDevicePixelRatio(scale)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        _draw(painter, name, QColor(colour))
        painter.end()
        icon.addPixmap(pixmap)
    return icon


def _draw(p: QPainter, name: str, colour: QColor) -> None:
    s = float(ICON_PX)
    pen = QPen(colour, 2.0, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
               Qt.PenJoinStyle.RoundJoin)
    p.setPen(pen)
    box = QRectF(2, 2, s - 4, s - 4)
    match name:
        case "running":
            p.setBrush(colour)
            p.drawPolygon(QPolygonF([QPointF(4, 2.5), QPointF(13.5, 8), QPointF(4, 13.5)]))
        case "needs-input":
            p.setBrush(colour)
            p.drawEllipse(box)
            p.setPen(QColor("white"))
            font = QFont()
            font.setPixelSize(11)
            font.setBold(True)
            p.setFont(font)
            p.drawText(box, Qt.AlignmentFlag.AlignCenter, "?")
        case "quota-blocked":
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawEllipse(box)
            p.drawLine(QPointF(4.5, 11.5), QPointF(11.5, 4.5))
        case "waiting":  # an hourglass
            p.setBrush(colour)
            p.drawPolygon(QPolygonF([QPointF(4, 2.5), QPointF(12, 2.5), QPointF(8, 8),
                                     QPointF(12, 13.5), QPointF(4, 13.5), QPointF(8, 8)]))
        case "handed-off":
            p.drawLine(QPointF(2.5, 8), QPointF(13, 8))
            p.drawPolyline(QPolygonF([QPointF(9, 4), QPointF(13, 8), QPointF(9, 12)]))
        case "done":
            p.drawPolyline(QPolygonF([QPointF(3, 8.5), QPointF(6.5, 12), QPointF(13, 4)]))
        case "failed":
            p.drawLine(QPointF(4, 4), QPointF(12, 12))
            p.drawLine(QPointF(12, 4), QPointF(4, 12))
        case "cancelled":
            p.setBrush(colour)
            p.drawRect(QRectF(4, 4, 8, 8))
        case "interrupted":
            p.setBrush(colour)
            p.drawRect(QRectF(4, 3, 2.5, 10))
            p.drawRect(QRectF(9.5, 3, 2.5, 10))
        case _:  # pending, starting: a ring
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawEllipse(box)
