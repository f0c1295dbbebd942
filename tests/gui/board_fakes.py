"""An in-memory board for the Board dock's tests, and cards in each state."""

from __future__ import annotations

import dataclasses
from typing import Any

from relay.board.model import Card, Comment, Project, Report, SessionLink, Task
from relay.core.errors import RelayError, VersionConflictError
from relay.core.live import HookedSession, LiveState

NOW = 1_795_953_600_000


def task(key: str, title: str, stage: str, *, project: str = "shop",
         next_step: str | None = None) -> Task:
    return Task(key=key, project=project, title=title, stage=stage,  # type: ignore[arg-type]
                next_step=next_step, waiting_on=None, branch=None, description=None, version=1,
                created_ms=NOW, updated_ms=NOW, stage_ms=NOW)


def hooked(sid: str, state: LiveState, *, detail: str = "",
           relay_session_id: str | None = None) -> HookedSession:
    return HookedSession(agent_session_id=sid, runtime="claude", cwd="/home/me/src/shop",
                         state=state, detail=detail,
                         needs="permission" if state == "needs_input" else None,
                         relay_session_id=relay_session_id, updated_ms=NOW)


def card(key: str, title: str, stage: str, *, links: list[SessionLink] | None = None,
         report: str | None = None, plan: list[dict[str, Any]] | None = None,
         project: str = "shop", next_step: str | None = None) -> Card:
    links = links or []
    needs = any(link.live is not None and link.live.state == "needs_input" for link in links)
    last = (Report(1, key, "agent", None, report, "", NOW) if report is not None else None)
    return Card(task(key, title, stage, project=project, next_step=next_step), links, needs,
                last, plan or [])


def demo_cards() -> list[Card]:
    """A few tasks across the stages, one waiting for the user."""
    return [
        card("SHOP-1", "Cart page", "plan", next_step="agree on the layout"),
        card("SHOP-2", "Checkout with saved cards", "dev",
             links=[SessionLink("c1a0de", "claude", hooked("c1a0de", "needs_input",
                                                           detail="Bash: rm -rf build"))],
             report="Payment form done; the saved-card list is next",
             plan=[{"content": "Form", "status": "completed"},
                   {"content": "List", "status": "in_progress"},
                   {"content": "Tests", "status": "pending"}],
             next_step="answer the permission prompt"),
        card("SHOP-3", "Order e-mails", "dev",
             links=[SessionLink("r-42", "relay", None, "running")]),
        card("SHOP-4", "Search results ranking", "review",
             links=[SessionLink("b10c", "claude", hooked("b10c", "quota_blocked"))]),
        card("SHOP-5", "Stock sync", "test",
             links=[SessionLink("1d1e", "claude", hooked("1d1e", "idle"))]),
        card("SHOP-6", "Price rounding fix", "live"),
        card("API-1", "Rate limiter", "done", project="api",
             links=[SessionLink("e11d", "claude", hooked("e11d", "ended"))]),
    ]


class FakeBoard:
    """The board in memory: ``refuse`` makes set_stage fail with that message."""

    def __init__(self, cards: list[Card] | None = None) -> None:
        self.cards_by_key = {c.task.key: c for c in (cards if cards is not None
                                                     else demo_cards())}
        self.refuse: str | None = None
        self.comments: list[tuple[str, str]] = []
        self.web_links: list[str | None] = []
        self.card_reads: list[str] = []
        #: the hooked sessions no card names (sessions without a task)
        self.free: list[HookedSession] = []

    async def projects(self) -> list[Project]:
        slugs = sorted({c.task.project for c in self.cards_by_key.values()})
        return [Project(s, s.title(), f"/home/me/src/{s}") for s in slugs]

    async def cards(self, project: str | None = None, *, done: bool = True) -> list[Card]:
        return [c for c in self.cards_by_key.values()
                if project is None or c.task.project == project]

    async def card(self, key: str) -> Card:
        self.card_reads.append(key)
        return self.cards_by_key[key]

    async def set_stage(self, key: str, stage: str, *,
                        expected_version: int | None = None) -> Task:
        if self.refuse:
            raise RelayError(self.refuse, "Reload the board and try again.")
        c = self.cards_by_key[key]
        if expected_version is not None and expected_version != c.task.version:
            raise VersionConflictError(f"{key} changed since you loaded it.",
                                       "Reload the board and try again.")
        moved = dataclasses.replace(c.task, stage=stage,  # type: ignore[arg-type]
                                    version=c.task.version + 1)
        self.cards_by_key[key] = dataclasses.replace(c, task=moved)
        return moved

    async def comment(self, key: str, body: str) -> Comment:
        self.comments.append((key, body))
        return Comment(len(self.comments), key, "owner", "owner", body, NOW)

    async def unlinked(self, project: str | None = None) -> list[HookedSession]:
        return [s for s in self.free if project is None or s.cwd.endswith(f"/{project}")]

    async def web_link(self, task: str | None = None) -> str:
        self.web_links.append(task)
        return "http://127.0.0.1:9/board/login?code=one-time"
