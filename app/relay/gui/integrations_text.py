"""The Integrations dialog's words for a folder's check, its plan and what was done
(Qt-free; the same facts ``relay-cli setup claude`` prints)."""

from __future__ import annotations

from collections.abc import Sequence

from relay.board.claude_setup import Applied, Check, Plan
from relay.core.termsafe import terminal_safe

_MARKS = {"ok": "✓", "missing": "✗", "stale": "!", "conflict": "!"}


def status(check: Check) -> str:
    """The folder's Relay column: set up, partly set up (what is off), or not set up."""
    if check.ok:
        return "set up"
    present = [i for i in check.items if i.state != "missing"]
    if not present:
        return "not set up"
    off = sum(1 for i in check.items if i.state != "ok")
    return f"partly set up ({off} to fix)"


def check_text(check: Check) -> str:
    """What is and is not in place, one line per entry, and where the host runs."""
    lines = [f"{_MARKS.get(i.state, '?')} {i.what}: {i.state}" + (f" — {i.detail}" if i.detail
                                                                   else "")
             for i in check.items]
    lines += ["", f"settings: {check.target.settings}",
              f"MCP servers: {check.target.state_file}",
              f"host: runs at {check.host_url}" if check.host_url
              else "host: not running (the hooks stay silent until it runs)"]
    if not check.ok:
        lines += ["", "Set up adds what is missing and fixes what is stale."]
    return terminal_safe("\n".join(lines))


def plan_text(plan: Plan) -> str:
    """What Set up would do there (nothing is changed yet)."""
    lines = [f"{i.action:>8}  {i.what}" + (f" — {i.detail}" if i.detail else "")
             for i in plan.items]
    lines += ["", f"settings: {plan.target.settings}", f"MCP servers: {plan.target.state_file}",
              "", "A backup of each file is taken first; your own settings and hooks stay as "
              "they are." if plan.changes else "Nothing to change."]
    return terminal_safe("\n".join(lines))


def remove_text(check: Check) -> str:
    """What Remove would take out: Relay's entries that are there (nothing else)."""
    found = [i for i in check.items if i.state in ("ok", "stale")]
    if not found:
        return "Relay has no entries in this folder: nothing to remove."
    lines = [f"  remove  {i.what}" for i in found]
    lines += ["", f"settings: {check.target.settings}", f"MCP servers: {check.target.state_file}",
              "", "A backup of each file is taken first; only Relay's entries are taken out."]
    return terminal_safe("\n".join(lines))


def applied_text(done: Sequence[Applied]) -> str:
    lines: list[str] = []
    for applied in done:
        lines += [f"backup: {path}" for path in applied.backups]
        lines += [f"written: {path}" for path in applied.written]
        if not applied.written:
            lines.append("Nothing needed changing.")
        elif not applied.plan.remove:
            lines.append("Restart Claude Code sessions to use them.")
    return terminal_safe("\n".join(lines))
