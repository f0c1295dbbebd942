"""What the next agent is told: a continuation contract built from the session.

Everything comes from what the session really shows — the task, the agent's
last messages, the files it wrote and the commands it ran (from the stored
events), its own plan and any write it was cut off in (:mod:`relay.sessions.intent`),
the last result of each acceptance check Relay's verifier ran, and the files that
differ from where the session started (from git). A failing check comes first in
the next action: the contract never presents red work as done.

Decisions and constraints the knowledge graph lifted from the session (what the agent
said it chose, what the user or the agent said must hold — :mod:`relay.sessions.facts`)
are added to the contract's own when the caller passes them (:class:`KnownFacts`), each
once: an item already there — equal to, or part of, one of the contract's items
(``Earlier agent: <its message>``), ignoring case, spacing and end punctuation — is left
out.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import pygit2

from relay.core.events import AgentEvent, EventRecord, ToolCall, ToolResult, VerifyResult
from relay.core.present import args_summary, clip
from relay.sessions.contract import (
    ContractV2,
    InFlightCode,
    InstructionInForce,
    file_manifest,
    new_contract_id,
)
from relay.sessions.facts import normalised
from relay.sessions.instructions import discover, placements
from relay.sessions.intent import IN_PROGRESS, WRITE_TOOLS, in_flight_code, plan_lists, written
from relay.sessions.snapshot import trailers_of
from relay.sessions.worktree import git_boundary

_SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command", "local_shell"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
MAX_ITEMS = 25
#: how much of a failing check's output (its end) the next action / a constraint quotes
NEXT_ACTION_OUTPUT = 600
CONSTRAINT_OUTPUT = 2000


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


@git_boundary
def changed_paths(worktree: Path, snapshot_sha: str, base_sha: str | None = None) -> list[str]:
    """Files that differ between the session's starting commit (``base_sha`` when given)
    and the snapshot."""
    repo = pygit2.Repository(str(worktree))
    snap = repo.revparse_single(snapshot_sha).peel(pygit2.Commit)
    base = (repo.revparse_single(base_sha).peel(pygit2.Commit) if base_sha
            else session_base(repo, snap))
    if base.id == snap.id:
        return []
    diff = repo.diff(base, snap)
    skip_modes = (pygit2.GIT_FILEMODE_LINK, pygit2.GIT_FILEMODE_COMMIT)  # links, submodules
    return sorted({d.new_file.path for d in diff.deltas
                   if d.status_char() != "D" and d.new_file.mode not in skip_modes})


def last_messages(events: Sequence[AgentEvent], count: int = 3) -> list[str]:
    texts = [e.text for e in events if e.kind == "assistant_text" and not e.reasoning]
    return [clip(t, 600) for t in texts[-count:]]


def _succeeded(result: ToolResult | None) -> bool:
    """A tool call with a result that is not an error (nor a non-zero exit)."""
    return result is not None and result.is_error is not True and result.exit_code in (None, 0)


def _done_items(events: Sequence[AgentEvent], worktree: Path, checks: frozenset[str]) -> list[str]:
    """Files written and commands run successfully, each once, the most recent last.

    Running an acceptance check (``checks``, shell-quoted) is never "done": the next
    agent must run it again.
    """
    results = {e.call_id: e for e in events if e.kind == "tool_result"}
    items: dict[str, None] = {}  # ordered set: a repeated item moves to the end
    for event in events:
        if event.kind != "tool_call" or not _succeeded(results.get(event.call_id)):
            continue
        item = _done_item(event, worktree, checks)
        if item is not None:
            items.pop(item, None)
            items[item] = None
    return list(items)[-MAX_ITEMS:]


def done_items(events: Sequence[AgentEvent], worktree: Path) -> list[str]:
    """The work a contract lists as done: files written, commands run successfully."""
    return _done_items(events, worktree, frozenset())


def _done_item(call: ToolCall, worktree: Path, checks: frozenset[str]) -> str | None:
    if call.name in WRITE_TOOLS:
        paths = ", ".join(path for path, _ in written(call, worktree))
        return f"{call.name}: {clip(paths, 160) if paths else args_summary(call.input, 160)}"
    command = command_text(call.input) if call.name in _SHELL_TOOLS else None
    if command is not None and command not in checks:
        return f"ran {_quoted(clip(command, 160))} successfully"
    return None


def command_text(tool_input: dict[str, Any]) -> str:
    """The command of a shell tool call, without codex's ``/bin/bash -lc '…'`` wrapper."""
    raw = tool_input.get("command", tool_input.get("cmd"))
    if isinstance(raw, list):
        argv = [str(arg) for arg in raw]
    elif isinstance(raw, str):
        try:
            argv = shlex.split(raw)
        except ValueError:
            return raw
    else:
        return args_summary(tool_input, 160)
    if len(argv) == 3 and PurePath(argv[0]).name in _SHELLS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return raw if isinstance(raw, str) else shlex.join(argv)


# --- acceptance checks ------------------------------------------------------------------

def _acceptance(acceptance: Sequence[Sequence[str]],
                events: Sequence[AgentEvent]) -> tuple[list[str], list[VerifyResult]]:
    """The checks (shell-quoted), and the last result of each check that has one.

    The task's verify commands decide which checks count; without them, the commands
    Relay's verifier ran in this session do.
    """
    last: dict[tuple[str, ...], VerifyResult] = {}
    for event in events:
        if event.kind == "verify_result":
            last[tuple(event.command)] = event
    argvs = (_split(c) if isinstance(c, str) else tuple(c) for c in acceptance)
    commands = list(dict.fromkeys(c for c in argvs if c)) or list(last)
    return [shlex.join(c) for c in commands], [last[c] for c in commands if c in last]


def _split(command: str) -> tuple[str, ...]:
    """A stored command line as its arguments; one that does not split stays whole."""
    try:
        return tuple(shlex.split(command))
    except ValueError:  # an unbalanced quote: shown as written
        return (command,)


def _how_it_failed(result: VerifyResult) -> str:
    if result.exit_code is not None:
        return f"failed (exit {result.exit_code})"
    return f"failed ({result.problem})" if result.problem else "failed"


def _failure_sentence(result: VerifyResult) -> str:
    tail = _tail(result.output, NEXT_ACTION_OUTPUT)
    return (f"The acceptance check {_quoted(shlex.join(result.command))} {_how_it_failed(result)}"
            f"{f': {tail}' if tail else ''}. Fix it.")


def _failure_constraint(result: VerifyResult) -> str:
    tail = _tail(result.output, CONSTRAINT_OUTPUT)
    line = (f"The work is not done while {_quoted(shlex.join(result.command))} fails; Relay's "
            f"last run of it {_how_it_failed(result)}")
    return f"{line} with this output:\n{tail}" if tail else f"{line}."


def _tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-(limit - 1):].lstrip()


def _quoted(text: str) -> str:
    """``text`` as a Markdown code span."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


# --- the contract -----------------------------------------------------------------------

#: how each handoff reason reads after "Continue the task"
_REASONS = {
    "usage_limit": " after the previous agent hit a usage limit",
    "rate_limit": " after the previous agent hit a rate limit",
    "quota": " after the previous agent ran out of quota",
    "overloaded": " after the previous agent's provider was overloaded",
    "verify_failed": " after the previous agent's work failed its acceptance checks",
    "requested by the user": " (the user handed it over from the previous agent)",
    "fork": (" in a fork of the earlier session, from this snapshot (what the earlier "
             "session did after it is not here)"),
}


def _why(reason: str | None) -> str:
    if not reason:
        return ""
    if reason.startswith("pre-emptive"):
        return " before the previous agent's account reached its limit"
    return _REASONS.get(reason, f" (handed over: {reason.replace('_', ' ')})")


def next_action(*, reason: str | None, failing: list[VerifyResult], in_flight: list[InFlightCode],
                 remaining: list[str], last_message: str | None) -> str:
    why = _why(reason)
    parts = [_failure_sentence(r) for r in failing]
    parts.append(f"{'Then continue' if failing else 'Continue'} the task{why}. Check the work "
                 "already in this worktree, then finish what is left.")
    if in_flight:
        paths = ", ".join(_quoted(item.path) for item in in_flight)
        parts.append(f"The previous agent was cut off while writing {paths}: check whether that "
                     "change is complete.")
    if remaining:
        step = remaining[0]
        parts.append(f"It was working on: {step.removeprefix(IN_PROGRESS)}."
                     if step.startswith(IN_PROGRESS) else f"Next on its plan: {step}.")
    if last_message:
        caveat = " (if it says the work is done, it is not: a check failed)" if failing else ""
        parts.append(f"The previous agent's last message{caveat} was: {last_message}")
    return " ".join(parts)


@dataclass(frozen=True)
class KnownFacts:
    """Decisions and constraints the knowledge graph holds for a session, oldest first."""

    decisions: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()


def _merged(own: list[str], known: Iterable[str]) -> list[str]:
    """``own`` followed by each ``known`` item not already there (see the module docstring)."""
    seen = [normalised(item) for item in own]
    out = list(own)
    for item in known:
        key = normalised(item)
        if key and not any(key in there for there in seen):
            seen.append(key)
            out.append(item)
    return out


def instructions_in_force(worktree: Path, events: Sequence[AgentEvent]) -> list[InstructionInForce]:
    """The project instruction files in force for each runtime that ran in the session (in
    the order they ran), and how each reached it, hashed as they are at the snapshot."""
    runtimes = dict.fromkeys(e.runtime for e in events if e.kind == "session_started" and e.runtime)
    if not runtimes:
        return []
    found = discover(worktree)
    return [InstructionInForce(path=p.file.path, sha256=p.file.sha256, runtime=p.runtime, how=p.how)
            for runtime in runtimes for p in placements(runtime, found)]


def build_contract(*, session_id: str, task: str, records: Sequence[EventRecord], worktree: Path,
                   branch: str | None, snapshot_sha: str, reason: str | None,
                   acceptance: Sequence[Sequence[str]] = (),
                   facts: KnownFacts | None = None, base_sha: str | None = None) -> ContractV2:
    """A v2 contract for the next agent (unsigned).

    ``acceptance`` is the task's verify commands (argument arrays); a failing last
    verifier result for one of them comes first in the next action. ``facts`` adds the
    knowledge graph's decisions and constraints for the session; ``base_sha``: where the
    session's work started, when ``worktree`` is not the session's own (a fork's).
    """
    facts = facts or KnownFacts()
    events = [r.event for r in records]
    last = last_messages(events)
    plan, remaining = plan_lists(events)
    in_flight = in_flight_code(events, worktree)
    checks, checked = _acceptance(acceptance, events)
    failing = [r for r in checked if not r.passed]
    passed = [f"The acceptance check {_quoted(shlex.join(r.command))} passed when Relay last ran it."
              for r in checked if r.passed]
    paths = changed_paths(worktree, snapshot_sha, base_sha)
    return ContractV2(
        contract_id=new_contract_id(), session_id=session_id, task_goal=task,
        next_action=next_action(reason=reason, failing=failing, in_flight=in_flight,
                                 remaining=remaining, last_message=last[-1] if last else None),
        do_not_redo=_done_items(events, worktree, frozenset(checks)),
        acceptance_assertions=[f"{_quoted(c)} exits 0" for c in checks],
        file_manifest=file_manifest(worktree, paths),
        decisions=_merged([f"Earlier agent: {m}" for m in last[:-1]] + passed, facts.decisions),
        constraints=_merged([
            f"Work only in this git worktree{f' (branch {branch})' if branch else ''}; "
            "the work so far is committed there.",
            "Do not undo or redo the previous agent's work unless it is wrong.",
            *(_failure_constraint(r) for r in failing),
        ], facts.constraints),
        snapshot_commit_sha=snapshot_sha, initial_prompt=task, plan=plan,
        tasks_remaining=remaining, in_flight_code=in_flight,
        instructions=instructions_in_force(worktree, events))


def continuation_prompt(contract_markdown: str) -> str:
    """The prompt the receiving agent starts with."""
    return (f"{contract_markdown.rstrip()}\n\n---\nYou are taking over this task from another "
            "agent. Read the continuation contract above and continue the work.")
