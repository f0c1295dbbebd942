"""What the next agent is told: a continuation contract built from the session.

Everything comes from what the session really shows — the task, the agent's
last messages, the files it wrote and the commands it ran (from the stored
events), and the files that differ from where the session started (from git).
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from relay.core.events import AgentEvent, EventRecord
from relay.core.present import args_summary, clip
from relay.sessions.contract import ContractV2, file_manifest, new_contract_id
from relay.sessions.snapshot import trailers_of

_WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "edit_file",
                          "file_change", "apply_patch"})
_SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command"})
MAX_ITEMS = 25


def session_base(repo: pygit2.Repository, snap: pygit2.Commit) -> pygit2.Commit:
    """The commit the session branch was created from (its reflog's first entry).

    Falls back to walking back over Relay's own snapshot commits when the reflog is
    gone; the reflog also covers commits the agent made itself.
    """
    if not repo.head_is_detached:
        entries = list(repo.references[repo.head.name].log())
        if entries:
            created = entries[-1].oid_new  # the log is newest first
            if created in repo:
                return repo[created].peel(pygit2.Commit)
    base = snap
    while base.parents and "Relay-Session" in trailers_of(base):
        base = base.parents[0]
    return base


def changed_paths(worktree: Path, snapshot_sha: str) -> list[str]:
    """Files that differ between the session's starting commit and the snapshot."""
    repo = pygit2.Repository(str(worktree))
    snap = repo.revparse_single(snapshot_sha).peel(pygit2.Commit)
    base = session_base(repo, snap)
    if base.id == snap.id:
        return []
    diff = repo.diff(base, snap)
    skip_modes = (pygit2.GIT_FILEMODE_LINK, pygit2.GIT_FILEMODE_COMMIT)  # links, submodules
    return sorted({d.new_file.path for d in diff.deltas
                   if d.status_char() != "D" and d.new_file.mode not in skip_modes})


def _last_messages(events: list[AgentEvent], count: int = 3) -> list[str]:
    texts = [e.text for e in events if e.kind == "assistant_text" and not e.reasoning]
    return [clip(t, 600) for t in texts[-count:]]


def _done_items(events: list[AgentEvent]) -> list[str]:
    ok_calls = {e.call_id for e in events if e.kind == "tool_result" and e.is_error is not True}
    items = []
    for e in events:
        if e.kind != "tool_call" or e.call_id not in ok_calls:
            continue
        if e.name in _WRITE_TOOLS:
            items.append(f"{e.name}: {args_summary(e.input, 160)}")
        elif e.name in _SHELL_TOOLS:
            items.append(f"ran {args_summary(e.input, 160)}")
    return items[-MAX_ITEMS:]


def build_contract(*, session_id: str, task: str, records: list[EventRecord], worktree: Path,
                   branch: str | None, snapshot_sha: str, reason: str | None) -> ContractV2:
    """A v2 contract for the next agent (unsigned)."""
    events = [r.event for r in records]
    last = _last_messages(events)
    why = f" after the previous agent hit a {reason.replace('_', ' ')}" if reason else ""
    next_action = (f"Continue the task{why}. Check the work already in this worktree, then "
                   "finish what is left.")
    if last:
        next_action += f" The previous agent's last message was: {last[-1]}"
    paths = changed_paths(worktree, snapshot_sha)
    return ContractV2(
        contract_id=new_contract_id(), session_id=session_id, task_goal=task,
        next_action=next_action, do_not_redo=_done_items(events),
        file_manifest=file_manifest(worktree, paths),
        decisions=[f"Earlier agent: {m}" for m in last[:-1]],
        constraints=[
            f"Work only in this git worktree{f' (branch {branch})' if branch else ''}; "
            "the work so far is committed there.",
            "Do not undo or redo the previous agent's work unless it is wrong.",
        ],
        snapshot_commit_sha=snapshot_sha, initial_prompt=task)


def continuation_prompt(contract_markdown: str) -> str:
    """The prompt the receiving agent starts with."""
    return (f"{contract_markdown.rstrip()}\n\n---\nYou are taking over this task from another "
            "agent. Read the continuation contract above and continue the work.")
