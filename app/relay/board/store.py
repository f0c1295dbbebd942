"""The board's tables (migration 11): the statements that change them and the reads.

Statements are built here and committed by the :class:`~relay.core.store.writer.EventWriter`
together with their :class:`~relay.core.events.BoardChanged` event (one transaction). A
statement never fails on a constraint: the service checks first, under its lock, so a
batch the writer shares with other ops cannot be rolled back by the board.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any, cast

from relay.board.model import Comment, Decision, Project, Report, Stage, Task
from relay.core.guard import Environment, EnvRefs
from relay.core.live import HookedSession
from relay.core.store.db import Store
from relay.core.store.sql import Statement, damaged_row

_TASK_COLS = ("t.key, p.slug, t.title, t.stage, t.next_step, t.waiting_on, t.branch,"
              " t.description, t.version, t.created_ms, t.updated_ms, t.stage_ms")
_TASK_FROM = "board_tasks t JOIN board_projects p ON p.id = t.project_id"
_HOOKED_COLS = ("agent_session_id, runtime, cwd, state, detail, needs, source, transcript_path,"
                " relay_session_id, todos, started_ms, updated_ms")


def _task(r: Sequence[Any]) -> Task:
    return Task(key=r[0], project=r[1], title=r[2], stage=cast(Stage, r[3]), next_step=r[4],
                waiting_on=r[5], branch=r[6], description=r[7], version=r[8], created_ms=r[9],
                updated_ms=r[10], stage_ms=r[11])


def _hooked(r: Sequence[Any]) -> HookedSession:
    try:
        todos = json.loads(r[9] or "[]")
    except ValueError as exc:
        raise damaged_row("hooked_sessions", exc) from exc
    return HookedSession(agent_session_id=r[0], runtime=r[1], cwd=r[2], state=r[3], detail=r[4],
                         needs=r[5], source=r[6], transcript_path=r[7], relay_session_id=r[8],
                         todos=tuple(t for t in todos if isinstance(t, dict)),
                         started_ms=r[10], updated_ms=r[11])


def env_refs_json(refs: EnvRefs) -> str:
    return json.dumps({k: list(v) for k, v in asdict(refs).items() if v}, sort_keys=True)


def _env(r: Sequence[Any]) -> Environment:
    try:
        raw = json.loads(r[3] or "{}")
    except ValueError as exc:
        raise damaged_row("guard_environments", exc) from exc
    known = EnvRefs.__dataclass_fields__
    refs = EnvRefs(**{k: tuple(str(x) for x in v) for k, v in raw.items()
                      if k in known and isinstance(v, list)})
    return Environment(name=r[0], kind=r[1], level=r[2], refs=refs, notes=r[4])


class BoardStore:
    """Reads of the board's tables, and the statements that change them."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def _all(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with self.store.conn.execute(sql, params) as cur:
            return list(await cur.fetchall())

    async def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = await self._all(sql, params)
        return rows[0] if rows else None

    # -- projects ---------------------------------------------------------------------

    async def projects(self) -> list[Project]:
        return [Project(r[0], r[1], r[2]) for r in await self._all(
            "SELECT slug, name, repo FROM board_projects ORDER BY slug")]

    async def project_row(self, *, slug: str | None = None,
                          repo: str | None = None) -> tuple[int, Project, int] | None:
        """``(id, project, task_seq)`` by slug or repository."""
        column, value = ("slug", slug) if slug is not None else ("repo", repo)
        r = await self._one(f"SELECT id, slug, name, repo, task_seq FROM board_projects"
                            f" WHERE {column}=?", (value,))
        return (r[0], Project(r[1], r[2], r[3]), r[4]) if r else None

    async def slug_taken(self, slug: str) -> bool:
        return await self._one("SELECT 1 FROM board_projects WHERE slug=?", (slug,)) is not None

    @staticmethod
    def insert_project(project: Project, now: int) -> Statement:
        return ("INSERT OR IGNORE INTO board_projects (slug, name, repo, task_seq, created_ms,"
                " updated_ms) VALUES (?, ?, ?, 0, ?, ?)", (project.slug, project.name,
                                                           project.repo, now, now))

    # -- tasks ------------------------------------------------------------------------

    async def task_row(self, key: str) -> tuple[int, Task] | None:
        r = await self._one(f"SELECT t.id, {_TASK_COLS} FROM {_TASK_FROM} WHERE t.key=?", (key,))
        return (r[0], _task(r[1:])) if r else None

    async def tasks(self, project: str | None, done: bool) -> list[tuple[int, Task]]:
        where, params = [], list[Any]()
        if project is not None:
            where.append("p.slug=?")
            params.append(project)
        if not done:
            where.append("t.stage != 'done'")
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = await self._all(f"SELECT t.id, {_TASK_COLS} FROM {_TASK_FROM}{clause}"
                               " ORDER BY p.slug, t.updated_ms DESC, t.id", params)
        return [(r[0], _task(r[1:])) for r in rows]

    @staticmethod
    def insert_task(project_id: int, seq: int, task: Task) -> list[Statement]:
        return [("UPDATE board_projects SET task_seq=?, updated_ms=? WHERE id=?",
                 (seq, task.created_ms, project_id)),
                ("INSERT OR IGNORE INTO board_tasks (project_id, key, title, stage, next_step,"
                 " waiting_on, branch, description, version, created_ms, updated_ms, stage_ms)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (project_id, task.key, task.title, task.stage, task.next_step, task.waiting_on,
                  task.branch, task.description, task.version, task.created_ms, task.updated_ms,
                  task.stage_ms))]

    @staticmethod
    def update_task(task_id: int, task: Task) -> Statement:
        """The task's row as ``task`` says (its version already the next one)."""
        return ("UPDATE board_tasks SET title=?, stage=?, next_step=?, waiting_on=?, branch=?,"
                " description=?, version=?, updated_ms=?, stage_ms=? WHERE id=?",
                (task.title, task.stage, task.next_step, task.waiting_on, task.branch,
                 task.description, task.version, task.updated_ms, task.stage_ms, task_id))

    # -- reports, decisions, comments -------------------------------------------------

    async def reports(self, task_id: int, key: str, last: bool = False) -> list[Report]:
        order = "DESC LIMIT 1" if last else "ASC"
        rows = await self._all("SELECT id, author, session_ref, summary, body, created_ms FROM"
                               f" board_reports WHERE task_id=? ORDER BY id {order}", (task_id,))
        return [Report(r[0], key, r[1], r[2], r[3], r[4], r[5]) for r in rows]

    @staticmethod
    def insert_report(task_id: int, report: Report) -> Statement:
        return ("INSERT INTO board_reports (id, task_id, author, session_ref, summary, body,"
                " created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (report.id, task_id, report.author, report.session_ref, report.summary,
                 report.body, report.created_ms))

    async def decisions(self, task_id: int, key: str) -> list[Decision]:
        rows = await self._all("SELECT id, text, decided_by, created_ms FROM board_decisions"
                               " WHERE task_id=? ORDER BY id", (task_id,))
        return [Decision(r[0], key, r[1], r[2], r[3]) for r in rows]

    @staticmethod
    def insert_decision(task_id: int, decision: Decision) -> Statement:
        return ("INSERT INTO board_decisions (id, task_id, text, decided_by, created_ms)"
                " VALUES (?, ?, ?, ?, ?)", (decision.id, task_id, decision.text,
                                            decision.decided_by, decision.created_ms))

    async def next_id(self, table: str) -> int:
        """The id the next row of ``table`` gets (the service writes under its lock)."""
        assert table in ("board_reports", "board_decisions", "board_comments")
        row = await self._one(f"SELECT coalesce(max(id), 0) + 1 FROM {table}")
        return int(row[0])

    async def comments(self, task_ids: Iterable[int] | None = None, *,
                       unacked: bool = False) -> list[Comment]:
        """Comments of the tasks (all tasks: None), oldest first; ``unacked``: only the
        owner's comments not acknowledged yet."""
        where, params = [], list[Any]()
        if task_ids is not None:
            ids = list(task_ids)
            if not ids:
                return []
            where.append(f"c.task_id IN ({','.join('?' * len(ids))})")
            params += ids
        if unacked:
            where.append("c.author_kind='owner' AND c.acked_ms IS NULL")
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = await self._all(
            "SELECT c.id, t.key, c.author_kind, c.author, c.body, c.created_ms, c.delivered_ms,"
            " c.delivered_to, c.acked_ms FROM board_comments c JOIN board_tasks t"
            f" ON t.id = c.task_id{clause} ORDER BY c.id", params)
        return [Comment(*r) for r in rows]

    async def open_comment_counts(self) -> dict[int, int]:
        rows = await self._all("SELECT task_id, count(*) FROM board_comments WHERE"
                               " author_kind='owner' AND acked_ms IS NULL GROUP BY task_id")
        return {r[0]: r[1] for r in rows}

    @staticmethod
    def insert_comment(task_id: int, comment: Comment) -> Statement:
        return ("INSERT INTO board_comments (id, task_id, author_kind, author, body, created_ms)"
                " VALUES (?, ?, ?, ?, ?, ?)", (comment.id, task_id, comment.author_kind,
                                               comment.author, comment.body, comment.created_ms))

    @staticmethod
    def comments_delivered(ids: Sequence[int], to: str, now: int) -> Statement:
        return (f"UPDATE board_comments SET delivered_ms=?, delivered_to=? WHERE id IN"
                f" ({','.join('?' * len(ids))}) AND delivered_ms IS NULL", (now, to, *ids))

    @staticmethod
    def comments_acked(ids: Sequence[int], now: int) -> Statement:
        return (f"UPDATE board_comments SET acked_ms=? WHERE id IN ({','.join('?' * len(ids))})"
                " AND acked_ms IS NULL", (now, *ids))

    # -- links ------------------------------------------------------------------------

    async def links(self, task_ids: Iterable[int] | None = None) -> dict[int, list[tuple[str, str]]]:
        """The open links per task: ``[(session_ref, kind)]`` in link order."""
        rows = await self._all("SELECT task_id, session_ref, kind FROM board_links WHERE"
                               " unlinked_ms IS NULL ORDER BY id")
        wanted = set(task_ids) if task_ids is not None else None
        out: dict[int, list[tuple[str, str]]] = {}
        for task_id, ref, kind in rows:
            if wanted is None or task_id in wanted:
                out.setdefault(task_id, []).append((ref, kind))
        return out

    async def linked_tasks(self, session_refs: Sequence[str]) -> list[int]:
        """The tasks ``session_refs`` are linked to (open links), oldest link first."""
        refs = [r for r in session_refs if r]
        if not refs:
            return []
        rows = await self._all(f"SELECT DISTINCT task_id FROM board_links WHERE session_ref IN"
                               f" ({','.join('?' * len(refs))}) AND unlinked_ms IS NULL"
                               " ORDER BY id", refs)
        return [r[0] for r in rows]

    @staticmethod
    def insert_link(task_id: int, ref: str, kind: str, now: int) -> Statement:
        return ("INSERT INTO board_links (task_id, session_ref, kind, linked_ms) VALUES"
                " (?, ?, ?, ?)", (task_id, ref, kind, now))

    @staticmethod
    def end_link(task_id: int, ref: str, now: int) -> Statement:
        return ("UPDATE board_links SET unlinked_ms=? WHERE task_id=? AND session_ref=? AND"
                " unlinked_ms IS NULL", (now, task_id, ref))

    # -- hooked sessions --------------------------------------------------------------

    async def hooked_sessions(self) -> list[HookedSession]:
        return [_hooked(r) for r in await self._all(
            f"SELECT {_HOOKED_COLS} FROM hooked_sessions ORDER BY started_ms")]

    @staticmethod
    def put_hooked(s: HookedSession) -> Statement:
        return (f"INSERT OR REPLACE INTO hooked_sessions ({_HOOKED_COLS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (s.agent_session_id, s.runtime, s.cwd, s.state, s.detail, s.needs, s.source,
                 s.transcript_path, s.relay_session_id, json.dumps(list(s.todos)),
                 s.started_ms, s.updated_ms))

    async def relay_session_of(self, agent_session_id: str) -> str | None:
        """The Relay session whose run is this agent session (Relay runs it)."""
        row = await self._one("SELECT session_id FROM runs WHERE agent_session_id=? ORDER BY"
                              " started_ms DESC LIMIT 1", (agent_session_id,))
        return row[0] if row else None

    async def agent_sessions_of(self, relay_session_id: str) -> list[str]:
        rows = await self._all("SELECT DISTINCT agent_session_id FROM runs WHERE session_id=?"
                               " AND agent_session_id IS NOT NULL", (relay_session_id,))
        return [r[0] for r in rows]

    async def relay_state(self, session_id: str) -> str | None:
        row = await self._one("SELECT state FROM sessions WHERE id=?", (session_id,))
        return row[0] if row else None

    # -- environments -----------------------------------------------------------------

    async def environments(self, project_id: int) -> list[Environment]:
        return [_env(r) for r in await self._all(
            "SELECT name, kind, level, refs, notes FROM guard_environments WHERE project_id=?"
            " ORDER BY name", (project_id,))]

    @staticmethod
    def put_environment(project_id: int, env: Environment) -> Statement:
        return ("INSERT INTO guard_environments (project_id, name, kind, level, refs, notes)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project_id, name) DO UPDATE SET"
                " kind=excluded.kind, level=excluded.level, refs=excluded.refs,"
                " notes=excluded.notes",
                (project_id, env.name, env.kind, env.level, env_refs_json(env.refs), env.notes))

    @staticmethod
    def delete_environment(project_id: int, name: str) -> Statement:
        return ("DELETE FROM guard_environments WHERE project_id=? AND name=?",
                (project_id, name))
