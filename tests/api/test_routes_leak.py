"""A planted API key appears in no answer of any route (tests/core/test_key_leak.py's search,
over HTTP).

A key is stored in the vault through ``POST /api/v1/accounts``; then every route the app
has — enumerated from its FastAPI router, so a route added later cannot slip by — is
called with real data (a finished demo session with commits, a pipeline run, a scanned
repository), and each answer's body and headers are searched for the key in every form
the key-leak test knows (raw, base64, hex, UTF-16, a fragment). A route that is neither
called here nor exempted with a reason fails the test.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import httpx
import pytest
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Route

from relay.api.app import build_app
from relay.core.models import SessionSpec
from relay.pipelines import files
from tests.api.conftest import Served
from tests.api.test_talk_api import asking
from tests.conftest import make_repo
from tests.pipelines.helpers import graph
from tests.secrets.scan import hits

KEY = "sk-ant-api03-PLANTED" + secrets.token_urlsafe(64)

#: (method, route path) → why it is not called here
EXEMPT: dict[tuple[str, str], str] = {
    ("GET", "/api/v1/stream"): "a live stream that never ends; its frames are the events "
                               "GET /api/v1/events pages, which is called",
    ("GET", "/api/v1/sessions/{session_id}/stream"): "the same frames as /events for one "
                                                      "session (tests/api streams follow it)",
    ("GET", "/board/events"): "the board's events as the same frames as /api/v1/stream "
                              "(tests/api/web follows it)",
}


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch, vault_env: None, fakes_on_path: Path) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")


def app_routes(served: Served) -> set[tuple[str, str]]:
    """Every (method, path) the host's app serves: its routes and, recursively, those of the
    routers it includes (FastAPI 0.165 keeps an included router as one entry)."""
    gate, _ctx = build_app(served.engine, "unused")
    found: set[tuple[str, str]] = set()

    def walk(routes: list[BaseRoute], prefix: str) -> None:
        for route in routes:
            if isinstance(route, APIRoute | Route):
                found.update((m, prefix + route.path) for m in route.methods or ()
                             if m != "HEAD")
            elif (inner := getattr(route, "original_router", None)) is not None:
                walk(inner.routes, prefix + route.include_context.prefix)  # type: ignore[attr-defined]
            else:  # a mount (/mcp) or a kind of route this test does not know
                raise AssertionError(f"unknown route {route!r}: teach this test about it")

    walk(gate.app.routes, "")  # type: ignore[attr-defined]
    assert len(found) > 50, found
    return found


async def test_no_route_answers_the_planted_key(served: Served, tmp_path: Path,
                                                 git_repo: Path) -> None:
    folder = tmp_path / "claude-leak"
    folder.mkdir()
    client = served.client
    sid = await client.start_session(SessionSpec(
        repo=git_repo, task="add a greeting", runtime="demo",
        chain=["demo:primary", "demo:backup"], demo_limit_after=2))
    assert (await client.wait_session(sid)).state == "completed"
    line = await client.history.timeline(sid)
    first, tip = line.commits[0].sha, line.commits[-1].sha
    pipeline = graph("leak", {"a": []})
    await asyncio.to_thread(files.save, git_repo, pipeline)
    source = await client.pipelines.repo_source(git_repo)
    assert source is not None
    known = make_repo(tmp_path / "k", {"leak.py": "def leak():\n    return 1\n"})
    # two demo sessions that wait for an answer (busy): one to queue messages for (through
    # the API and the board), one to interrupt
    (busy, _), (to_interrupt, _) = await asking(served, git_repo), await asking(served, git_repo)
    body_pipeline = pipeline.model_dump(mode="json", by_alias=True)

    # (method, route path, concrete path, body, query)
    calls: list[tuple[str, str, str, object, dict[str, str | int]]] = [
        ("POST", "/api/v1/accounts", "/api/v1/accounts",
         {"provider": "claude", "label": "leak", "config_dir": str(folder),
          "auth_kind": "api_key", "api_key": KEY}, {}),
        ("GET", "/api/v1/health", "/api/v1/health", None, {}),
        ("GET", "/api/v1/status", "/api/v1/status", None, {}),
        ("GET", "/api/v1/sessions", "/api/v1/sessions", None, {}),
        ("POST", "/api/v1/sessions", "/api/v1/sessions",
         {"repo": str(git_repo), "task": "again", "runtime": "demo",
          "chain": ["claude:leak"]}, {}),
        ("GET", "/api/v1/sessions/{session_id}", f"/api/v1/sessions/{sid}", None, {}),
        ("GET", "/api/v1/sessions/{session_id}/spec", f"/api/v1/sessions/{sid}/spec", None, {}),
        ("GET", "/api/v1/sessions/{session_id}/runs", f"/api/v1/sessions/{sid}/runs", None, {}),
        ("GET", "/api/v1/sessions/{session_id}/handoffs", f"/api/v1/sessions/{sid}/handoffs",
         None, {}),
        ("GET", "/api/v1/sessions/{session_id}/cost", f"/api/v1/sessions/{sid}/cost", None, {}),
        ("GET", "/api/v1/sessions/{session_id}/questions", f"/api/v1/sessions/{sid}/questions",
         None, {}),
        ("POST", "/api/v1/sessions/{session_id}/answers", f"/api/v1/sessions/{sid}/answers",
         {"request_id": "r1", "text": KEY}, {}),
        ("POST", "/api/v1/sessions/{session_id}/handoff", f"/api/v1/sessions/{sid}/handoff",
         {"to": "claude:leak"}, {}),
        ("POST", "/api/v1/sessions/{session_id}/continue", f"/api/v1/sessions/{sid}/continue",
         {"prompt": "and wave"}, {}),
        ("POST", "/api/v1/sessions/{session_id}/stop", f"/api/v1/sessions/{sid}/stop", None, {}),
        ("POST", "/api/v1/sessions/{session_id}/archive", f"/api/v1/sessions/{sid}/archive",
         None, {}),
        ("POST", "/api/v1/sessions/{session_id}/unarchive",
         f"/api/v1/sessions/{sid}/unarchive", None, {}),
        ("GET", "/api/v1/events", "/api/v1/events", None, {"after": 0, "limit": 5000}),
        # talking to a session (issue 22): a queued message carrying the key, edited, read,
        # cancelled; a turn interrupted; a fork whose task carries it
        ("POST", "/api/v1/sessions/{session_id}/messages", f"/api/v1/sessions/{busy}/messages",
         {"text": f"use {KEY}"}, {}),
        ("PATCH", "/api/v1/sessions/{session_id}/messages/{message_id}",
         f"/api/v1/sessions/{busy}/messages/MESSAGE", {"text": f"rather {KEY}"}, {}),
        ("GET", "/api/v1/sessions/{session_id}/messages", f"/api/v1/sessions/{busy}/messages",
         None, {}),
        ("GET", "/api/v1/sessions/{session_id}/talk", f"/api/v1/sessions/{busy}/talk", None,
         {}),
        ("DELETE", "/api/v1/sessions/{session_id}/messages/{message_id}",
         f"/api/v1/sessions/{busy}/messages/MESSAGE", None, {}),
        ("POST", "/api/v1/sessions/{session_id}/interrupt",
         f"/api/v1/sessions/{to_interrupt}/interrupt", None, {}),
        ("POST", "/api/v1/sessions/{session_id}/fork", f"/api/v1/sessions/{sid}/fork",
         {"prompt": f"again with {KEY}"}, {}),
        # the wallet and the accounts
        ("GET", "/api/v1/accounts", "/api/v1/accounts", None, {}),
        ("GET", "/api/v1/accounts/{provider}/{label}", "/api/v1/accounts/claude/leak", None, {}),
        ("POST", "/api/v1/accounts/{provider}/{label}/check",
         "/api/v1/accounts/claude/leak/check", None, {}),
        ("PATCH", "/api/v1/accounts/{provider}/{label}", "/api/v1/accounts/claude/leak",
         {"api_key": KEY, "new_label": "leak2"}, {}),
        ("PATCH", "/api/v1/accounts/{provider}/{label}", "/api/v1/accounts/claude/leak2",
         {"new_label": "leak"}, {}),
        ("PUT", "/api/v1/accounts/{provider}/preferred", "/api/v1/accounts/claude/preferred",
         {"label": "leak"}, {}),
        ("PUT", "/api/v1/accounts/{provider}/{label}/paused",
         "/api/v1/accounts/claude/leak/paused", {"paused": False}, {}),
        ("POST", "/api/v1/wallet/refresh", "/api/v1/wallet/refresh", None, {}),
        ("GET", "/api/v1/wallet", "/api/v1/wallet", None, {}),
        ("GET", "/api/v1/wallet/history/{entry}", "/api/v1/wallet/history/claude:leak", None,
         {}),
        ("GET", "/api/v1/wallet/watermark", "/api/v1/wallet/watermark", None, {}),
        ("GET", "/api/v1/wallet/usage", "/api/v1/wallet/usage", None, {"by": "session"}),
        ("GET", "/api/v1/wallet/budgets", "/api/v1/wallet/budgets", None, {}),
        ("PUT", "/api/v1/wallet/budgets/{scope}", "/api/v1/wallet/budgets/day",
         {"limit_usd": 30, "entry": "claude:leak"}, {}),
        ("DELETE", "/api/v1/wallet/budgets/{scope}", "/api/v1/wallet/budgets/day", None,
         {"entry": "claude:leak"}),
        ("PUT", "/api/v1/wallet/session-budgets/{session_id}",
         f"/api/v1/wallet/session-budgets/{sid}", {"field": "budget_usd", "limit_usd": 5}, {}),
        ("GET", "/api/v1/wallet/breakers/{entry}", "/api/v1/wallet/breakers/claude:leak", None,
         {}),
        ("DELETE", "/api/v1/wallet/breakers/{entry}", "/api/v1/wallet/breakers/claude:leak",
         None, {}),
        ("POST", "/api/v1/wallet/statusline", "/api/v1/wallet/statusline",
         {"payload": {"rate_limits": {"five_hour": {"used_percentage": 10}}},
          "config_dir": str(folder)}, {}),
        # detect
        ("GET", "/api/v1/detect", "/api/v1/detect", None, {"all": "true"}),
        ("GET", "/api/v1/detect/{key}", "/api/v1/detect/DETECTED", None, {}),
        ("POST", "/api/v1/detect/{key}/adopt", "/api/v1/detect/DETECTED/adopt",
         {"to": "claude:leak"}, {}),
        # pipelines
        ("GET", "/api/v1/pipelines/source", "/api/v1/pipelines/source", None,
         {"repo": str(git_repo)}),
        ("POST", "/api/v1/pipelines/trust", "/api/v1/pipelines/trust",
         {"path": str(source.path), "digest": source.digest}, {}),
        ("POST", "/api/v1/pipelines/validate", "/api/v1/pipelines/validate",
         {"pipeline": body_pipeline}, {}),
        ("GET", "/api/v1/pipelines/trusted/{digest}",
         f"/api/v1/pipelines/trusted/{source.digest}", None, {}),
        ("POST", "/api/v1/pipelines/plan", "/api/v1/pipelines/plan",
         {"goal": "add a changelog", "repo": str(git_repo), "runtime": "demo"}, {}),
        ("POST", "/api/v1/pipelines/runs", "/api/v1/pipelines/runs",
         {"pipeline": body_pipeline, "repo": str(git_repo)}, {}),
        ("GET", "/api/v1/pipelines/runs", "/api/v1/pipelines/runs", None, {}),
        # (the run's id is filled in below, once it is known)
        ("GET", "/api/v1/pipelines/runs/{run_id}/wait", "RUN/wait", None, {"timeout_s": 30}),
        ("GET", "/api/v1/pipelines/runs/{run_id}", "RUN", None, {}),
        ("GET", "/api/v1/pipelines/runs/{run_id}/log", "RUN/log", None, {}),
        ("POST", "/api/v1/pipelines/runs/{run_id}/cancel", "RUN/cancel", None, {}),
        ("POST", "/api/v1/pipelines/runs/{run_id}/resume", "RUN/resume", None, {}),
        # history and review
        ("GET", "/api/v1/history/sessions/{session_id}", f"/api/v1/history/sessions/{sid}",
         None, {}),
        ("GET", "/api/v1/history/runs/{run_id}", "/api/v1/history/runs/RUNID", None, {}),
        ("GET", "/api/v1/history/sessions/{session_id}/diff",
         f"/api/v1/history/sessions/{sid}/diff", None, {}),
        ("GET", "/api/v1/history/sessions/{session_id}/stints/{stint}/diff",
         f"/api/v1/history/sessions/{sid}/stints/0/diff", None, {}),
        ("GET", "/api/v1/history/commits/{sha}/diff", f"/api/v1/history/commits/{tip}/diff",
         None, {"session": sid}),
        ("GET", "/api/v1/history/sessions/{session_id}/summary",
         f"/api/v1/history/sessions/{sid}/summary", None, {}),
        ("POST", "/api/v1/history/sessions/{session_id}/comments",
         f"/api/v1/history/sessions/{sid}/comments",
         {"sha": tip, "path": "README.md", "line": 1, "body": f"is {KEY} yours?"}, {}),
        ("GET", "/api/v1/history/sessions/{session_id}/comments",
         f"/api/v1/history/sessions/{sid}/comments", None, {}),
        ("POST", "/api/v1/history/rewind", "/api/v1/history/rewind",
         {"sha": first, "session_id": sid}, {}),
        ("POST", "/api/v1/history/sessions/{session_id}/finish",
         f"/api/v1/history/sessions/{sid}/finish", {"action": "keep"}, {}),
        # knowledge and audit
        ("POST", "/api/v1/knowledge/scan", "/api/v1/knowledge/scan", {"repo": str(known)}, {}),
        ("POST", "/api/v1/knowledge/ingest", "/api/v1/knowledge/ingest", None, {}),
        ("GET", "/api/v1/knowledge/search", "/api/v1/knowledge/search", None, {"q": "leak"}),
        ("GET", "/api/v1/knowledge/stats", "/api/v1/knowledge/stats", None, {}),
        ("GET", "/api/v1/audit/verify", "/api/v1/audit/verify", None, {}),
        # the vault: its state, and a passphrase given (this host's vault asks the window's
        # way or the environment, so the route says so; the answer holds no key either way)
        ("GET", "/api/v1/vault", "/api/v1/vault", None, {}),
        ("POST", "/api/v1/vault/unlock", "/api/v1/vault/unlock",
         {"passphrase": "not the passphrase"}, {}),
        ("GET", "/api/v1/audit/entries", "/api/v1/audit/entries", None, {"limit": 10_000}),
        ("GET", "/api/v1/openapi.json", "/api/v1/openapi.json", None, {}),
        # the board (issue 21): a task the key is written into, and a hook event carrying it
        ("POST", "/api/v1/board/projects", "/api/v1/board/projects", {"repo": str(git_repo)},
         {}),
        ("GET", "/api/v1/board/projects", "/api/v1/board/projects", None, {}),
        ("POST", "/api/v1/board/tasks", "/api/v1/board/tasks",
         {"repo_or_project": str(git_repo), "title": f"rotate {KEY}",
          "next_step": f"export ANTHROPIC_API_KEY={KEY}"}, {}),
        ("GET", "/api/v1/board/cards", "/api/v1/board/cards", None, {}),
        ("GET", "/api/v1/board/tasks/{key}", "/api/v1/board/tasks/TASK", None, {}),
        ("PATCH", "/api/v1/board/tasks/{key}", "/api/v1/board/tasks/TASK",
         {"description": f"the key is {KEY}"}, {}),
        ("POST", "/api/v1/board/tasks/{key}/stage", "/api/v1/board/tasks/TASK/stage",
         {"stage": "dev", "note": KEY}, {}),
        ("POST", "/api/v1/board/tasks/{key}/reports", "/api/v1/board/tasks/TASK/reports",
         {"summary": "found it", "body": f"ANTHROPIC_API_KEY={KEY}", "author": "agent"}, {}),
        ("POST", "/api/v1/board/tasks/{key}/decisions", "/api/v1/board/tasks/TASK/decisions",
         {"text": f"keep {KEY}", "decided_by": "agent"}, {}),
        ("POST", "/api/v1/board/tasks/{key}/comments", "/api/v1/board/tasks/TASK/comments",
         {"body": f"is {KEY} yours?"}, {}),
        ("GET", "/api/v1/board/tasks/{key}/comments", "/api/v1/board/tasks/TASK/comments",
         None, {}),
        ("POST", "/api/v1/board/tasks/{key}/comments/ack",
         "/api/v1/board/tasks/TASK/comments/ack", {"ids": None, "session": "leak-session"}, {}),
        ("POST", "/api/v1/board/tasks/{key}/links", "/api/v1/board/tasks/TASK/links",
         {"session_ref": "leak-session"}, {}),
        ("POST", "/api/v1/board/tasks/{key}/links", "/api/v1/board/tasks/TASK/links",
         {"session_ref": busy}, {}),  # the board's composer talks to it (below)
        ("POST", "/api/v1/hooks/claude", "/api/v1/hooks/claude",
         {"session_id": "leak-session", "hook_event_name": "PreToolUse", "cwd": str(git_repo),
          "tool_name": "Bash", "tool_input": {"command": f"curl -H 'x-api-key: {KEY}' x"}},
         {}),
        ("GET", "/api/v1/board/live", "/api/v1/board/live", None, {}),
        ("DELETE", "/api/v1/board/tasks/{key}/links/{ref}",
         "/api/v1/board/tasks/TASK/links/leak-session", None, {}),
        # the hooked session is no task's now: among the sessions without a task
        ("GET", "/api/v1/board/unlinked", "/api/v1/board/unlinked", None, {}),
        ("PUT", "/api/v1/board/projects/{slug}/environments/{name}",
         "/api/v1/board/projects/SLUG/environments/prod",
         {"kind": "live", "level": "ask", "refs": {"urls": ["https://db.example"]}}, {}),
        ("GET", "/api/v1/board/projects/{slug}/environments",
         "/api/v1/board/projects/SLUG/environments", None, {}),
        ("GET", "/api/v1/board/guard-policy", "/api/v1/board/guard-policy", None,
         {"repo": str(git_repo)}),
        ("DELETE", "/api/v1/board/projects/{slug}/environments/{name}",
         "/api/v1/board/projects/SLUG/environments/prod", None, {}),
        # Claude Code's hooks and MCP server in the planted account's folder
        ("POST", "/api/v1/integrations/claude", "/api/v1/integrations/claude",
         {"action": "apply", "account": "leak"}, {}),
        ("GET", "/api/v1/integrations/claude", "/api/v1/integrations/claude", None,
         {"account": "leak"}),
        # last: the account goes, and its key with it
        ("DELETE", "/api/v1/accounts/{provider}/{label}", "/api/v1/accounts/claude/leak",
         None, {}),
    ]

    # the web board, signed in with its cookie: every page shows the task the key is in
    board: list[tuple[str, str, str, dict[str, str]]] = [
        ("POST", "/api/v1/board/login-link", "", {}),
        ("GET", "/board/login", "", {}),
        ("GET", "/board", "/board", {}),
        ("GET", "/board/p/{slug}", "/board/p/SLUG", {}),
        ("GET", "/board/t/{key}", "/board/t/TASK", {}),
        ("GET", "/board/f/columns", "/board/f/columns", {}),
        ("GET", "/board/f/unlinked", "/board/f/unlinked", {}),
        ("GET", "/board/f/card/{key}", "/board/f/card/TASK", {}),
        ("GET", "/board/f/task/{key}", "/board/f/task/TASK", {}),
        ("GET", "/board/static/{name}", "/board/static/app.js", {}),
        ("POST", "/board/t/{key}/comments", "/board/t/TASK/comments", {"body": f"{KEY}?"}),
        ("POST", "/board/t/{key}/stage", "/board/t/TASK/stage", {"stage": "review"}),
        ("POST", "/board/t/{key}/talk/{session_id}", f"/board/t/TASK/talk/{busy}",
         {"text": f"{KEY}!", "mode": "queue"}),
        ("GET", "/board/f/talk/{key}/{session_id}", f"/board/f/talk/TASK/{busy}", {}),
        ("POST", "/board/t/{key}/talk/{session_id}/cancel/{message_id}",
         f"/board/t/TASK/talk/{busy}/cancel/MESSAGE", {"_": "cancel"}),
    ]
    routes = app_routes(served)
    called = {(method, route) for method, route, *_ in [*calls, *board]}
    missing = sorted(routes - called - set(EXEMPT))
    assert missing == [], f"routes neither called nor exempt: {missing}"
    assert sorted(called - routes) == []

    answers: list[tuple[str, httpx.Response]] = []
    run_id, detected, task, slug = "", "nothing-detected", "NO-TASK", "no-project"
    message = "no-message"
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False, timeout=60,
                                 headers={"Authorization": f"Bearer {served.token}"}) as http:
        for method, route, path, body, query in calls:
            path = (path.replace("RUNID", run_id).replace("DETECTED", detected)
                    .replace("RUN", f"/api/v1/pipelines/runs/{run_id}")
                    .replace("TASK", task).replace("SLUG", slug)
                    .replace("MESSAGE", message))
            response = await http.request(method, path, json=body, params=query)
            if route == "/api/v1/sessions/{session_id}/messages" and method == "POST":
                assert response.status_code == 201, response.text
                message = response.json()["id"]
            answers.append((f"{method} {route}", response))
            if route == "/api/v1/pipelines/runs" and method == "POST":
                assert response.status_code == 201, response.text
                run_id = response.json()["id"]
            if route == "/api/v1/board/tasks" and method == "POST":
                assert response.status_code == 201, response.text
                task, slug = response.json()["key"], response.json()["project"]
            if route == "/api/v1/detect":  # the account check's own transcript, found
                detected = next((f"{s['runtime']}:{s['agent_session_id']}"
                                 for s in response.json()["sessions"]), detected)
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False, timeout=60) as web:
        link = await web.post("/api/v1/board/login-link",
                              headers={"Authorization": f"Bearer {served.token}"})
        signed = await web.get(link.json()["url"])
        assert signed.status_code == 303
        answers += [("POST /api/v1/board/login-link", link), ("GET /board/login", signed)]
        csrf = (await web.get("/board")).text.split('name="csrf-token" content="')[1][:64]
        for method, route, path, form in board[2:]:
            path = path.replace("TASK", task).replace("SLUG", slug).replace("MESSAGE", message)
            response = await web.request(method, path, data={**form, "csrf": csrf} if form
                                         else None, headers={"Origin": served.host.url
                                                             .rstrip("/"), "HX-Request": "true"})
            assert response.status_code == 200, (route, response.text[:300])
            answers.append((f"{method} {route}", response))
            if route == "/board/t/{key}/talk/{session_id}":  # the message the board queued
                message = response.text.split('id="message-', 1)[1].split('"', 1)[0]
    served_ok = {name for name, r in answers if r.status_code < 400}
    assert "POST /api/v1/accounts" in served_ok  # the key was planted
    assert "POST /api/v1/accounts/{provider}/{label}/check" in served_ok
    assert "PATCH /api/v1/accounts/{provider}/{label}" in served_ok
    assert len(served_ok) >= len(calls) - 8, [  # most answers are real answers, not refusals
        (n, r.status_code, r.text[:200]) for n, r in answers if r.status_code >= 400]

    leaks = [name for name, r in answers
             if hits(r.content, [KEY]) or hits(repr(sorted(r.headers.items())).encode(), [KEY])]
    assert leaks == []
    # the key did reach the vault and the agent's environment: the search had something to find
    assert "vault.bin" in {p.name for p in served.engine.config.home.iterdir()}
