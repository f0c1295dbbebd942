"""The board over a real host on a real socket: ``client.board`` answers what
``engine.board`` says in-process (the same dataclasses), refusals are JSON ``{code,
message, hint}`` rebuilt as the same RelayError, and ``POST /api/v1/hooks/claude`` takes
Claude Code's hook events — bounded, leniently parsed, behind the token."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from relay.core.errors import RelayError, error_code
from relay.core.guard import Environment, EnvRefs
from tests.api.conftest import Served


def raw(served: Served, token: str | None = None) -> httpx.AsyncClient:
    token = served.token if token is None else token
    return httpx.AsyncClient(base_url=served.host.url + "/api/v1", trust_env=False, timeout=30,
                             headers={"Authorization": f"Bearer {token}"})


async def test_a_task_through_its_stages_over_the_api(served: Served, git_repo: Path) -> None:
    board, engine = served.client.board, served.engine.board
    project = await board.project_for(git_repo)
    assert project == await engine.project_for(git_repo)
    assert await board.projects() == await engine.projects() == [project]

    task = await board.create_task(str(git_repo), "add a greeting", next_step="write it")
    assert (task.project, task.stage, task.title, task.next_step) == (
        project.slug, "plan", "add a greeting", "write it")
    assert task.key.startswith(project.slug.upper() + "-")
    by_slug = await board.create_task(project.slug, "second", stage="dev")
    assert by_slug.stage == "dev"

    moved = await board.set_stage(task.key, "dev", note="starting",
                                  expected_version=task.version)
    assert moved.stage == "dev"
    with pytest.raises(RelayError) as moved_since:  # a drag from a stale board
        await board.set_stage(task.key, "test", expected_version=task.version)
    assert error_code(moved_since.value) == "version_conflict"
    changed = await board.update_task(task.key, expected_version=moved.version,
                                      waiting_on="a review")
    assert (changed.waiting_on, changed.next_step) == ("a review", "write it")
    with pytest.raises(RelayError) as stale:
        await board.update_task(task.key, expected_version=moved.version, title="stale")
    assert error_code(stale.value) == "version_conflict"

    report = await board.add_report(task.key, "greeting written", "hello.py", author="agent:s1",
                                    session="s1")
    decision = await board.add_decision(task.key, "plain print, no logging", decided_by="owner")
    said = await board.comment(task.key, "also say goodbye")
    assert [c.id for c in await board.comments(task.key, unread=True)] == [said.id]

    detail = await board.task(task.key)
    assert detail == await engine.task(task.key)
    assert detail.card.task.key == task.key
    assert detail.reports == [report]
    assert detail.decisions == [decision]
    assert [c.body for c in detail.comments] == ["also say goodbye"]
    assert detail.card.last_report == report

    cards = await board.cards(project.slug)
    assert cards == await engine.cards(project.slug)
    assert {c.task.key for c in cards} == {task.key, by_slug.key}
    assert [c.task.key for c in await board.cards(project.slug, done=False)] != []
    await board.set_stage(by_slug.key, "done")
    assert by_slug.key not in {c.task.key for c in await board.cards(project.slug, done=False)}


async def test_links_comments_and_their_acknowledgement(served: Served, git_repo: Path) -> None:
    board = served.client.board
    task = await board.create_task(str(git_repo), "linked work")
    session = str(uuid.uuid4())
    link = await board.link(task.key, session, actor=f"agent:{session}")
    assert (link.session_ref, link.kind) == (session, "claude")
    detail = await board.task(task.key)
    assert [s.session_ref for s in detail.card.sessions] == [session]

    first = await board.comment(task.key, "use the new API")
    second = await board.comment(task.key, "and add a test")
    assert await board.ack_comments(task.key, [first.id], session=session) == 1
    unread = await board.comments(task.key, unread=True)
    assert [c.id for c in unread] == [second.id]
    acked = next(c for c in await board.comments(task.key) if c.id == first.id)
    assert acked.acked_ms is not None

    await board.unlink(task.key, session, actor="owner")
    assert (await board.task(task.key)).card.sessions == []


async def test_refusals_are_json_errors(served: Served, git_repo: Path) -> None:
    board = served.client.board
    with pytest.raises(RelayError) as missing:
        await board.task("NOPE-404")
    assert error_code(missing.value) == "task_not_found"
    assert missing.value.hint
    task = await board.create_task(str(git_repo), "a task")
    async with raw(served) as http:
        gone = await http.get("/board/tasks/NOPE-404")
        assert gone.status_code == 404
        assert set(gone.json()["error"]) == {"code", "message", "hint"}
        assert gone.json()["error"]["code"] == "task_not_found"
        stale = await http.patch(f"/board/tasks/{task.key}",
                                 json={"title": "x", "expected_version": task.version + 5})
        assert stale.status_code == 409
        assert stale.json()["error"]["code"] == "version_conflict"
        stage = await http.post(f"/board/tasks/{task.key}/stage", json={"stage": "shipping"})
        assert 400 <= stage.status_code < 500
        assert "shipping" in stage.json()["error"]["message"]
        empty = await http.post("/board/tasks", json={"repo_or_project": str(git_repo),
                                                      "title": ""})
        assert empty.status_code == 422
        assert empty.json()["error"]["code"] == "invalid_request"
        anonymous = await http.get("/board/projects", headers={"Authorization": "Bearer no"})
        assert anonymous.status_code == 401


async def test_the_guards_environments(served: Served, git_repo: Path) -> None:
    board = served.client.board
    slug = (await board.project_for(git_repo)).slug
    prod = Environment("prod", "live", "ask",
                       EnvRefs(kube_contexts=("prod-eu",), ssh_hosts=("db1",),
                               urls=("https://api.example.com",)), "the real one")
    assert await board.set_environment(slug, prod) == prod
    assert await board.environments(slug) == await served.engine.board.environments(slug) == [prod]
    policy = await board.guard_policy(git_repo)
    assert policy.environments == (prod,)
    async with raw(served) as http:
        unknown = await http.put(f"/board/projects/{slug}/environments/x",
                                 json={"kind": "live", "level": "ask",
                                       "refs": {"passwords": ["x"]}})
        assert unknown.status_code == 400
        assert "passwords" in unknown.json()["error"]["message"]
        secret = await http.put(f"/board/projects/{slug}/environments/x", json={
            "kind": "live", "level": "ask",
            "refs": {"urls": ["https://admin:hunter2-Secret-9f8e7d@db.example.com"]}})
        assert secret.status_code >= 400
        assert "hunter2-Secret-9f8e7d" not in secret.text
    await board.remove_environment(slug, "prod")
    assert await board.environments(slug) == []


async def test_the_hook_endpoint(served: Served, git_repo: Path) -> None:
    session = str(uuid.uuid4())
    start = {"session_id": session, "hook_event_name": "SessionStart", "cwd": str(git_repo),
             "source": "startup", "transcript_path": "/tmp/t.jsonl"}
    async with raw(served) as http:
        answer = await http.post("/hooks/claude", json=start)
        assert answer.status_code == 200, answer.text
        context = answer.json()["hookSpecificOutput"]["additionalContext"]
        assert session in context
        prompt = await http.post("/hooks/claude", json={
            **start, "hook_event_name": "UserPromptSubmit", "prompt": "do it"})
        assert prompt.status_code == 200
        assert isinstance(prompt.json(), dict)

        too_big = await http.post("/hooks/claude", content=b"{" + b" " * (256 * 1024) + b"}",
                                  headers={"Content-Type": "application/json"})
        assert too_big.status_code == 413
        assert too_big.json()["error"]["code"] == "body_too_large"
        bad = await http.post("/hooks/claude", content=b"{not json",
                              headers={"Content-Type": "application/json"})
        assert bad.status_code == 400
        assert set(bad.json()["error"]) == {"code", "message", "hint"}
        listed = await http.post("/hooks/claude", json=[1, 2])
        assert listed.status_code == 400
    async with raw(served, "not-the-token") as http:
        assert (await http.post("/hooks/claude", json=start)).status_code == 401

    live = {s.agent_session_id: s for s in await served.client.board.live()}
    assert live[session].state == "working"
    assert live[session].cwd == str(git_repo)
    assert served.engine.board.live_states().get(session) == live[session]


async def test_the_login_link_is_a_one_time_url_of_this_host(served: Served) -> None:
    url = await served.client.board.login_link()
    assert url.startswith(served.host.url + "/board/login?code=")
    assert url != await served.client.board.login_link()  # a new code each time


async def test_the_boards_events_page_by_its_session_name(served: Served, git_repo: Path) -> None:
    task = await served.client.board.create_task(str(git_repo), "paged")
    await served.client.board.set_stage(task.key, "dev")
    async with raw(served) as http:
        page = (await http.get("/events", params={"session": "board"})).json()
        missing = await http.get("/events", params={"session": "no-such-session"})
    kinds = [(e["session_id"], e["event"]["kind"], e["event"]["action"]) for e in page["events"]]
    assert kinds[-2:] == [("board", "board_changed", "created"), ("board", "board_changed", "stage")]
    assert missing.status_code == 404
