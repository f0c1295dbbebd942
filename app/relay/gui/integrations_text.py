"""The Integrations dialog's words for what ``check``, ``plan`` and ``apply`` return (Qt-free)."""

from __future__ import annotations

import dataclasses
from typing import Any

from relay.core.termsafe import terminal_safe


def describe(result: Any) -> str:
    """A report, a plan or what was done, as lines to read."""
    if result is None:
        return "(nothing to say)"
    for name in ("text", "describe", "lines"):
        method = getattr(result, name, None)
        if callable(method):
            out = method()
            return terminal_safe(out if isinstance(out, str) else "\n".join(map(str, out)))
    if isinstance(result, str):
        return terminal_safe(result)
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return terminal_safe("\n".join(_field_lines(dataclasses.asdict(result))))
    if isinstance(result, dict):
        return terminal_safe("\n".join(_field_lines(result)))
    return terminal_safe(str(result))


def _field_lines(fields: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, value in fields.items():
        label = name.replace("_", " ")
        if isinstance(value, list | tuple):
            lines.append(f"{label}:" if value else f"{label}: none")
            lines += [f"  • {item}" for item in value]
        else:
            lines.append(f"{label}: {value}")
    return lines


def check_status(report: Any) -> tuple[str, bool]:
    """The folder's Relay column: a word or two, and whether all is in place."""
    fields = report if isinstance(report, dict) else {
        name: getattr(report, name) for name in ("ok", "installed", "summary")
        if hasattr(report, name)}
    ok = bool(fields.get("ok", fields.get("installed", False)))
    summary = fields.get("summary")
    if isinstance(summary, str) and summary:
        return summary, ok
    return ("set up" if ok else "not set up"), ok
