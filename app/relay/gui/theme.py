"""Colours and small style sheets shared by the docks (one place to retheme)."""

from __future__ import annotations

TEXT = "#1f2328"
MUTED = "#6e7781"
ERROR = "#cf222e"
WARNING = "#9a6700"
ACCENT = "#0969da"
OK = "#1a7f37"
#: the Wallet's plots: background and grid (dark: "#0d1117", "#30363d")
CHART_BG = "#ffffff"  # new role (h-plots)
CHART_GRID = "#d0d7de"  # new role (h-plots)

SIMULATION_BG = "#fff1c2"
SIMULATION_BORDER = "#d4a72c"
SIMULATION_TEXT = "#7d4e00"

STATE_COLOURS = {
    "pending": MUTED, "starting": ACCENT, "running": ACCENT, "needs_input": WARNING,
    "waiting": WARNING, "completed": OK,
    "failed": ERROR, "cancelled": MUTED, "interrupted": WARNING,
}
#: a hooked agent session's live state (relay.core.live), e.g. on a board card
LIVE_COLOURS = {
    "working": ACCENT, "needs_input": WARNING, "idle": TEXT, "quota_blocked": ERROR,
    "ended": MUTED,
}

#: (badge background, text colour) per stream row style (see event_text.style_key).
ROW_STYLES: dict[str, tuple[str, str]] = {
    "assistant_text": ("#ddf4ff", TEXT),
    "reasoning": ("#eaeef2", MUTED),
    "tool_call": ("#fbefff", "#6639ba"),
    "tool_result": ("#dafbe1", TEXT),
    "tool_error": ("#ffebe9", ERROR),
    "permission_denied": ("#ffebe9", ERROR),
    "turn_completed": ("#f6f8fa", MUTED),
    "session_started": ("#f6f8fa", MUTED),
    "state_changed": ("#f6f8fa", MUTED),
    "session_ended": ("#dafbe1", OK),
    "ended_bad": ("#ffebe9", ERROR),
    "needs_input": ("#fff8c5", WARNING),
    "input_withdrawn": ("#f6f8fa", MUTED),
    "notice": ("#fff8c5", WARNING),
    "warning": ("#fff8c5", WARNING),
    "limit_hit": ("#fff1c2", "#7d4e00"),
    "error": ("#ffebe9", ERROR),
    "message": ("#ddf4ff", "#0550ae"),
}

#: styles whose summary is dimmed, and those whose summary takes the badge colour.
DIMMED_STYLES = frozenset({"reasoning", "turn_completed", "state_changed", "session_started",
                           "input_withdrawn"})
COLOURED_TEXT_STYLES = frozenset({"message", "tool_error", "error", "limit_hit", "ended_bad",
                                  "permission_denied", "tool_call", "warning", "notice"})

#: full-row banner background for limit hits and fatal errors.
BANNER_BG = {"limit_hit": "#fff1c2", "error": "#ffebe9"}

SIMULATION_BANNER_CSS = (
    f"QLabel {{ background: {SIMULATION_BG}; color: {SIMULATION_TEXT};"
    f" border: 1px solid {SIMULATION_BORDER}; border-radius: 4px; padding: 6px 10px;"
    " font-weight: bold; }"
)
ERROR_LABEL_CSS = (
    f"QLabel {{ background: #ffebe9; color: {ERROR}; border: 1px solid #ff8182;"
    " border-radius: 4px; padding: 4px 8px; }"
)
HEADER_CSS = ("QFrame#streamHeader { background: #f6f8fa; border: 1px solid #d0d7de;"
              " border-radius: 6px; }")
WAIT_LABEL_CSS = (
    f"QLabel {{ background: #fff8c5; color: {WARNING}; border: 1px solid #d4a72c;"
    " border-radius: 4px; padding: 4px 8px; font-weight: bold; }"
)
INFO_LABEL_CSS = (
    f"QLabel {{ background: #ddf4ff; color: {TEXT}; border: 1px solid #54aeff;"
    " border-radius: 4px; padding: 4px 8px; }"
)
#: the contract view's signature line per status (see gui.contract_check)
SIGNATURE_CSS = {
    "verified": f"QLabel {{ color: {OK}; font-weight: bold; }}",
    "simulated": f"QLabel {{ color: {WARNING}; font-weight: bold; }}",
    "tampered": f"QLabel {{ color: {ERROR}; font-weight: bold; }}",
    "unreadable": f"QLabel {{ color: {ERROR}; font-weight: bold; }}",
    "unchecked": f"QLabel {{ color: {WARNING}; font-weight: bold; }}",
}
PLACEHOLDER_CSS = f"QLabel {{ color: {MUTED}; font-size: 15px; }}"
#: a dock's one-line note, by tone
NOTE_CSS = {
    "ok": f"QLabel {{ color: {OK}; }}",
    "warning": f"QLabel {{ color: {WARNING}; font-weight: bold; }}",
    "error": f"QLabel {{ color: {ERROR}; }}",
    "info": f"QLabel {{ color: {TEXT}; }}",
}
