"""Plain renderings of the time machine's data for the CLI and the MCP server (Qt-free)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from relay.core.models import ForkOrigin
from relay.history.diffmodel import FileDiff, totals
from relay.history.model import ReviewComment, Timeline, TimelineEntry
from relay.history.runs import RunTimeline

_MARK = {"context": " ", "add": "+", "del": "-"}


def jsonable(value: Any) -> Any:
    """Dataclasses, datetimes, tuples and dicts as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def diff_text(files: Sequence[FileDiff]) -> Iterator[str]:
    """The diff as unified-diff lines (``diff --git`` headers, hunks, +/- lines)."""
    for f in files:
        old = f.old_path or f.path
        yield f"diff --git a/{old} b/{f.path}"
        if f.status == "renamed":
            yield f"rename from {old}"
            yield f"rename to {f.path}"
        if f.binary:
            yield f"Binary files a/{old} and b/{f.path} differ"
            continue
        yield f"--- {'/dev/null' if f.status == 'added' else 'a/' + old}"
        yield f"+++ {'/dev/null' if f.status == 'deleted' else 'b/' + f.path}"
        for hunk in f.hunks:
            yield hunk.header
            for line in hunk.lines:
                yield line.text if line.kind == "note" else f"{_MARK[line.kind]}{line.text}"


def diff_stat(files: Sequence[FileDiff]) -> list[str]:
    width = max((len(f.label) for f in files), default=0)
    out = [f" {f.label:<{width}} | {f.status:<9} +{f.additions} -{f.deletions}"
           + (" (binary)" if f.binary else "") for f in files]
    added, deleted = totals(list(files))
    out.append(f" {len(files)} file{'s' * (len(files) != 1)} changed, +{added} -{deleted}")
    return out


def timeline_lines(line: Timeline) -> list[str]:
    """A readable timeline: the stints, then every entry in time order."""
    out = [f"Session {line.session_id} · {line.state} · branch {line.branch or '(in place)'}"
           + (f" from {line.base_branch}" if line.base_branch else "")
           + (f" @ {line.base_sha[:10]}" if line.base_sha else "")]
    if line.fork_of is not None:
        out.append(f"forked from {line.fork_of.session_id} {fork_point(line.fork_of)}")
    out.extend(f"forked as {child.session_id} {fork_point(child.origin)} · {child.state}"
               for child in line.forks)
    if line.audit_ok is False:
        out.append(f"AUDIT LOG BROKEN: {line.audit_problem} — `relay-cli audit verify`")
    elif line.audit_ok:
        out.append("audit log: chain intact")
    for s in line.stints:
        span = f"{(s.start_sha or '?')[:10]}..{(s.end_sha or 'uncommitted')[:10]}"
        out.append(f"stint {s.index + 1}: {s.entry} · {len(s.run_ids)} run(s) · "
                   f"{s.outcome or 'running'} · {span}")
    if line.uncommitted:
        out.append(f"{line.uncommitted} file(s) changed in the worktree and not committed yet")
    out.extend(_entry_line(e) for e in line.entries)
    return out


def fork_point(origin: ForkOrigin) -> str:
    """Where a fork branched and what it carries: "at 1a2b3c4d5e (turn 2, conversation)"."""
    turn = f"turn {origin.turns}, " if origin.turns is not None else ""
    return f"at {(origin.sha or '?')[:10]} ({turn}{origin.how})"


def _entry_line(e: TimelineEntry) -> str:
    when = e.at.astimezone().strftime("%H:%M:%S")
    sha = f" [{e.sha[:10]}]" if e.sha else ""
    who = f" ({e.entry})" if e.entry and e.kind in ("commit", "verify") else ""
    detail = f" — {e.detail.splitlines()[0][:100]}" if e.detail.strip() else ""
    return f"{when}  {e.kind:<8} {e.title}{who}{sha}{detail}"


def run_lines(run: RunTimeline) -> list[str]:
    """A pipeline run: its steps, then the lease log and the steps' sessions in time order."""
    out = [f"Pipeline run {run.run_id} ({run.name}) · {run.state}"
           + (f": {run.reason}" if run.reason else "")
           + (f" · result on {run.result_branch}" if run.result_branch else "")]
    for step in run.steps:
        session = f" · session {step.session_id}" if step.session_id else ""
        commit = f" · {step.commit[:10]}" if step.commit else ""
        out.append(f"step {step.node_id}: {step.state} (attempt {step.attempt}){session}{commit}"
                   + (f" — {step.error}" if step.error else ""))
    out.extend(_entry_line(e) for e in run.entries)
    return out


def comment_lines(comments: Sequence[ReviewComment]) -> list[str]:
    out = []
    for c in comments:
        side = " (old)" if c.side == "old" else ""
        out.append(f"{c.created_at.astimezone():%Y-%m-%d %H:%M}  {c.path}:{c.line}{side} "
                   f"@ {c.sha[:10]}  [{c.state}]")
        if c.excerpt:
            out.append(f"    > {c.excerpt}")
        out.extend(f"    {part}" for part in c.body.splitlines())
    return out
