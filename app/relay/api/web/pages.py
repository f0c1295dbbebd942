"""The board's pages, fragments, forms and live stream (``/board/...``).

Every route of :data:`router` goes through :class:`BoardRoute`: no valid cookie → the
signed-out page; a write without the CSRF token or from another origin → refused; a
:class:`~relay.core.errors.RelayError` → an HTML message, not the API's JSON. A page is
complete without JavaScript (forms post and redirect back); with it, htmx posts the same
forms and swaps the fragment the route answers (``HX-Request``), and app.js refetches the
fragments a live event touches (``/board/f/...``; the stream itself carries no HTML).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Coroutine
from typing import Any, cast, get_args
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

from relay.api.context import host
from relay.api.errors import status_of
from relay.api.routes.events import SSE_HEADERS, _cursor
from relay.api.stream import event_frames
from relay.api.web.auth import CSRF_FIELD, CSRF_HEADER, BoardAuth, same_origin
from relay.api.web.render import STATIC, STATIC_TYPES, render
from relay.board.model import STAGES, Card, project_of
from relay.core.errors import ProjectNotFoundError, RelayError, SessionNotFoundError
from relay.core.events import BOARD_SESSION, MessageMode

#: the longest comment the board takes (the agent reads it as context)
MAX_COMMENT = 20_000
#: how many delivered (or cancelled) messages a composer shows under the queue
RECENT = 5
#: how to sign in, on every signed-out page
SIGN_IN_COMMAND = "relay-cli board --open"


def board_auth(request: Request) -> BoardAuth:
    auth: BoardAuth = request.app.state.board_auth
    return auth


def _hx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def message(request: Request, status: int, heading: str, text: str, *, hint: str = "",
            command: str = "", link: str = "", link_text: str = "") -> Response:
    """A message page, or, to htmx, the message shown in the page's flash area."""
    if _hx(request):
        flash = render("_flash.html", status, heading=heading, message=text, hint=hint,
                       command=command)
        flash.headers.update({"HX-Retarget": "#flash", "HX-Reswap": "innerHTML"})
        return flash
    return render("message.html", status, heading=heading, message=text, hint=hint,
                  command=command, link=link, link_text=link_text)


def signed_out(request: Request) -> Response:
    response = message(request, 401, "Sign in to the board",
                       "This browser is not signed in to this Relay board (or the host's token "
                       "changed since it was).",
                       hint="On the machine that runs Relay, run this and open the link it "
                            "prints. The link works once, for 10 minutes.",
                       command=SIGN_IN_COMMAND)
    if _hx(request):
        response.headers["HX-Refresh"] = "true"
    return response


async def form(request: Request) -> dict[str, str]:
    """An urlencoded form body (the board's forms send nothing else)."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}


class BoardRoute(APIRoute):
    """A board route: the cookie first, the CSRF token and origin on a write, and
    RelayError as a message page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        inner = super().get_route_handler()

        async def handler(request: Request) -> Response:
            auth = board_auth(request)
            if not auth.signed_in(request.headers.get("cookie")):
                return signed_out(request)
            if request.method not in ("GET", "HEAD"):
                presented = request.headers.get(CSRF_HEADER) or (await form(request)).get(
                    CSRF_FIELD)
                if not (same_origin(request.headers) and auth.csrf_ok(presented)):
                    return message(request, 403, "Refused",
                                   "The board refused this change: it did not come from this "
                                   "board's own page (a missing or wrong CSRF token, or another "
                                   "origin).", hint="Reload the board and try again.")
            try:
                return await inner(request)
            except RelayError as exc:
                return message(request, status_of(exc), "That did not work", exc.message,
                               hint=exc.hint or "", link="/board", link_text="The board")

        return handler


router = APIRouter(route_class=BoardRoute, include_in_schema=False)
#: the routes without a cookie: the sign-in link and the static files
open_router = APIRouter(include_in_schema=False)
#: the API route that mints a sign-in link (bearer token, like every /api route)
api_router = APIRouter(prefix="/api/v1/board", tags=["board"])


def _board(request: Request) -> Any:
    return host(request).engine.board


async def _common(request: Request) -> dict[str, Any]:
    """What every full page needs: the CSRF token, the projects, the live stream's start
    (read before the page's data, so an event in between is replayed, never lost)."""
    ctx = host(request)
    after = await ctx.engine.last_event_id()
    return {"csrf": board_auth(request).csrf_token(), "stages": STAGES,
            "projects": await ctx.engine.board.projects(),
            "events": f"/board/events?after={after}"}


async def _columns(request: Request, slug: str | None) -> dict[str, Any]:
    board = _board(request)
    project = None
    if slug is not None:
        project = next((p for p in await board.projects() if p.slug == slug), None)
        if project is None:
            raise ProjectNotFoundError(f"There is no project {slug!r} on the board.",
                                       "The board's first page lists every project.")
    columns: dict[str, list[Any]] = {stage: [] for stage in STAGES}
    for card in await board.cards(slug):
        columns.setdefault(card.task.stage, []).append(card)
    first = next((s for s in ("dev", *STAGES) if columns[s]), "dev")
    return {"project": project, "columns": columns, "first_tab": first}


async def _unlinked(request: Request, slug: str | None) -> dict[str, Any]:
    """Sessions without a task, by project (its name; "other": in no project's repository)."""
    board = _board(request)
    projects = await board.projects()
    groups: dict[str, list[Any]] = {}
    for session in await board.unlinked(slug):
        found = project_of(session.cwd, projects)
        groups.setdefault(found.name if found else "other", []).append(session)
    return {"unlinked": groups, "unlinked_src": "/board/f/unlinked" + (
        f"?project={quote(slug)}" if slug else "")}


@router.get("/board")
async def board_page(request: Request) -> Response:
    common = await _common(request)
    return render("board.html", **common, heading="All projects",
                  **await _columns(request, None), **await _unlinked(request, None))


@router.get("/board/p/{slug}")
async def project_page(request: Request, slug: str) -> Response:
    common = await _common(request)
    context = await _columns(request, slug)
    return render("board.html", **common, heading=context["project"].name or slug, **context,
                  **await _unlinked(request, slug))


@router.get("/board/t/{key}")
async def task_page(request: Request, key: str) -> Response:
    common = await _common(request)
    detail = await _board(request).task(key)
    project = next((p for p in common["projects"] if p.slug == detail.card.task.project), None)
    talks = []
    for sid in _relay_sessions(detail.card):
        with contextlib.suppress(SessionNotFoundError):  # a link to a session deleted since
            talks.append(await _talk(request, sid))
    return render("task.html", **common, detail=detail, project=project, talks=talks)


@router.get("/board/f/columns")
async def columns_fragment(request: Request, project: str | None = None) -> Response:
    return render("_columns.html", stages=STAGES, **await _columns(request, project or None))


@router.get("/board/f/unlinked")
async def unlinked_fragment(request: Request, project: str | None = None) -> Response:
    return render("_unlinked.html", **await _unlinked(request, project or None))


@router.get("/board/f/card/{key}")
async def card_fragment(request: Request, key: str) -> Response:
    card = (await _board(request).task(key)).card
    return render("_card.html", card=card)


@router.get("/board/f/task/{key}")
async def task_fragment(request: Request, key: str) -> Response:
    return await _task_answer(request, key)


async def _task_answer(request: Request, key: str) -> Response:
    """After a write: the task fragment to htmx, a redirect back to the page without it."""
    if not _hx(request) and request.method == "POST":
        return RedirectResponse(f"/board/t/{quote(key)}", status_code=303)
    detail = await _board(request).task(key)
    return render("_task.html", detail=detail, stages=STAGES,
                  csrf=board_auth(request).csrf_token())


@router.post("/board/t/{key}/comments")
async def post_comment(request: Request, key: str) -> Response:
    body = (await form(request)).get("body", "").strip()
    if not body:
        return message(request, 400, "Nothing to send", "The comment is empty.")
    if len(body) > MAX_COMMENT:
        return message(request, 413, "Too long",
                       f"A comment is at most {MAX_COMMENT} characters.")
    await _board(request).comment(key, body, author="owner", author_kind="owner")
    return await _task_answer(request, key)


@router.post("/board/t/{key}/stage")
async def post_stage(request: Request, key: str) -> Response:
    stage = (await form(request)).get("stage", "")
    if stage not in STAGES:
        return message(request, 400, "No such stage",
                       f"{stage!r} is not a stage.", hint="One of: " + ", ".join(STAGES) + ".")
    await _board(request).set_stage(key, stage, actor="owner")
    return await _task_answer(request, key)


# -- talking to a linked Relay session (engine.talk) ----------------------------------------

def _relay_sessions(card: Card) -> list[str]:
    """The Relay sessions linked to the task (a hooked Claude session is not Relay's to run)."""
    return [link.session_ref for link in card.sessions if link.kind == "relay"]


async def _talk(request: Request, session_id: str) -> dict[str, Any]:
    """A linked session's composer: what it can do now, its queued and latest messages."""
    talk = host(request).engine.talk
    messages = await talk.messages(session_id)
    return {"sid": session_id, "abilities": await talk.abilities(session_id),
            "queued": [m for m in messages if m.state in ("queued", "sending")],
            "recent": [m for m in messages if m.state not in ("queued", "sending")][-RECENT:]}


async def _linked(request: Request, key: str, session_id: str) -> str:
    """``session_id`` when it is a Relay session linked to the task ``key``."""
    if session_id not in _relay_sessions((await _board(request).task(key)).card):
        raise SessionNotFoundError(f"Session {session_id!r} is not a Relay session linked to "
                                   f"{key}.", "The task's page lists its sessions.")
    return session_id


async def _talk_answer(request: Request, key: str, session_id: str) -> Response:
    """After a write: the session's queue fragment to htmx, a redirect to the page without."""
    if not _hx(request) and request.method == "POST":
        return RedirectResponse(f"/board/t/{quote(key)}", status_code=303)
    return render("_talk.html", key=key, talk=await _talk(request, session_id),
                  csrf=board_auth(request).csrf_token())


@router.get("/board/f/talk/{key}/{session_id}")
async def talk_fragment(request: Request, key: str, session_id: str) -> Response:
    """The session's queue and state (the page polls it: a message from another client
    shows up, a queued one goes when it is delivered)."""
    return await _talk_answer(request, key, await _linked(request, key, session_id))


@router.post("/board/t/{key}/talk/{session_id}")
async def post_talk(request: Request, key: str, session_id: str) -> Response:
    """Send the composer's message: Send (queue), Steer now (now), Interrupt & send."""
    fields = await form(request)
    text, mode = fields.get("text", "").strip(), fields.get("mode", "queue")
    if not text:
        return message(request, 400, "Nothing to send", "The message is empty.")
    if len(text) > MAX_COMMENT:
        return message(request, 413, "Too long",
                       f"A message is at most {MAX_COMMENT} characters.")
    if mode not in get_args(MessageMode):
        return message(request, 400, "No such way to send", f"{mode!r} is not one.",
                       hint="Send, Steer now or Interrupt & send.")
    sid = await _linked(request, key, session_id)
    await host(request).engine.talk.say(sid, text, mode=cast(MessageMode, mode),
                                        source="board")
    return await _talk_answer(request, key, sid)


@router.post("/board/t/{key}/talk/{session_id}/cancel/{message_id}")
async def cancel_message(request: Request, key: str, session_id: str,
                         message_id: str) -> Response:
    sid = await _linked(request, key, session_id)
    await host(request).engine.talk.cancel(sid, message_id)
    return await _talk_answer(request, key, sid)


@router.get("/board/events")
async def board_events(request: Request, after: int = 0) -> Response:
    """The board's events after the cursor (``Last-Event-ID`` on a reconnect), then live."""
    ctx = host(request)
    cursor = _cursor(max(after, 0), request.headers.get("last-event-id"))
    frames = event_frames(ctx.broadcaster, cursor, BOARD_SESSION, ctx.engine.events_after,
                          None, ctx.stopping)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


#: where a sign-in link may lead: the board, a project's or a task's page (nothing else: a
#: link never sends a browser off the board)
LANDING = re.compile(r"/board(/[pt]/[A-Za-z0-9][A-Za-z0-9._-]{0,99})?")


@open_router.get("/board/login")
async def login(request: Request, code: str = "", next: str = "/board") -> Response:
    """Spend a one-time code: set the board cookie and go to the board (or the project's or
    task's page the link names)."""
    landing = next if LANDING.fullmatch(next) else "/board"
    auth = board_auth(request)
    if not auth.spend(code):
        return message(request, 403, "This sign-in link does not work",
                       "It was used already, or it is older than 10 minutes.",
                       hint="Run this on the machine that runs Relay for a new link.",
                       command=SIGN_IN_COMMAND)
    if request.headers.get("sec-fetch-site", "none") in ("none", "same-origin"):
        response: Response = RedirectResponse(landing, status_code=303)
    else:  # from another site: SameSite=Strict holds the cookie back on its redirect
        response = message(request, 200, "Signed in", "This browser is signed in to the board.",
                           link=landing, link_text="Open the board")
    response.headers["set-cookie"] = auth.set_cookie_header(request.url.scheme == "https")
    return response


@open_router.get("/board/static/{name}")
async def static(name: str) -> Response:
    path = STATIC / name
    kind = STATIC_TYPES.get(path.suffix)
    if kind is None or "/" in name or name.startswith(".") or not path.is_file():
        return Response("Not found.", status_code=404, media_type="text/plain")
    return Response(path.read_bytes(), media_type=kind,
                    headers={"Cache-Control": "public, max-age=86400"})


@api_router.post("/login-link")
async def login_link(request: Request, task: str = "") -> Response:
    """A one-time link that signs a browser in to the web board (10 minutes, single use),
    landing on ``task``'s page when one is named. Answered as it is: the scrubber would take
    the code for a secret, which it is, briefly."""
    code = board_auth(request).new_code()
    base = str(request.base_url).rstrip("/")
    landing = f"/board/t/{task}" if task else ""
    after = f"&next={quote(landing, safe='/')}" if LANDING.fullmatch(landing) else ""
    return JSONResponse({"url": f"{base}/board/login?code={code}{after}"})
