"""A host with a board and a browser-less client signed in to it over the real socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import Served

SCRIPT = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@dataclass
class Board:
    served: Served
    http: httpx.AsyncClient  # signed in: it holds the board cookie
    csrf: str
    key: str  # a task in stage "dev"
    repo: Path

    @property
    def origin(self) -> str:
        return self.served.host.url.rstrip("/")

    def same_origin(self, **extra: str) -> dict[str, str]:
        return {"Origin": self.origin, **extra}


async def login_url(served: Served) -> str:
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        r = await http.post(served.host.url.rstrip("/") + "/api/v1/board/login-link",
                            headers={"Authorization": f"Bearer {served.token}"})
    assert r.status_code == 200, r.text
    url = str(r.json()["url"])
    assert url.startswith(served.host.url.rstrip("/") + "/board/login?code=")
    return url


def csrf_of(html: str) -> str:
    marker = '<meta name="csrf-token" content="'
    assert marker in html
    return html.split(marker, 1)[1].split('"', 1)[0]


@pytest.fixture
async def board(served: Served, git_repo: Path) -> AsyncIterator[Board]:
    task = await served.engine.board.create_task(str(git_repo), "Fix the <b>login</b> page",
                                                 stage="dev", next_step="write the test",
                                                 branch="fix/login")
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False, timeout=10) as http:
        r = await http.get(await login_url(served))
        assert r.status_code == 303
        assert r.headers["location"] == "/board"
        page = await http.get("/board")
        assert page.status_code == 200, page.text
        yield Board(served, http, csrf_of(page.text), task.key, git_repo)
