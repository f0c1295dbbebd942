"""Adopt a detected session: a signed continuation brief, and a Relay session that goes on.

The lifted intent of an agent session Relay did not start (:mod:`relay.detect.lift`) and its
events (:mod:`relay.detect.stores`) become a continuation contract in the handoff's format
(:class:`~relay.sessions.contract.ContractV2`, built from the same pieces as
:func:`relay.sessions.briefing.build_contract`): the user's original request, the agent's
plan and what is left of it, why it is being adopted ("blocked by a usage limit (resets
14:05)"), what it ran and wrote successfully, the writes it was cut off in, the files it
left uncommitted with their hashes, and its last words. The contract is signed with the
vault's key, scrubbed of secrets, written to
``<data>/adopted/<runtime>-<agent session id>/<contract id>/envelope.{json,md}``, then
read back and **verified**: a contract that does not verify is never used (like a
handoff's). Its rendering is kept beside it as ``brief.md``.

The new session runs on the chosen ``runtime[:account]`` with the continuation prompt as
its task, in a worktree of the adopted session's repository made from its HEAD with its
uncommitted changes copied in (``SessionSpec.carry_uncommitted``): the user's working tree
and index are only read. ``in_place=True`` — only when the user asks — runs in the
repository itself instead (``--no-worktree``), where the changes already are.

Decisions: the contract's ``sessionId`` is the detected session's id (``runtime:id``, the
work's origin; the new Relay session records it as ``SessionSpec.adopted_from``) and its
``snapshotCommitSHA`` the repository's HEAD — the uncommitted changes are not committed
anywhere, the contract says so and lists them. A folder that is not in a git repository
(or one without a commit) is refused, in place too: the contract needs a commit to stand on.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

import pygit2

from relay.core.errors import WorktreeError
from relay.core.events import AgentEvent, Notice
from relay.core.fsutil import PRIVATE_FILE, write_atomic
from relay.core.models import SessionSpec, entry_runtime
from relay.core.present import clip
from relay.core.redact import scrub_obj
from relay.core.vault import Vault
from relay.detect.model import DetectedSession, Intent, PlanEntry
from relay.detect.stores.base import StoreRead
from relay.runtimes.registry import adapter_class
from relay.sessions.briefing import continuation_prompt, done_items, last_messages, next_action
from relay.sessions.contract import (
    ADOPTED,
    ContractV2,
    FileEntry,
    file_manifest,
    new_contract_id,
    read_envelope,
    render_markdown,
    write_envelope,
)
from relay.sessions.coordinator import BRIEF_FILE
from relay.sessions.intent import IN_PROGRESS, WRITE_TOOLS, in_flight_code, plan_lists, written
from relay.sessions.worktree import open_repo

if TYPE_CHECKING:
    from relay.sessions.port import SessionControl

#: the data folder's sub-folder holding adoption contracts
ADOPTED_DIR = "adopted"
#: at most this many uncommitted files are hashed into the contract (the rest are counted)
MAX_MANIFEST = 200
_LIST_ITEMS = 25
_PLAN_ITEM_CHARS = 300

#: the limit that blocks a session, by its kind (the last blocking LimitHit of its events)
_LIMIT_WORDS = {"usage_limit": "a usage limit", "quota": "its quota", "rate_limit": "a rate limit",
                "overloaded": "its provider being overloaded"}
#: how each detected state reads after "which …"
_STATE_WORDS = {
    "blocked": "is blocked by {limit}",
    "needs_input": "is waiting for the user's input",
    "crashed": "stopped in the middle of a turn",
    "ended": "has ended",
    "idle": "is idle",
    "working": "is still working",
    "unknown": "is in a state Relay could not tell",
}


@dataclass(frozen=True)
class Adopted:
    """A detected session taken over by Relay."""

    #: the new Relay session
    session_id: str
    #: ``<data>/adopted/<runtime>-<agent session id>/<contract id>``
    contract_dir: Path
    #: the verified contract rendered for the new agent (``brief.md`` in ``contract_dir``)
    brief_path: Path
    contract_id: str
    #: the repository the work continues from
    repo: Path
    in_place: bool


@dataclass(frozen=True)
class Origin:
    """Where the adopted session's work is: its repository at HEAD and what is uncommitted."""

    root: Path
    head: str
    #: the folder the agent worked in, relative to ``root`` ("" for the root itself)
    subdir: str
    #: uncommitted regular files (modified or new), and deleted ones
    changed: list[str]
    deleted: list[str]


async def adopt(engine: SessionControl, detected: DetectedSession, read: StoreRead, to_entry: str, *,
                in_place: bool = False) -> Adopted:
    """Continue ``detected`` on ``to_entry`` (``runtime[:account]``) from a signed brief.

    Raises:
        WorktreeError: the session's folder is not in a git repository (or has no commit).
        ContractTamperedError: the written contract did not verify (nothing is started).
        UnknownRuntimeError: ``to_entry`` names no runtime Relay has.
        RelayError: the vault is locked, the contract cannot be written, …
    """
    adapter_class(entry_runtime(to_entry))  # an unknown runtime fails before anything is written
    origin = await asyncio.to_thread(origin_of, detected, read)
    contract = await asyncio.to_thread(build_adoption_contract, detected, read, origin,
                                       in_place=in_place)
    key = await asyncio.to_thread(
        lambda: Vault.open(engine.config, engine.passphrase_provider).signing_key())
    folder = adoption_folder(engine.config.home, detected) / contract.contract_id
    await asyncio.to_thread(write_envelope, folder, contract, key, scrub=scrub_obj)
    verified = await asyncio.to_thread(read_envelope, folder, key)  # never use an unverified one
    markdown = render_markdown(verified)
    brief = folder / BRIEF_FILE
    await asyncio.to_thread(write_atomic, brief, markdown.encode("utf-8"), PRIVATE_FILE)
    spec = SessionSpec(repo=origin.root, task=continuation_prompt(markdown),
                       runtime=entry_runtime(to_entry), chain=[to_entry], worktree=not in_place,
                       carry_uncommitted=not in_place, adopted_from=detected.id)
    session_id = await engine.start_session(spec)
    await engine.post_notice(session_id, Notice(
        runtime=entry_runtime(to_entry),
        message=f"Adopted {detected.id}, which {adoption_reason(detected, read.events)}; the signed "
                f"continuation contract is {folder}."))
    return Adopted(session_id=session_id, contract_dir=folder, brief_path=brief,
                   contract_id=verified.contract_id, repo=origin.root, in_place=in_place)


def adoption_folder(home: Path, detected: DetectedSession) -> Path:
    """``<data>/adopted/<runtime>-<agent session id>`` (unsafe characters replaced)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{detected.runtime}-{detected.agent_session_id}")
    return home / ADOPTED_DIR / name.lstrip(".")


def adoption_reason(detected: DetectedSession, events: Sequence[AgentEvent] = ()) -> str:
    """Why the session is being adopted, after "which": "is blocked by a usage limit
    (resets 14:05)", with the detector's own words when they add something."""
    limit = next((e.limit for e in reversed(events) if e.kind == "limit_hit" and e.blocking),
                 "usage_limit")
    text = _STATE_WORDS.get(detected.state, f"is {detected.state.replace('_', ' ')}").format(
        limit=_LIMIT_WORDS.get(limit, "a usage limit"))
    why = " ".join(detected.why.split())
    if detected.resets_at_ms and "reset" not in why.lower():
        text += f" (resets {_local_time(detected.resets_at_ms)})"
    return f"{text} ({why.rstrip('.')})" if why else text


def _local_time(ms: int) -> str:
    when = datetime.fromtimestamp(ms / 1000).astimezone()
    today = datetime.now().astimezone().date()
    return f"{when:%H:%M}" if when.date() == today else f"{when:%Y-%m-%d %H:%M}"


# --- the repository ---------------------------------------------------------------------

def adopted_repository(detected: DetectedSession, read: StoreRead) -> Path:
    """The work tree root of the repository the session worked in.

    ``detected.repo`` when the detector found it, else the git repository holding the
    session's folder.
    """
    cwd = detected.cwd or read.cwd
    if detected.repo:
        return Path(open_repo(Path(detected.repo)).workdir)
    if not cwd:
        raise WorktreeError(f"The {detected.runtime} session {detected.id} recorded no working "
                            "folder, so Relay cannot tell which repository it worked on.",
                            "Start a session on that repository with `relay-cli run` instead.")
    if not Path(cwd).is_dir():
        raise WorktreeError(f"{cwd}, where the {detected.runtime} session {detected.id} worked, "
                            "no longer exists.", "Adopt a session whose folder is still there.")
    found = pygit2.discover_repository(cwd)
    if found is None:
        raise WorktreeError(f"{cwd}, where the {detected.runtime} session {detected.id} worked, "
                            "is not in a git repository.",
                            "Relay continues adopted work from a commit: run `git init` and "
                            "commit there, then adopt again.")
    repo = open_repo(Path(found))
    return Path(repo.workdir)


def origin_of(detected: DetectedSession, read: StoreRead) -> Origin:
    """The session's repository at HEAD and its uncommitted files (read, never written)."""
    root = adopted_repository(detected, read)
    repo = open_repo(root)
    if repo.head_is_unborn:
        raise WorktreeError(f"{root} has no commits yet, so there is nothing to continue from.",
                            "Make a first commit there, then adopt again.")
    head = str(repo.head.peel(pygit2.Commit).id)
    changed, deleted = [], []
    for path in sorted(repo.status(untracked_files="all", ignored=False)):  # reads only
        try:
            mode = os.lstat(root / path).st_mode
        except FileNotFoundError:
            deleted.append(path)
            continue
        except OSError:
            continue
        if stat.S_ISREG(mode):
            changed.append(path)
    cwd = detected.cwd or read.cwd
    subdir = ""
    if cwd:
        pairs = itertools.product((root, root.resolve()), (Path(cwd), Path(cwd).resolve()))
        inside = next((folder.relative_to(base) for base, folder in pairs
                       if folder.is_relative_to(base)), None)
        subdir = "" if inside is None or inside == Path() else inside.as_posix()
    return Origin(root=root, head=head, subdir=subdir, changed=changed, deleted=deleted)


# --- the contract -----------------------------------------------------------------------

def build_adoption_contract(detected: DetectedSession, read: StoreRead, origin: Origin, *,
                            in_place: bool = False) -> ContractV2:
    """A v2 continuation contract (unsigned) for the agent taking ``detected`` over."""
    events, intent, root = read.events, detected.intent, origin.root
    plan, remaining = _plan(intent, events)
    in_flight = in_flight_code(events, root)
    messages = last_messages(events)
    last = clip(intent.last_message, 600) if intent.last_message else (
        messages[-1] if messages else None)
    earlier = [m for m in messages if m != last][-2:]
    where = f" in {root / origin.subdir if origin.subdir else root}"
    opening = (f"Relay adopted this task from the {detected.runtime} session {detected.id}"
               f"{where}, which {adoption_reason(detected, events)}.")
    action = opening + " " + next_action(reason=None, failing=[], in_flight=in_flight,
                                         remaining=remaining, last_message=last)
    touched = _touched(intent, events, origin)
    manifest, more = _manifest(origin, touched)
    goal = intent.initial_prompt.strip() or (
        f"Continue the work of the {detected.runtime} session {detected.id}{where} "
        "(its original request could not be read).")
    return ContractV2(
        contract_id=new_contract_id(), session_id=detected.id, task_id=ADOPTED, task_goal=goal,
        next_action=action, do_not_redo=done_items(events, root),
        file_manifest=manifest,
        decisions=[*(f"Earlier agent: {m}" for m in earlier),
                   *_context(detected, read, intent, events, origin, touched)],
        constraints=_constraints(origin, in_place=in_place, more=more),
        snapshot_commit_sha=origin.head, initial_prompt=intent.initial_prompt.strip(),
        plan=plan, tasks_remaining=remaining,
        skills_loaded=list(read.skills),
        skills_in_use=list(dict.fromkeys(
            [*_invoked_skills(events), *(s for s in intent.skills if s not in read.skills)])),
        in_flight_code=in_flight)


def _plan(intent: Intent, events: Sequence[AgentEvent]) -> tuple[list[str], list[str]]:
    """``(plan, tasks_remaining)`` as the contract writes them: the lifted plan when there is
    one, else the events' (:func:`relay.sessions.intent.plan_lists`), plus any remaining task
    the lifter found that is not on it."""
    if intent.plan:
        labels = [(_plan_label(e), e.status) for e in intent.plan]
        plan = [label for label, _ in labels]
        remaining = ([label for label, s in labels if s == "in_progress"]
                     + [label for label, s in labels if s == "pending"])
    else:
        plan, remaining = plan_lists(events)
    known = {p.removeprefix(IN_PROGRESS) for p in plan}
    extra = [t for t in (" ".join(t.split()) for t in intent.tasks_remaining)
             if t and t not in known and t.removeprefix(IN_PROGRESS) not in known]
    return plan, list(dict.fromkeys([*remaining, *extra]))


def _invoked_skills(events: Sequence[AgentEvent]) -> list[str]:
    """Skills the agent called (Claude ``Skill``, Gemini ``activate_skill``)."""
    names = []
    for event in events:
        if event.kind == "tool_call" and event.name in ("Skill", "activate_skill"):
            name = next((v for k in ("skill", "command", "name")
                         if isinstance(v := event.input.get(k), str) and v), None)
            if name:
                names.append(name.lstrip("/"))
    return names


def _plan_label(entry: PlanEntry) -> str:
    text = clip(" ".join(entry.text.split()), _PLAN_ITEM_CHARS)
    return IN_PROGRESS + text if entry.status == "in_progress" else text


def _touched(intent: Intent, events: Sequence[AgentEvent], origin: Origin) -> list[str]:
    """Files the agent touched, relative to the repository root where they lie in it."""
    raw = list(intent.files_touched)
    for event in events:
        if event.kind == "tool_call" and event.name in WRITE_TOOLS:
            raw += [path for path, _ in written(event, origin.root)]
    out: dict[str, None] = {}
    for path in raw:
        out.setdefault(_repo_relative(path, origin), None)
    return list(out)


def _repo_relative(path: str, origin: Origin) -> str:
    pure = PurePath(path)
    if not pure.is_absolute():
        pure = PurePath(origin.root, origin.subdir, pure) if origin.subdir else pure
        if not pure.is_absolute():
            return pure.as_posix()
    for base in (origin.root, origin.root.resolve()):
        if pure.is_relative_to(base):
            return pure.relative_to(base).as_posix()
    return path  # outside the repository: kept as the agent wrote it


def _manifest(origin: Origin, touched: list[str]) -> tuple[list[FileEntry], int]:
    """Uncommitted files (``modified``) and the committed files the agent touched, hashed;
    and how many uncommitted files were left out past :data:`MAX_MANIFEST`."""
    changed = origin.changed[:MAX_MANIFEST]
    entries = {e.path: e for e in file_manifest(origin.root, changed, modified=True)}
    committed = [p for p in touched if p not in entries and not PurePath(p).is_absolute()
                 and ".." not in PurePath(p).parts and _is_file(origin.root / p, origin.root)]
    for entry in file_manifest(origin.root, committed[:MAX_MANIFEST], modified=False):
        entries.setdefault(entry.path, entry)
    return [entries[p] for p in sorted(entries)], len(origin.changed) - len(changed)


def _is_file(path: Path, root: Path) -> bool:
    """A regular file inside ``root`` (not through a symlinked folder)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode) and path.resolve().is_relative_to(
            root.resolve())
    except OSError:
        return False


def _context(detected: DetectedSession, read: StoreRead, intent: Intent,
             events: Sequence[AgentEvent], origin: Origin, touched: list[str]) -> list[str]:
    """What else the next agent should know: deletions, commands, tools, models."""
    out: list[str] = []
    if origin.deleted:
        out.append("Deleted and not committed (keep them deleted unless that was a mistake): "
                   + _listed(origin.deleted))
    outside = [p for p in touched if PurePath(p).is_absolute()]
    if outside:
        out.append("It also touched files outside the repository: " + _listed(outside))
    if intent.commands and not any(e.kind == "tool_call" for e in events):
        out.append("Commands it ran (whether they succeeded is not known): "
                   + _listed([f"`{clip(c, 160)}`" for c in intent.commands[-_LIST_ITEMS:]]))
    servers = list(dict.fromkeys([*intent.mcp_servers, *read.mcp_servers]))
    if servers:
        out.append("MCP servers it used (you may not have them): " + _listed(servers))
    models = list(dict.fromkeys([*intent.models, *read.models]))
    if models:
        out.append(f"It ran as {detected.entry} on " + _listed(models) + ".")
    return out


def _constraints(origin: Origin, *, in_place: bool, more: int) -> list[str]:
    short = origin.head[:12]
    if in_place:
        out = [f"You work in the user's repository {origin.root} itself, as the previous agent "
               f"did; its uncommitted changes are there (HEAD is {short})."]
    else:
        out = [f"Work only in this git worktree: it was made from commit {short} of "
               f"{origin.root} with that repository's uncommitted changes copied in (they are "
               "not committed: `git status` shows them).",
               f"Do not change files in {origin.root} itself: the user's working tree stays as "
               "it is."]
    if origin.subdir:
        out.append(f"The previous agent worked in `{origin.subdir}` of the repository.")
    out.append("In the file list, \"modified\" means not committed at the adoption; "
               "\"unchanged\" means as committed.")
    if more > 0:
        out.append(f"{more} more uncommitted file(s) are not listed.")
    out.append("Do not undo or redo the previous agent's work unless it is wrong.")
    return out


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LIST_ITEMS])
    return shown + (f" and {len(items) - _LIST_ITEMS} more" if len(items) > _LIST_ITEMS else "")

