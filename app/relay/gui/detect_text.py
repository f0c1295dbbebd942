"""The Detect dock's detail pane as rich text: a detected session's state and lifted intent.

Plain Python (no Qt): the HTML subset Qt's rich-text engine renders (headings, tables,
lists, spans with a colour). Every piece of the session's own text is escaped. The words
come from :mod:`relay.detect.present`, as in the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from relay.detect import present as text
from relay.detect.model import DetectedSession, PlanEntry
from relay.gui import theme
from relay.wallet.present import UNKNOWN

#: at most this many items of a list are shown (the rest are counted)
LIST_LIMIT = 30
_PROMPT_CHARS = 1500
_ITEM_CHARS = 240
#: a plan step's colour role (relay.gui.theme) per status
_STATUS_COLOURS = {"completed": "OK", "in_progress": "ACCENT", "pending": "MUTED"}
_HEADING = ("<p style='margin-top:10px; margin-bottom:2px; color:{colour};"
            " font-weight:bold;'>{text}</p>")


def detail_html(s: DetectedSession, now_ms: int, state_colour: str) -> str:
    """Everything known of ``s``: state and why, the intent, usage, where it was read, and
    what could not be read."""
    parts = [_state(s, now_ms, state_colour), _prompt(s)]
    parts += [_plan(s.intent.plan), _items("Tasks remaining", s.intent.tasks_remaining),
              _items("Files touched", s.intent.files_touched, code=True),
              _items("Commands", s.intent.commands, code=True)]
    if s.intent.last_message.strip():
        parts.append(_heading("Last words") + _para(s.intent.last_message))
    parts += [_facts(s, now_ms), _problems(s.problems)]
    return "".join(p for p in parts if p)


def _heading(title: str) -> str:
    return _HEADING.format(colour=theme.MUTED, text=escape(title))


def _para(body: str, limit: int = _PROMPT_CHARS) -> str:
    clipped = body.strip() if len(body.strip()) <= limit else body.strip()[: limit - 1] + "…"
    return f"<p style='margin-top:0'>{escape(clipped).replace(chr(10), '<br>')}</p>"


def _state(s: DetectedSession, now_ms: int, colour: str) -> str:
    out = (f"<p style='margin-top:0; margin-bottom:2px; color:{colour}; font-weight:bold;'>"
           f"{escape(text.state_sentence(s, now_ms))}</p>")
    if s.why:
        out += f"<p style='margin-top:0; color:{theme.MUTED};'>{escape(s.why)}</p>"
    return out


def _prompt(s: DetectedSession) -> str:
    prompt = s.intent.initial_prompt
    if not prompt.strip():
        return _heading("Initial prompt") + f"<p style='color:{theme.MUTED}'>none recorded</p>"
    return _heading("Initial prompt") + _para(prompt)


def _plan(plan: Sequence[PlanEntry]) -> str:
    if not plan:
        return ""
    done = sum(1 for p in plan if p.status == "completed")
    rows = "".join(
        f"<tr><td style='color:{getattr(theme, _STATUS_COLOURS[p.status])}; padding-right:6px;'>"
        f"{text.PLAN_MARKS[p.status]}</td><td>"
        + (f"<b>{escape(_clip(p.text))}</b>" if p.status == "in_progress" else
           f"<span style='color:{theme.MUTED}'>{escape(_clip(p.text))}</span>"
           if p.status == "completed" else escape(_clip(p.text)))
        + "</td></tr>" for p in plan[:LIST_LIMIT])
    return (_heading(f"Plan · {done} of {len(plan)} done")
            + f"<table cellspacing='0' cellpadding='1'>{rows}</table>" + _more(len(plan)))


def _items(title: str, items: Sequence[str], *, code: bool = False) -> str:
    if not items:
        return ""
    shown = (f"<code>{escape(_clip(i))}</code>" if code else escape(_clip(i))
             for i in items[:LIST_LIMIT])
    return (_heading(f"{title} · {len(items)}")
            + "<p style='margin-top:0'>" + "<br>".join(shown) + "</p>" + _more(len(items)))


def _more(count: int) -> str:
    if count <= LIST_LIMIT:
        return ""
    return f"<p style='margin-top:0; color:{theme.MUTED}'>… and {count - LIST_LIMIT} more</p>"


def _facts(s: DetectedSession, now_ms: int) -> str:
    i = s.intent
    process = (f"pid {s.process.pid}" + (f" · {text.short_path(s.process.config_dir)}"
                                         if s.process.config_dir else "")
               if s.process else "none running")
    rows = [("Account", s.entry), ("Where", text.where(s)),
            ("Models", _joined(i.models)), ("Skills", _joined(i.skills)),
            ("MCP servers", _joined(i.mcp_servers)), ("Usage", text.usage_detail(s.usage)),
            ("Started", _when(s.started_ms, now_ms)),
            ("Last activity", _when(s.last_activity_ms, now_ms)),
            ("Process", process), ("Transcript", str(s.source)), ("Id", s.id)]
    cells = "".join(f"<tr><td style='color:{theme.MUTED}; padding-right:10px;'>{escape(k)}"
                    f"</td><td>{escape(v)}</td></tr>" for k, v in rows)
    return _heading("Session") + f"<table cellspacing='0' cellpadding='1'>{cells}</table>"


def _problems(problems: Sequence[str]) -> str:
    if not problems:
        return ""
    lines = "<br>".join(f"could not read: {escape(_clip(p))}" for p in problems[:LIST_LIMIT])
    return (_heading("Problems") + f"<p style='margin-top:0; color:{theme.ERROR}'>{lines}</p>"
            + _more(len(problems)))


def _joined(items: Sequence[str]) -> str:
    return ", ".join(items) if items else UNKNOWN


def _when(ms: int | None, now_ms: int) -> str:
    if ms is None:
        return UNKNOWN
    at = datetime.fromtimestamp(ms / 1000, UTC).astimezone().strftime("%Y-%m-%d %H:%M")
    return f"{at} ({text.age_of(ms, now_ms)} ago)"


def _clip(item: str) -> str:
    return text.one_line(item, _ITEM_CHARS)
