"""The client's board services: ``client.board`` (``engine.board``: projects, tasks, reports,
comments, links, live states, the guard's environments) and ``client.integrations``
(``engine.integrations``: Claude Code's hooks and MCP server) over the host's API — the same
names and models as the engine's (:mod:`relay.api.client_features` says how parts work)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

from relay.api.client_features import Part, seg
from relay.api.schemas import Done
from relay.board.claude_setup import Applied
from relay.board.integrations import ClaudeIntegration
from relay.board.model import (
    Card,
    Comment,
    Decision,
    Project,
    Report,
    SessionLink,
    Task,
    TaskDetail,
)
from relay.core.guard import Environment, GuardPolicy
from relay.core.live import HookedSession


class BoardClient(Part):
    """``engine.board``: projects, tasks, reports, comments, links, live states and the
    guard's environments."""

    async def projects(self) -> list[Project]:
        return await self._ask(list[Project], "GET", "/board/projects")

    async def project_for(self, repo: str | Path) -> Project:
        return await self._ask(Project, "POST", "/board/projects", body={"repo": str(repo)})

    async def cards(self, project: str | None = None, *, done: bool = True) -> list[Card]:
        return await self._ask(list[Card], "GET", "/board/cards", project=project, done=done)

    async def task(self, key: str) -> TaskDetail:
        return await self._ask(TaskDetail, "GET", f"/board/tasks/{seg(key)}")

    async def create_task(self, repo_or_project: str | Path, title: str, *, stage: str = "plan",
                          next_step: str | None = None, waiting_on: str | None = None,
                          branch: str | None = None, description: str | None = None,
                          session: str | None = None, actor: str = "owner") -> Task:
        return await self._ask(Task, "POST", "/board/tasks", body={
            "repo_or_project": str(repo_or_project), "title": title, "stage": stage,
            "next_step": next_step, "waiting_on": waiting_on, "branch": branch,
            "description": description, "session": session, "actor": actor})

    async def update_task(self, key: str, *, expected_version: int | None = None,
                          actor: str = "owner", **fields: str | None) -> Task:
        return await self._ask(Task, "PATCH", f"/board/tasks/{seg(key)}", body={
            **fields, "expected_version": expected_version, "actor": actor})

    async def set_stage(self, key: str, stage: str, *, actor: str = "owner",
                        note: str | None = None, expected_version: int | None = None) -> Task:
        return await self._ask(Task, "POST", f"/board/tasks/{seg(key)}/stage", body={
            "stage": stage, "actor": actor, "note": note, "expected_version": expected_version})

    async def add_report(self, key: str, summary: str, body: str = "", *, author: str,
                         session: str | None = None) -> Report:
        return await self._ask(Report, "POST", f"/board/tasks/{seg(key)}/reports", body={
            "summary": summary, "body": body, "author": author, "session": session})

    async def add_decision(self, key: str, text: str, *, decided_by: str) -> Decision:
        return await self._ask(Decision, "POST", f"/board/tasks/{seg(key)}/decisions",
                               body={"text": text, "decided_by": decided_by})

    async def comment(self, key: str, body: str, *, author: str = "owner",
                      author_kind: str = "owner") -> Comment:
        return await self._ask(Comment, "POST", f"/board/tasks/{seg(key)}/comments",
                               body={"body": body, "author": author, "author_kind": author_kind})

    async def comments(self, key: str, *, unread: bool = False) -> list[Comment]:
        return await self._ask(list[Comment], "GET", f"/board/tasks/{seg(key)}/comments",
                               unread=unread)

    async def ack_comments(self, key: str, ids: list[int] | None, *,
                           session: str | None) -> int:
        answer = await self._ask(dict[str, int], "POST",
                                 f"/board/tasks/{seg(key)}/comments/ack",
                                 body={"ids": ids, "session": session})
        return answer["acked"]

    async def link(self, key: str, session_ref: str, *, actor: str) -> SessionLink:
        return await self._ask(SessionLink, "POST", f"/board/tasks/{seg(key)}/links",
                               body={"session_ref": session_ref, "actor": actor})

    async def unlink(self, key: str, session_ref: str, *, actor: str) -> None:
        await self._ask(Done, "DELETE", f"/board/tasks/{seg(key)}/links/{seg(session_ref)}",
                        actor=actor)

    async def hook(self, event: dict[str, Any]) -> dict[str, Any]:
        """What the host answers Claude Code's hook ``event`` (the hook client's route)."""
        return await self._ask(dict[str, Any], "POST", "/hooks/claude", body=event)

    async def live(self) -> list[HookedSession]:
        return await self._ask(list[HookedSession], "GET", "/board/live")

    async def unlinked(self, project: str | None = None) -> list[HookedSession]:
        return await self._ask(list[HookedSession], "GET", "/board/unlinked", project=project)

    async def environments(self, project: str) -> list[Environment]:
        return await self._ask(list[Environment], "GET",
                               f"/board/projects/{seg(project)}/environments")

    async def set_environment(self, project: str, env: Environment, *,
                              actor: str = "owner") -> Environment:
        refs = {k: list(v) for k, v in to_jsonable_python(env.refs).items() if v}
        return await self._ask(
            Environment, "PUT",
            f"/board/projects/{seg(project)}/environments/{seg(env.name)}",
            body={"kind": env.kind, "level": env.level, "refs": refs, "notes": env.notes},
            actor=actor)

    async def remove_environment(self, project: str, name: str, *, actor: str = "owner") -> None:
        await self._ask(Done, "DELETE",
                        f"/board/projects/{seg(project)}/environments/{seg(name)}",
                        actor=actor)

    async def guard_policy(self, repo: str | Path,
                           worktree: str | Path | None = None) -> GuardPolicy:
        return await self._ask(GuardPolicy, "GET", "/board/guard-policy", repo=str(repo),
                               worktree=None if worktree is None else str(worktree))

    async def login_link(self, task: str | None = None) -> str:
        """A one-time URL that signs a browser in to the host's web board (10 minutes),
        landing on ``task``'s page when given."""
        from relay.core.errors import HostError, RelayError, error_code

        try:
            answer = await self._ask(dict[str, str], "POST", "/board/login-link", task=task)
        except RelayError as exc:
            if error_code(exc) != "relay" or exc.message != "Not Found":
                raise
            raise HostError("This Relay host does not serve the web board (it has no "
                            "/api/v1/board/login-link).",
                            "Restart the host with this version of Relay (relay-cli serve, "
                            "or the window).") from None
        return answer["url"]

class IntegrationsClient(Part):
    """``engine.integrations``: Claude Code's hooks and MCP server (the host's URL is the one
    registered)."""

    async def claude(self, config_dir: Path | str | None = None,
                     account: str | None = None) -> list[ClaudeIntegration]:
        return await self._ask(list[ClaudeIntegration], "GET", "/integrations/claude",
                               config_dir=None if config_dir is None else str(config_dir),
                               account=account)

    async def claude_apply(self, config_dir: Path | str | None = None,
                           account: str | None = None) -> list[Applied]:
        return await self._setup("apply", config_dir, account)

    async def claude_remove(self, config_dir: Path | str | None = None,
                            account: str | None = None) -> list[Applied]:
        return await self._setup("remove", config_dir, account)

    async def _setup(self, action: str, config_dir: Path | str | None,
                     account: str | None) -> list[Applied]:
        return await self._ask(list[Applied], "POST", "/integrations/claude", body={
            "action": action, "config_dir": None if config_dir is None else str(config_dir),
            "account": account})
