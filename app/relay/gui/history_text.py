"""The History dock's words: a timeline as a tree of nodes, and what each node shows (Qt-free).

:func:`timeline_nodes` turns a :class:`~relay.history.model.Timeline` into the tree
the dock's left side shows: "Whole session" first, then one node per stint (its
chain entry, e.g. ``claude:work``, and how it ended) holding that stint's entries
in time order — runs, commits, verifier results, handoffs, review comments — and
last the entries that belong to no stint. :class:`DiffSource` says which diff a
node shows (a commit's own, its stint's, or the whole session's) and which commit
"Rewind here" and a comment on that diff are about.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from relay.history.model import FinishSummary, Stint, Timeline, TimelineEntry

NodeKind = Literal["session", "stint", "entry"]
Tone = Literal["", "ok", "error", "warning", "muted", "accent"]

_ICONS = {"run": "▶", "handoff": "⇄", "verify": "✓", "state": "■", "commit": "●",
          "review": "✎", "pipeline": "◆"}
_FAILED_STATES = ("failed", "cancelled", "interrupted")


@dataclass(frozen=True)
class DiffSource:
    """Which diff a node shows."""

    kind: Literal["session", "stint", "commit"]
    stint: int | None = None
    sha: str | None = None


@dataclass(frozen=True)
class Node:
    key: str
    kind: NodeKind
    title: str
    detail: str
    source: DiffSource
    #: the commit "Rewind here" would branch from (None: this node has none)
    rewind_sha: str | None
    tone: Tone = ""
    entry: TimelineEntry | None = None
    children: tuple[Node, ...] = ()


def tip_sha(line: Timeline) -> str | None:
    """The session branch's last commit (its base when it has none)."""
    return line.commits[-1].sha if line.commits else line.base_sha


def short(sha: str | None) -> str:
    return sha[:10] if sha else "—"


def timeline_nodes(line: Timeline) -> list[Node]:
    """The tree the dock shows; see the module documentation."""
    nodes = [_session_node(line)]
    for stint in line.stints:
        own = [(i, e) for i, e in enumerate(line.entries) if e.stint == stint.index]
        handed = handed_off(e for _, e in own)
        children = _entry_nodes(own)
        if handed:
            children = tuple(_paused(node, handed) for node in children)
        nodes.append(_stint_node(stint, children, handed))
    nodes.extend(_entry_nodes([(i, e) for i, e in enumerate(line.entries)
                               if e.stint is None or not 0 <= e.stint < len(line.stints)]))
    return nodes


def _entry_nodes(entries: list[tuple[int, TimelineEntry]]) -> tuple[Node, ...]:
    """One node per entry, but one per handoff: its consecutive steps fold into the last."""
    nodes: list[Node] = []
    steps: list[tuple[int, TimelineEntry]] = []
    for index, entry in entries:
        if steps and (entry.kind != "handoff" or _route(steps[-1][1]) != _route(entry)):
            nodes.append(_handoff_node(steps))
            steps = []
        if entry.kind == "handoff":
            steps.append((index, entry))
        else:
            nodes.append(_entry_node(entry, index))
    if steps:
        nodes.append(_handoff_node(steps))
    return tuple(nodes)


def _route(entry: TimelineEntry) -> str:
    return entry.title.rsplit(":", 1)[0]


def _handoff_node(steps: list[tuple[int, TimelineEntry]]) -> Node:
    """A handoff's steps as one node: the last step's title, every step in the detail."""
    last = steps[-1][1]
    node = _entry_node(last, steps[0][0])
    lines = [f"{e.at.astimezone().strftime('%H:%M:%S')}  {e.title.rsplit(': ', 1)[-1]}"
             + (f" — {e.detail.strip()}" if e.detail.strip() else "") for _, e in steps]
    audited = [e.audited for _, e in steps]
    note = "not all in the audit log" if False in audited else (
        "in the audit log" if all(audited) else "")
    tone: Tone = "error" if any(_tone(e) == "error" for _, e in steps) else node.tone
    return Node(node.key, "entry", node.title, "\n".join([*lines, note] if note else lines),
                node.source, None, tone, last)


def handed_off(entries: Iterable[TimelineEntry]) -> str | None:
    """How a stint ended when a handoff took its task on: "handed off → codex", or "handed
    off (pre-emptive) → codex" when the wallet handed off before the limit; None when no
    handoff from it got done."""
    steps = [e for e in entries if e.kind == "handoff"]
    done = [e for e in steps if e.title.endswith(": done")]
    if not done:
        return None
    early = any(e.detail.strip().startswith("pre-emptive") for e in steps)
    to = _route(done[-1]).split(" → ", 1)[-1]
    return f"handed off{' (pre-emptive)' if early else ''} → {to}"


def _paused(node: Node, handed: str) -> Node:
    """A handed-off stint's run end: the agent was stopped for the handoff, not failed."""
    entry = node.entry
    if entry is None or entry.kind != "run" or " ended: " not in entry.title:
        return node
    who = entry.title.split(" ended: ", 1)[0]
    return dataclasses.replace(node, title=f"{_ICONS['run']} {who} {handed}", tone="muted")


def _session_node(line: Timeline) -> Node:
    commits = len(line.commits)
    parts = [line.state, f"{commits} commit{'s' * (commits != 1)}"]
    if line.uncommitted:
        parts.append(f"{line.uncommitted} file{'s' * (line.uncommitted != 1)} not committed")
    return Node("session", "session", "Whole session", " · ".join(parts), DiffSource("session"),
                tip_sha(line) if line.commits else None, "accent")


def _stint_node(stint: Stint, entries: tuple[Node, ...], handed: str | None = None) -> Node:
    outcome = handed or stint.outcome or "running"
    runs = len(stint.run_ids)
    ended = stint.ended_at.astimezone().strftime("%H:%M:%S") if stint.ended_at else "…"
    detail = (f"{stint.runtime} · {runs} run{'s' * (runs != 1)} · "
              f"{stint.started_at.astimezone().strftime('%H:%M:%S')}–{ended} · "
              f"{short(stint.start_sha)}..{short(stint.end_sha) if stint.end_sha else 'uncommitted'}")
    tone: Tone = ("" if handed else "error" if outcome in _FAILED_STATES else
                  "ok" if outcome == "completed" else "")
    return Node(f"stint:{stint.index}", "stint", f"{stint.index + 1} · {stint.entry} — {outcome}",
                detail, DiffSource("stint", stint=stint.index), stint.end_sha, tone,
                children=entries)


def _entry_node(entry: TimelineEntry, index: int) -> Node:
    icon = _ICONS.get(entry.kind, "·")
    if entry.kind == "verify" and "failed" in entry.title:
        icon = "✗"
    when = entry.at.astimezone().strftime("%H:%M:%S")
    title = f"{icon} {entry.title}"
    if entry.kind == "commit" and entry.sha:
        title += f"  [{entry.sha[:7]}]"
    if entry.kind in ("commit", "review") and entry.sha:
        source = DiffSource("commit", entry.stint, entry.sha)
    elif entry.stint is not None:
        source = DiffSource("stint", stint=entry.stint)
    else:
        source = DiffSource("session")
    rewind = entry.sha if entry.kind == "commit" else None
    key = f"commit:{entry.sha}" if entry.kind == "commit" else f"entry:{entry.kind}:{index}"
    detail = "\n".join(x for x in (when, entry.detail.strip(), _audit_note(entry)) if x)
    return Node(key, "entry", title, detail, source, rewind, _tone(entry), entry)


def _audit_note(entry: TimelineEntry) -> str:
    if entry.audited is False:
        return "not in the audit log"
    return "in the audit log" if entry.audited else ""


def _tone(entry: TimelineEntry) -> Tone:
    title = entry.title.lower()
    if entry.kind in ("verify", "handoff", "state", "run") and any(
            word in title for word in _FAILED_STATES):
        return "error"
    if entry.kind == "verify":
        return "ok"
    if entry.kind == "commit":
        return "accent"
    if entry.kind == "review":
        return "warning"
    return "muted" if entry.kind == "run" else ""


def source_title(source: DiffSource, line: Timeline) -> str:
    """What the diff on the right is, in words."""
    if source.kind == "commit" and source.sha:
        subject = next((c.subject for c in line.commits if c.sha == source.sha), "")
        return f"Commit {short(source.sha)} — {subject}" if subject else f"Commit {short(source.sha)}"
    if source.kind == "stint" and source.stint is not None and source.stint < len(line.stints):
        stint = line.stints[source.stint]
        return (f"What {stint.entry} changed (stint {stint.index + 1}: "
                f"{short(stint.start_sha)}..{short(stint.end_sha) if stint.end_sha else 'worktree'})")
    uncommitted = " and the uncommitted work" if line.uncommitted else ""
    return f"The whole session: {line.base_branch or 'base'} @ {short(line.base_sha)} → tip{uncommitted}"


def comment_sha(source: DiffSource, line: Timeline) -> str | None:
    """The commit a comment on this diff is attached to (its thread stays with it)."""
    if source.kind == "commit":
        return source.sha
    if source.kind == "stint" and source.stint is not None and source.stint < len(line.stints):
        return line.stints[source.stint].end_sha or tip_sha(line)
    return tip_sha(line)


def header_text(line: Timeline) -> str:
    task = line.task.strip().splitlines()[0] if line.task.strip() else "(no task)"
    branch = line.branch or "(ran in place)"
    base = f" from {line.base_branch}" if line.base_branch else ""
    return f"{task} — {line.state} · {branch}{base}"


def audit_text(line: Timeline) -> tuple[str, Tone]:
    if line.audit_ok is None:
        return "", ""
    if line.audit_ok:
        return "audit log: chain intact", "ok"
    return f"AUDIT LOG BROKEN: {line.audit_problem or 'the chain does not verify'}", "error"


def summary_text(summary: FinishSummary) -> str:
    """The finish dialog's opening lines."""
    base = summary.base_branch or "(no base branch)"
    files = len(summary.files)
    added = sum(f[2] for f in summary.files)
    deleted = sum(f[3] for f in summary.files)
    lines = [f"Branch {summary.branch} — {summary.commits} commit{'s' * (summary.commits != 1)}, "
             f"{files} file{'s' * (files != 1)} changed (+{added} −{deleted}) against {base}"
             + (f" @ {short(summary.base_sha)}" if summary.base_sha else "") + "."]
    lines.extend(f"• {s}" for s in summary.stints)
    return "\n".join(lines)
