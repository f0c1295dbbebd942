"""The web board over a real host on a real socket: sign-in, CSRF, the gate's board rules,
security headers, escaping and the live stream."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from relay.api.web.auth import COOKIE, BoardAuth
from relay.api.web.render import render
from relay.board.model import STAGES, Card, Report, Task, TaskDetail
from tests.api.conftest import Served
from tests.api.web.conftest import SCRIPT, Board, login_url

PAGE_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def assert_board_headers(r: httpx.Response) -> None:
    csp = r.headers["content-security-policy"]
    for part in ("default-src 'self'", "frame-ancestors 'none'", "form-action 'self'",
                 "base-uri 'none'"):
        assert part in csp
    for name, value in PAGE_HEADERS.items():
        assert r.headers[name] == value


def assert_no_token(served: Served, r: httpx.Response) -> None:
    assert served.token not in r.text
    assert all(served.token not in v for v in r.headers.values())


async def test_a_browser_without_the_cookie_is_told_how_to_sign_in(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False) as http:
        for path in ("/board", "/board/p/x", "/board/t/X-1", "/board/f/columns",
                     "/board/events"):
            r = await http.get(path)
            assert r.status_code == 401, path
            assert "relay-cli board --open" in r.text
            assert r.headers["content-type"].startswith("text/html")
            assert_board_headers(r)
            assert_no_token(served, r)
        # a forged cookie is no cookie
        r = await http.get("/board", headers={"Cookie": f"{COOKIE}={served.token}"})
        assert r.status_code == 401


async def test_the_login_link_needs_the_token_and_works_once(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False) as http:
        assert (await http.post("/api/v1/board/login-link")).status_code == 401
        url = await login_url(served)
        first = await http.get(url)
        assert first.status_code == 303
        cookie = first.headers["set-cookie"]
        attrs = {p.strip() for p in cookie.split(";")}
        assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= attrs
        assert served.token not in cookie
        assert_board_headers(first)
        again = await httpx.AsyncClient(base_url=served.host.url, trust_env=False).get(url)
        assert again.status_code == 403
        assert "set-cookie" not in again.headers
        assert "relay-cli board --open" in again.text
        assert (await http.get("/board/login?code=guess")).status_code == 403


async def test_a_login_link_from_another_site_signs_in_through_a_page(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False) as http:
        r = await http.get(await login_url(served),
                           headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
        assert r.status_code == 200
        assert "set-cookie" in r.headers
        assert 'href="/board"' in r.text
        # a cross-site fetch that is not a navigation is refused by the gate
        r = await http.get("/board", headers={"Sec-Fetch-Site": "cross-site",
                                              "Sec-Fetch-Mode": "cors"})
        assert r.status_code == 403


async def test_a_link_to_a_task_lands_on_its_page_and_never_off_the_board(
        served: Served) -> None:
    url = await served.client.board.login_link("REPO-7")
    assert url.endswith("&next=/board/t/REPO-7")
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False) as http:
        landed = await http.get(url)
        assert (landed.status_code, landed.headers["location"]) == (303, "/board/t/REPO-7")
        for elsewhere in ("https://evil.example/", "//evil.example", "/api/v1/sessions",
                          "/board/../api", "/board/t/x/../../api"):
            code = (await served.client.board.login_link()).split("code=")[1]
            r = await http.get("/board/login", params={"code": code, "next": elsewhere})
            assert (r.status_code, r.headers["location"]) == (303, "/board"), elsewhere
    # a task key that is no key names no page
    assert "next=" not in await served.client.board.login_link("../../api")


async def test_the_board_shows_the_task_and_every_answer_has_the_headers(board: Board) -> None:
    page = await board.http.get("/board")
    assert board.key in page.text
    assert "Fix the &lt;b&gt;login&lt;/b&gt; page" in page.text
    assert "<b>login</b>" not in page.text
    assert page.headers["cache-control"] == "no-store"
    slug = board.key.split("-")[0].lower()
    for path in ("/board", f"/board/p/{slug}", f"/board/t/{board.key}", "/board/f/columns",
                 f"/board/f/card/{board.key}", f"/board/f/task/{board.key}",
                 "/board/static/htmx.min.js", "/board/static/app.js", "/board/static/app.css",
                 "/board/static/nothing.js", "/board/p/nothing", "/board/t/NOPE-1"):
        r = await board.http.get(path)
        assert_board_headers(r)
        assert_no_token(board.served, r)
        assert r.status_code == (404 if "nothing" in path or "NOPE" in path else 200), path
    js = await board.http.get("/board/static/htmx.min.js")
    assert js.headers["content-type"].startswith("text/javascript")
    assert "htmx" in js.text
    # no inline script or style in a page
    task = (await board.http.get(f"/board/t/{board.key}")).text
    assert "<script>" not in task
    assert "<style" not in task
    assert " style=" not in task


async def test_the_cookie_opens_the_board_only_not_the_api_or_mcp(board: Board) -> None:
    assert (await board.http.get("/api/v1/status")).status_code == 401
    r = await board.http.post("/mcp", json={}, headers={"Accept": "application/json"})
    assert r.status_code == 401


async def test_a_comment_through_the_form_needs_the_csrf_token(board: Board) -> None:
    path = f"/board/t/{board.key}/comments"
    origin = board.same_origin()
    refused = [
        await board.http.post(path, data={"body": "no token"}, headers=origin),
        await board.http.post(path, data={"body": "bad token", "csrf": "x" * 64},
                              headers=origin),
        await board.http.post(path, data={"body": "no origin", "csrf": board.csrf}),
    ]
    for r in refused:
        assert r.status_code == 403
        assert_board_headers(r)
    assert await board.served.engine.board.comments(board.key) == []
    ok = await board.http.post(path, data={"body": "please add a test", "csrf": board.csrf},
                               headers=origin)
    assert ok.status_code == 303
    assert ok.headers["location"] == f"/board/t/{board.key}"
    hx = await board.http.post(path, data={"body": "and <i>docs</i>"},
                               headers={**origin, "HX-Request": "true",
                                        "X-CSRF-Token": board.csrf})
    assert hx.status_code == 200
    assert 'id="task"' in hx.text
    assert "and &lt;i&gt;docs&lt;/i&gt;" in hx.text
    bodies = [c.body for c in await board.served.engine.board.comments(board.key)]
    assert bodies == ["please add a test", "and <i>docs</i>"]
    empty = await board.http.post(path, data={"body": "  ", "csrf": board.csrf}, headers=origin)
    assert empty.status_code == 400


@pytest.mark.parametrize("headers", [
    {"Origin": "https://evil.example"},
    {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
    {"Origin": "null"},
])
async def test_a_forged_cross_site_post_is_refused(board: Board, headers: dict[str, str]) -> None:
    for csrf in ("", "wrong", board.csrf):  # even a stolen CSRF token is not enough
        r = await board.http.post(f"/board/t/{board.key}/stage",
                                  data={"stage": "done", "csrf": csrf}, headers=headers)
        assert r.status_code == 403, (headers, csrf)
    assert (await board.served.engine.board.task(board.key)).card.task.stage == "dev"


async def test_the_stage_form_moves_the_task(board: Board) -> None:
    path = f"/board/t/{board.key}/stage"
    bad = await board.http.post(path, data={"stage": "shipped", "csrf": board.csrf},
                                headers=board.same_origin())
    assert bad.status_code == 400
    r = await board.http.post(path, data={"stage": "review", "csrf": board.csrf},
                              headers=board.same_origin())
    assert r.status_code == 303
    assert (await board.served.engine.board.task(board.key)).card.task.stage == "review"
    columns = (await board.http.get("/board/f/columns")).text
    review = columns.split('data-stage="review"', 1)[1].split("</section>", 1)[0]
    assert board.key in review


async def test_agent_text_is_shown_as_text(board: Board) -> None:
    await board.served.engine.board.add_report(board.key, SCRIPT, SCRIPT, author="agent:x")
    await board.served.engine.board.add_decision(board.key, SCRIPT, decided_by="agent:x")
    for path in (f"/board/t/{board.key}", "/board", f"/board/f/card/{board.key}"):
        text = (await board.http.get(path)).text
        assert "<script>alert(1)" not in text
        assert "<img src=x" not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in text


async def test_the_live_stream_sends_board_events_and_resumes(board: Board) -> None:
    async def first_frame(headers: dict[str, str], url: str) -> dict[str, object]:
        async with board.http.stream("GET", url, headers=headers) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            assert_board_headers(r)
            event_id = None
            async for line in r.aiter_lines():
                if line.startswith("id: "):
                    event_id = int(line[4:])
                if line.startswith("data: "):
                    data: dict[str, object] = json.loads(line[6:])
                    assert data["id"] == event_id
                    return data
        raise AssertionError("the stream ended")

    last = await board.served.engine.last_event_id()
    waiting = asyncio.create_task(first_frame({}, f"/board/events?after={last}"))
    await board.served.engine.board.set_stage(board.key, "test")
    data = await asyncio.wait_for(waiting, 30)
    assert data["session_id"] == "board"
    event = data["event"]
    assert isinstance(event, dict)
    assert event["kind"] == "board_changed"
    assert event["task"] == board.key
    # a reconnect with Last-Event-ID gets what came after it, not what it had
    await board.served.engine.board.set_stage(board.key, "live")
    resumed = await asyncio.wait_for(
        first_frame({"Last-Event-ID": str(data["id"])}, "/board/events?after=0"), 30)
    assert isinstance(resumed["id"], int)
    assert resumed["id"] > int(str(data["id"]))
    assert resumed["event"]["fields"]["to"] == "live"  # type: ignore[index]


async def test_a_secret_an_agent_wrote_is_scrubbed_from_the_pages(board: Board) -> None:
    key = "sk-ant-api03-" + "Zq7" * 30
    await board.served.engine.board.add_report(board.key, f"leaked {key}",
                                               f"ANTHROPIC_API_KEY={key}", author="agent:x")
    for path in (f"/board/t/{board.key}", "/board", f"/board/f/card/{board.key}"):
        text = (await board.http.get(path)).text
        assert key not in text
        assert key[:40] not in text  # not a cut-off piece either (the card shortens it)
        assert "[REDACTED" in text


def test_the_templates_scrub_what_they_print_and_keep_the_csrf_token() -> None:
    """Whatever reaches a template unscrubbed (the board scrubs on write; a template must not
    count on it) is scrubbed as it is printed, before a card shortens it."""
    key = "sk-ant-api03-" + "Zq7" * 30
    task = Task(key="R-1", project="r", title=f"rotate {key}", stage="dev", next_step=key,
                waiting_on=None, branch=None, description=f"TOKEN={key}", version=1,
                created_ms=1, updated_ms=1, stage_ms=1)
    report = Report(1, "R-1", "agent", None, f"found {key}" + "!" * 300, key, 1)
    card = Card(task=task, sessions=[], needs_input=False, last_report=report, plan=[],
                open_comments=0)
    detail = TaskDetail(card=card, reports=[report], decisions=[], comments=[])
    csrf = BoardAuth("t" * 43).csrf_token()
    for html in (render("_card.html", card=card).body,
                 render("_task.html", detail=detail, stages=STAGES, csrf=csrf).body):
        assert key.encode() not in html
        assert key[:30].encode() not in html
        assert b"[REDACTED" in html
    assert csrf.encode() in render("_task.html", detail=detail, stages=STAGES, csrf=csrf).body


async def test_a_hooked_session_without_a_task_shows_above_the_columns_until_linked(
        board: Board) -> None:
    engine = board.served.engine
    sid = "5e55104a-0000-4000-8000-00000000cafe"
    await engine.board.hook({"session_id": sid, "hook_event_name": "Notification",
                             "cwd": str(board.repo / "src"),
                             "message": "Claude needs your permission to use Bash",
                             "notification_type": "permission_prompt"})
    slug = board.key.split("-")[0].lower()
    for path in ("/board", f"/board/p/{slug}", "/board/f/unlinked",
                 f"/board/f/unlinked?project={slug}"):
        text = (await board.http.get(path)).text
        assert "Sessions without a task" in text, path
        assert '<span class="state state-needs_input">needs input</span>' in text, path
        assert f"<code>{sid[:8]}</code>" in text, path
        assert '<span class="folder">src</span>' in text, path
        assert "needs your permission" in text, path
    assert "Sessions without a task" not in (await board.http.get("/board/p/nothing")).text
    # the strip says where it is refetched from, and what wakes it (app.js maps the events)
    page = (await board.http.get(f"/board/p/{slug}")).text
    assert f'data-src="/board/f/unlinked?project={slug}" data-watch="hooked"' in page
    js = (await board.http.get("/board/static/app.js")).text
    assert '"hooked"' in js

    await engine.board.link(board.key, sid, actor=f"agent:{sid}")
    for path in ("/board", f"/board/p/{slug}", "/board/f/unlinked"):
        text = (await board.http.get(path)).text
        assert "Sessions without a task" not in text, path
        assert 'id="unlinked"' in text, path
        assert " hidden>" in text, path
    # now on its card instead
    assert sid[:8] in (await board.http.get(f"/board/f/card/{board.key}")).text
