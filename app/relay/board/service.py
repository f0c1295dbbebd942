"""The board's service (``engine.board``): projects, tasks, reports, decisions, comments,
links, the guard's environments — and, through :mod:`relay.board.hooks`, the live state of
every hooked agent session.

Every write is one :class:`~relay.core.store.writer.WriteOp` on :data:`BOARD_SESSION`: its
statements and its :class:`~relay.core.events.BoardChanged` event commit in one transaction
and the bus publishes the event after the commit. Writes run one at a time under the
service's lock, so the checks before a write (a task's version, the next task number) hold
when it commits — and a statement never fails inside a batch the writer shares.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from relay.board.hooks import HookHandler, LiveTable
from relay.board.model import (
    STAGES,
    TASK_FIELDS,
    Card,
    Comment,
    Decision,
    Project,
    Report,
    SessionLink,
    Stage,
    Task,
    TaskDetail,
    project_of,
)
from relay.board.store import BoardStore
from relay.core.errors import (
    BoardError,
    ConfigError,
    ProjectNotFoundError,
    TaskNotFoundError,
    VersionConflictError,
    WorktreeError,
)
from relay.core.events import BOARD_SESSION, BoardChanged, BoardEntity
from relay.core.guard import (
    ENV_KINDS,
    LEVELS,
    Environment,
    Guard,
    GuardPolicy,
    PolicyGuard,
    check_refs,
)
from relay.core.live import HookedSession, LiveStates
from relay.core.models import SessionSpec
from relay.core.store.db import Store
from relay.core.store.sql import Statement, now_ms
from relay.core.store.writer import EventWriter, WriteOp
from relay.sessions.intent import latest_plan
from relay.sessions.worktree import main_root, repo_root

__all__ = ["BoardService"]

MAX_TITLE = 300
#: how long a hooked session no hook reported on is kept (its live state)
HOOKED_KEEP_MS = 14 * 24 * 3600 * 1000
#: how recent a hooked session's last hook must be to show among "sessions without a task"
UNLINKED_RECENT_MS = 24 * 3600 * 1000
MAX_TEXT = 64 * 1024
_KEY = re.compile(r"[A-Z0-9][A-Z0-9-]{0,40}-[0-9]{1,9}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: the stored events a Relay-run session's plan is lifted from
_PLAN_KINDS = ("tool_call", "tool_result", "notice")


def _text(value: Any, what: str, limit: int = MAX_TEXT, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise BoardError(f"{what} must be text.", f"Pass {what.lower()} as a string.")
    if not empty and not value.strip():
        raise BoardError(f"{what} is empty.", f"Write {what.lower()}.")
    if len(value) > limit:
        raise BoardError(f"{what} is {len(value):,} characters; at most {limit:,}.",
                         "Shorten it (put long text in a report's body).")
    return value


def _optional(value: Any, what: str) -> str | None:
    return None if value is None else _text(value, what, MAX_TITLE * 4)


def _stage(stage: Any) -> Stage:
    if stage not in STAGES:
        raise BoardError(f"{stage!r} is not a stage.", f"Use one of: {', '.join(STAGES)}.")
    return cast(Stage, stage)


def scratch_folders(worktree: Path | None) -> tuple[str, ...]:
    """Where a session may write besides its worktree: the system's temporary folder —
    unless the worktree lies in it, where other checkouts look the same as scratch files."""
    temp = Path(tempfile.gettempdir()).resolve()
    if worktree is not None and worktree.resolve().is_relative_to(temp):
        return ()
    return (str(temp),)


def slug_for(root: Path) -> str:
    """A project's slug from its folder's name: lower-case letters, digits and '-'."""
    slug = re.sub(r"[^a-z0-9]+", "-", root.name.lower()).strip("-")[:24].strip("-")
    return slug or "project"


class BoardService:
    """The board of this data folder (``engine.board``); :meth:`open` before use."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.db = BoardStore(store)
        self.writer = writer
        self._lock = asyncio.Lock()
        self.live = LiveTable()
        self.hooks = HookHandler(self)
        #: an owner's comment on a task linked to a session Relay runs goes to that
        #: session's inbox through this (the engine's ``talk.board_comment``); the hooks
        #: bring it to sessions Relay does not run
        self.to_relay_session: Callable[[str, Comment], Awaitable[None]] | None = None

    async def open(self) -> None:
        """Load the hooked sessions' last states (so :meth:`live_states` is in memory); those
        no hook reported for :data:`HOOKED_KEEP_MS` are let go of."""
        cutoff = now_ms() - HOOKED_KEEP_MS
        sessions = await self.db.hooked_sessions()
        if any(s.updated_ms < cutoff for s in sessions):
            await self.writer.write(WriteOp(session_id=BOARD_SESSION,
                                            statements=[self.db.forget_hooked(cutoff)]))
        self.live.load(s for s in sessions if s.updated_ms >= cutoff)

    async def close(self) -> None:
        """Nothing is held open: every write is committed when its method returns."""

    # -- the one way the board writes --------------------------------------------------

    async def _write(self, statements: list[Statement], entity: BoardEntity, action: str,
                     project: str, task: str | None = None,
                     fields: Mapping[str, Any] | None = None, actor: str = "") -> None:
        await self.writer.write(WriteOp(session_id=BOARD_SESSION, statements=statements,
                                        event=BoardChanged(entity=entity, action=action,
                                                           project=project, task=task,
                                                           fields=dict(fields or {}),
                                                           actor=actor)))

    # -- projects ---------------------------------------------------------------------

    async def projects(self) -> list[Project]:
        return await self.db.projects()

    async def project_for(self, repo: str | Path, *, actor: str = "owner") -> Project:
        """The project of the git repository at or above ``repo`` (a linked worktree counts
        as its main repository); created on first use."""
        path = Path(repo).expanduser()
        try:
            root = await asyncio.to_thread(main_root, path)
        except WorktreeError as exc:
            raise BoardError(exc.message, "A board project is a git repository: pass a folder"
                             " inside one (or an existing project's slug).") from exc
        async with self._lock:
            found = await self.db.project_row(repo=str(root))
            if found is not None:
                return found[1]
            base = slug = slug_for(root)
            n = 1
            while await self.db.slug_taken(slug):
                n += 1
                slug = f"{base}-{n}"
            project = Project(slug=slug, name=root.name, repo=str(root))
            await self._write([self.db.insert_project(project, now_ms())], "project", "created",
                              slug, fields={"repo": project.repo, "name": project.name},
                              actor=actor)
            return project

    async def _project(self, repo_or_project: str | Path, actor: str) -> tuple[int, Project, int]:
        if isinstance(repo_or_project, str):
            found = await self.db.project_row(slug=repo_or_project)
            if found is not None:
                return found
        project = await self.project_for(repo_or_project, actor=actor)
        found = await self.db.project_row(slug=project.slug)
        assert found is not None
        return found

    async def _project_by_slug(self, slug: str) -> tuple[int, Project, int]:
        found = await self.db.project_row(slug=slug)
        if found is None:
            raise ProjectNotFoundError(f"No board project {slug!r}.",
                                       "List them with board_projects (relay-cli board).")
        return found

    # -- tasks ------------------------------------------------------------------------

    async def _task(self, key: str) -> tuple[int, Task]:
        if not isinstance(key, str) or not _KEY.fullmatch(key.upper()):
            raise TaskNotFoundError(f"{key!r} is not a task key.",
                                    "A task key is the project's name and a number: RELAY-3.")
        found = await self.db.task_row(key.upper())
        if found is None:
            raise TaskNotFoundError(f"No task {key.upper()} on the board.",
                                    "List the tasks with board_tasks (relay-cli board).")
        return found

    async def create_task(self, repo_or_project: str, title: str, *, stage: str = "plan",
                          next_step: str | None = None, waiting_on: str | None = None,
                          branch: str | None = None, description: str | None = None,
                          session: str | None = None, actor: str = "owner") -> Task:
        """A new task ``<SLUG>-<n>`` in the project (a slug, or a folder in a repository);
        ``session`` links it to that session at once."""
        title = _text(title, "The title", MAX_TITLE, empty=False).strip()
        valid = _stage(stage)
        fields = {"next_step": _optional(next_step, "The next step"),
                  "waiting_on": _optional(waiting_on, "Waiting on"),
                  "branch": _optional(branch, "The branch"),
                  "description": None if description is None else _text(description,
                                                                        "The description")}
        project_id, project, _ = await self._project(repo_or_project, actor)
        async with self._lock:
            found = await self.db.project_row(slug=project.slug)
            assert found is not None
            seq = found[2] + 1
            now = now_ms()
            task = Task(key=f"{project.slug.upper()}-{seq}", project=project.slug, title=title,
                        stage=valid, version=1, created_ms=now, updated_ms=now, stage_ms=now,
                        **fields)
            statements = self.db.insert_task(project_id, seq, task)
            link = await self._link_kind(session) if session else None
            if session and link:
                statements.append(("INSERT INTO board_links (task_id, session_ref, kind,"
                                   " linked_ms) SELECT id, ?, ?, ? FROM board_tasks WHERE key=?",
                                   (session, link, now, task.key)))
            await self._write(statements, "task", "created", project.slug, task.key,
                              {"title": title, "stage": valid,
                               **({"session": session} if session else {})}, actor)
            return task

    async def update_task(self, key: str, *, expected_version: int | None = None,
                          actor: str = "owner", **fields: Any) -> Task:
        """Change the task's title, next step, waiting-on, branch or description.
        ``expected_version``: refused with :class:`VersionConflictError` when the task has
        changed since the version the caller read (compare-and-set)."""
        unknown = sorted(set(fields) - set(TASK_FIELDS))
        if unknown:
            raise BoardError(f"A task has no field {', '.join(unknown)}.",
                             f"Change one of: {', '.join(TASK_FIELDS)} (the stage: set_stage).")
        clean: dict[str, Any] = {}
        for name, value in fields.items():
            if name == "title":
                clean[name] = _text(value, "The title", MAX_TITLE, empty=False).strip()
            elif name == "description":
                clean[name] = None if value is None else _text(value, "The description")
            else:
                clean[name] = _optional(value, name.replace("_", " ").capitalize())
        async with self._lock:
            task_id, task = await self._task(key)
            self._check_version(task, expected_version)
            changed = {k: v for k, v in clean.items() if getattr(task, k) != v}
            if not changed:
                return task
            new = replace(task, **changed, version=task.version + 1, updated_ms=now_ms())
            await self._write([self.db.update_task(task_id, new)], "task", "updated",
                              task.project, task.key, {**changed, "version": new.version}, actor)
            return new

    @staticmethod
    def _check_version(task: Task, expected: int | None) -> None:
        if expected is not None and expected != task.version:
            raise VersionConflictError(
                f"{task.key} changed since you read it (version {expected}; now "
                f"{task.version}).", "Read the task again and apply your change to it.")

    async def set_stage(self, key: str, stage: str, *, actor: str = "owner",
                        note: str | None = None,
                        expected_version: int | None = None) -> Task:
        valid = _stage(stage)
        if note is not None:
            _text(note, "The note", MAX_TITLE * 4)
        async with self._lock:
            task_id, task = await self._task(key)
            self._check_version(task, expected_version)
            if task.stage == valid:
                return task
            now = now_ms()
            new = replace(task, stage=valid, version=task.version + 1, updated_ms=now,
                          stage_ms=now)
            await self._write([self.db.update_task(task_id, new)], "task", "stage",
                              task.project, task.key,
                              {"from": task.stage, "to": valid, "version": new.version,
                               **({"note": note} if note else {})}, actor)
            return new

    # -- cards ------------------------------------------------------------------------

    async def cards(self, project: str | None = None, *, done: bool = True) -> list[Card]:
        """The tasks as cards, a project's or all; ``done=False`` leaves done ones out."""
        if project is not None:
            await self._project_by_slug(project)
        rows = await self.db.tasks(project, done)
        links = await self.db.links([i for i, _ in rows])
        counts = await self.db.open_comment_counts()
        return [await self._card(i, t, links.get(i, []), counts.get(i, 0)) for i, t in rows]

    async def _card(self, task_id: int, task: Task, links: list[tuple[str, str]],
                    open_comments: int) -> Card:
        sessions = [await self._session_link(ref, kind) for ref, kind in links]
        plan: list[dict[str, Any]] = []
        for link in reversed(sessions):  # the latest linked session with a plan
            plan = await self._plan(link)
            if plan:
                break
        last = await self.db.reports(task_id, task.key, last=True)
        return Card(task=task, sessions=sessions,
                    needs_input=any(s.live is not None and s.live.state == "needs_input"
                                    for s in sessions),
                    last_report=last[0] if last else None, plan=plan,
                    open_comments=open_comments)

    async def _session_link(self, ref: str, kind: str) -> SessionLink:
        if kind == "relay":
            live = self.live.for_relay(ref)
            return SessionLink(ref, "relay", live, await self.db.relay_state(ref))
        live = self.live.get(ref)
        relay = live.relay_session_id if live else None
        return SessionLink(ref, "claude", live, await self.db.relay_state(relay) if relay else None)

    async def _plan(self, link: SessionLink) -> list[dict[str, Any]]:
        if link.live is not None and link.live.todos:
            return [dict(t) for t in link.live.todos]
        relay = link.session_ref if link.kind == "relay" else (
            link.live.relay_session_id if link.live else None)
        if relay is None:
            return []
        events = await self.db.store.events_after(0, session_id=relay, limit=1_000_000,
                                                  replay=False, kinds=_PLAN_KINDS)
        items = latest_plan([r.event for r in events]) or []
        return [{"content": i.text, "status": i.status} for i in items]

    async def task(self, key: str) -> TaskDetail:
        task_id, task = await self._task(key)
        links = (await self.db.links([task_id])).get(task_id, [])
        comments = await self.db.comments([task_id])
        card = await self._card(task_id, task, links, sum(c.open for c in comments))
        return TaskDetail(card=card, reports=await self.db.reports(task_id, task.key),
                          decisions=await self.db.decisions(task_id, task.key),
                          comments=comments)

    # -- reports and decisions --------------------------------------------------------

    async def add_report(self, key: str, summary: str, body: str = "", *, author: str,
                         session: str | None = None) -> Report:
        summary = _text(summary, "The summary", MAX_TITLE * 4, empty=False).strip()
        body = _text(body, "The body")
        async with self._lock:
            task_id, task = await self._task(key)
            report = Report(await self.db.next_id("board_reports"), task.key, author, session,
                            summary, body, now_ms())
            await self._write([self.db.insert_report(task_id, report)], "report", "created",
                              task.project, task.key, {"id": report.id, "summary": summary},
                              author)
            return report

    async def add_decision(self, key: str, text: str, *, decided_by: str) -> Decision:
        text = _text(text, "The decision", MAX_TITLE * 4, empty=False).strip()
        async with self._lock:
            task_id, task = await self._task(key)
            decision = Decision(await self.db.next_id("board_decisions"), task.key, text,
                                decided_by, now_ms())
            await self._write([self.db.insert_decision(task_id, decision)], "decision",
                              "created", task.project, task.key, {"id": decision.id},
                              decided_by)
            return decision

    # -- comments ---------------------------------------------------------------------

    async def comment(self, key: str, body: str, *, author: str = "owner",
                      author_kind: str = "owner") -> Comment:
        """A comment on the task; an owner's reaches the linked sessions at their next hook
        (:mod:`relay.board.hooks`)."""
        if author_kind not in ("owner", "agent"):
            raise BoardError(f"{author_kind!r} is not a comment author.",
                             "A comment is the owner's or an agent's.")
        body = _text(body, "The comment", empty=False)
        async with self._lock:
            task_id, task = await self._task(key)
            comment = Comment(await self.db.next_id("board_comments"), task.key,
                              cast(Any, author_kind), author, body, now_ms())
            await self._write([self.db.insert_comment(task_id, comment)], "comment", "created",
                              task.project, task.key, {"id": comment.id,
                                                       "author_kind": author_kind}, author)
            links = (await self.db.links([task_id])).get(task_id, [])
        if author_kind == "owner" and self.to_relay_session is not None:
            for ref, kind in links:
                if kind == "relay":
                    await self.to_relay_session(ref, comment)
        return comment

    async def comments(self, key: str, *, unread: bool = False) -> list[Comment]:
        """The task's comments, oldest first; ``unread``: the owner's not acknowledged."""
        task_id, _ = await self._task(key)
        return await self.db.comments([task_id], unacked=unread)

    async def ack_comments(self, key: str, ids: list[int] | None, *,
                           session: str | None) -> int:
        """Acknowledge the owner's comments (``ids``; None: all open ones): they are never
        delivered or held for again. How many were acknowledged now."""
        async with self._lock:
            task_id, task = await self._task(key)
            open_ids = [c.id for c in await self.db.comments([task_id], unacked=True)]
            chosen = open_ids if ids is None else [i for i in open_ids if i in set(ids)]
            if ids is not None and (missing := sorted(set(ids) - set(open_ids))):
                known = {c.id for c in await self.db.comments([task_id])}
                unknown = [i for i in missing if i not in known]
                if unknown:
                    raise BoardError(f"{task.key} has no comment {unknown[0]}.",
                                     "Read the ids with board_comments.")
            if not chosen:
                return 0
            actor = f"agent:{session}" if session else "owner"
            await self._write([self.db.comments_acked(chosen, now_ms())], "comment", "acked",
                              task.project, task.key, {"ids": list(chosen)}, actor)
            return len(chosen)

    async def deliver(self, comments: list[Comment], to: str, how: str) -> None:
        """Mark comments delivered to a session (by the hooks, under :attr:`lock`)."""
        fresh = [c for c in comments if c.delivered_ms is None]
        by_task: dict[str, list[int]] = {}
        for c in fresh:
            by_task.setdefault(c.task, []).append(c.id)
        for key, ids in by_task.items():
            _, task = await self._task(key)
            await self._write([self.db.comments_delivered(ids, to, now_ms())], "comment",
                              "delivered", task.project, key, {"ids": ids, "to": to,
                                                               "how": how}, "hook")

    @property
    def lock(self) -> asyncio.Lock:
        return self._lock

    # -- links ------------------------------------------------------------------------

    async def _link_kind(self, ref: str) -> str:
        if not isinstance(ref, str) or not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", ref):
            raise BoardError(f"{ref!r} is not a session id.",
                             "Pass the session id the SessionStart hook told you, or a Relay "
                             "session's id.")
        return "relay" if await self.db.relay_state(ref) is not None else "claude"

    async def link(self, key: str, session_ref: str, *, actor: str) -> SessionLink:
        """Link a session (a Relay session's id or a Claude session id) to the task."""
        kind = await self._link_kind(session_ref)
        async with self._lock:
            task_id, task = await self._task(key)
            current = (await self.db.links([task_id])).get(task_id, [])
            if not any(ref == session_ref for ref, _ in current):
                await self._write([self.db.insert_link(task_id, session_ref, kind, now_ms())],
                                  "link", "created", task.project, task.key,
                                  {"session": session_ref, "kind": kind}, actor)
        return await self._session_link(session_ref, kind)

    async def unlink(self, key: str, session_ref: str, *, actor: str) -> None:
        async with self._lock:
            task_id, task = await self._task(key)
            current = (await self.db.links([task_id])).get(task_id, [])
            if not any(ref == session_ref for ref, _ in current):
                raise BoardError(f"{session_ref} is not linked to {task.key}.",
                                 "See the task's sessions with board_tasks.")
            await self._write([self.db.end_link(task_id, session_ref, now_ms())], "link",
                              "deleted", task.project, task.key, {"session": session_ref},
                              actor)

    # -- hooks and live states --------------------------------------------------------

    async def hook(self, event: dict[str, Any]) -> dict[str, Any]:
        """A Claude Code hook event (``POST /api/v1/hooks/claude``): the JSON Claude Code
        gets back (``{}`` when Relay has nothing to say)."""
        return await self.hooks.handle(event)

    def live_states(self) -> LiveStates:
        return self.live

    async def unlinked(self, project: str | None = None) -> list[HookedSession]:
        """The hooked sessions no open link names ("sessions without a task"): not ended,
        a hook heard from in the last :data:`UNLINKED_RECENT_MS`, newest first; with
        ``project`` (a slug), only those whose folder lies in its repository."""
        slug = (await self._project_by_slug(project))[1].slug if project is not None else None
        linked = {ref for refs in (await self.db.links()).values() for ref, _ in refs}
        since = now_ms() - UNLINKED_RECENT_MS
        projects = await self.db.projects() if slug is not None else []
        out = []
        for s in self.live.all():
            if s.state == "ended" or s.updated_ms < since or s.agent_session_id in linked or (
                    s.relay_session_id is not None and s.relay_session_id in linked):
                continue
            if slug is not None and getattr(project_of(s.cwd, projects), "slug", None) != slug:
                continue
            out.append(s)
        return out

    # -- the guard's environments -----------------------------------------------------

    async def environments(self, project: str) -> list[Environment]:
        project_id, _, _ = await self._project_by_slug(project)
        return await self.db.environments(project_id)

    async def set_environment(self, project: str, env: Environment, *,
                              actor: str = "owner") -> Environment:
        if not _NAME.fullmatch(env.name or ""):
            raise BoardError(f"{env.name!r} is not an environment name.",
                             "Use letters, digits, '-', '_' and '.' (up to 64).")
        if env.kind not in ENV_KINDS or env.level not in LEVELS:
            raise BoardError(f"{env.kind}/{env.level} is not an environment kind and level.",
                             f"Kinds: {', '.join(ENV_KINDS)}; levels: {', '.join(LEVELS)}.")
        try:
            check_refs(env.refs)
        except ConfigError as exc:
            raise BoardError(exc.message, exc.hint) from exc
        _text(env.notes, "The notes", MAX_TITLE * 4)
        async with self._lock:
            project_id, found, _ = await self._project_by_slug(project)
            await self._write([self.db.put_environment(project_id, env)], "environment",
                              "updated", found.slug, None,
                              {"name": env.name, "kind": env.kind, "level": env.level}, actor)
        return env

    async def remove_environment(self, project: str, name: str, *,
                                 actor: str = "owner") -> None:
        async with self._lock:
            project_id, found, _ = await self._project_by_slug(project)
            if not any(e.name == name for e in await self.db.environments(project_id)):
                raise BoardError(f"{found.slug} has no environment {name!r}.",
                                 "List them with the project's environments.")
            await self._write([self.db.delete_environment(project_id, name)], "environment",
                              "deleted", found.slug, None, {"name": name}, actor)

    async def session_guard(self, spec: SessionSpec, worktree: Path) -> Guard:
        """The guard on a Relay session's tool calls (the sessions' ``guard_for`` port): its
        project's environments and the folder it works in."""
        return PolicyGuard(await self.guard_policy(spec.repo, worktree))

    async def guard_policy(self, repo: str | Path,
                           worktree: str | Path | None = None) -> GuardPolicy:
        """The guard's policy for a session in ``repo`` (working in ``worktree``): the
        project's environments (none when the repository is no project yet)."""
        try:
            root = await asyncio.to_thread(main_root, Path(repo).expanduser())
        except WorktreeError:
            return GuardPolicy(repo=str(repo), worktree=str(worktree) if worktree else None,
                               scratch=scratch_folders(Path(worktree) if worktree else None))
        found = await self.db.project_row(repo=str(root))
        envs = tuple(await self.db.environments(found[0])) if found else ()
        if worktree is None:
            try:
                worktree = await asyncio.to_thread(repo_root, Path(repo).expanduser())
            except WorktreeError:
                worktree = root
        return GuardPolicy(environments=envs, repo=str(root), worktree=str(worktree),
                           scratch=scratch_folders(Path(worktree)))
