"""Rendering event records for a terminal (rich) or as JSON lines."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from relay.cli.hints import cli
from relay.core.events import EventRecord, Usage, record_json
from relay.core.models import SessionRow
from relay.core.present import SIMULATION_LABEL, clip, end_state, summary, usage_line
from relay.core.termsafe import json_text, terminal_safe

_STYLE = {
    "session_started": ("●", "cyan"), "assistant_text": ("›", "white"),
    "tool_call": ("⚙", "yellow"), "tool_result": ("↳", "dim"),
    "permission_denied": ("⛔", "red"), "turn_completed": ("✓", "green"),
    "needs_input": ("?", "magenta"), "input_withdrawn": ("?", "dim"),
    "limit_hit": ("⏸", "bold red"), "notice": ("…", "blue"), "error": ("✗", "red"),
    "session_ended": ("■", "bold"), "state_changed": ("·", "dim"),
    "verify_result": ("☑", "green"), "board_changed": ("▦", "cyan"),
    "live_state": ("◉", "blue"), "guard_decision": ("⛨", "bold red"),
    "message": ("»", "bold cyan"),
}


class StreamPrinter:
    """Prints records as they arrive; keeps the session's running usage."""

    def __init__(self, console: Console, as_json: bool = False, out: TextIO | None = None) -> None:
        self.console = console
        self.as_json = as_json
        self.out = out
        self.usage = Usage()
        self._simulated_announced = False

    def print(self, record: EventRecord) -> None:
        event = record.event
        if event.kind == "turn_completed":
            self.usage = self.usage + event.usage
        if self.as_json:
            self._json(record)
            return
        if event.simulated and not self._simulated_announced:
            self._simulated_announced = True
            self.console.print(f"[reverse bold yellow] {SIMULATION_LABEL} [/]")
        icon, style = _STYLE.get(event.kind, ("·", "white"))
        text = summary(event)
        if event.kind == "assistant_text":
            style = "dim italic" if event.reasoning else style
            text = clip(text, 2000)
        prefix = "[sim] " if event.simulated else ""
        text = terminal_safe(text).replace("\n", "\n    ")
        self.console.print(f"[{style}]{icon} {escape(prefix + text)}[/]", highlight=False)

    def _json(self, record: EventRecord) -> None:
        line = json_text(record_json(record))
        if self.out is not None:
            self.out.write(line + "\n")
            self.out.flush()
        else:
            print(line, flush=True)


def session_footer(console: Console, row: SessionRow) -> None:
    colour = {"completed": "green", "failed": "red", "cancelled": "yellow"}.get(row.state, "white")
    if row.refused_calls and row.state == "completed":
        colour = "yellow"  # it ended, but not everything it asked for was allowed
    state = end_state(row.state.upper(), row.refused_calls)  # "COMPLETED · 1 tool call refused"
    sep = " · " if row.refused_calls else " "
    console.print(f"[bold {colour}]{escape(state)}[/]{sep}session {row.id}"
                  + (f" — {escape(clip(row.reason, 200))}" if row.reason else ""))
    console.print(f"usage: {usage_line(row.usage)}")
    if row.workdir:
        where = f" (branch {row.branch})" if row.branch else ""
        console.print(f"worktree: {row.workdir}{where}")
    if row.branch and row.finished:
        console.print(f"next: {cli(f'history {row.id}')} · diff {row.id} · "
                      f"finish {row.id} --merge|--keep", markup=False)
