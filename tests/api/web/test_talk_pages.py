"""The web board's composer on the page of a task linked to a Relay session: Send / Steer now /
Interrupt & send per the session's abilities, the CSRF-protected post going through
``engine.talk`` as source "board", the queue with Cancel, and a message another client sent
showing up in the polled fragment."""

from __future__ import annotations

import pytest

from tests.api.test_talk_api import asking, finished
from tests.api.web.conftest import SCRIPT, Board


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")


async def linked_busy(board: Board) -> str:
    """A demo session waiting for an answer (busy), linked to the board's task."""
    sid, _question = await asking(board.served, board.repo)
    await board.served.engine.board.link(board.key, sid, actor="owner")
    return sid


async def test_a_task_without_a_relay_session_has_no_composer(board: Board) -> None:
    await board.served.engine.board.link(board.key, "5e55104a-0000-4000-8000-00000000cafe",
                                         actor="owner")  # a hooked Claude session: not Relay's
    page = (await board.http.get(f"/board/t/{board.key}")).text
    assert "talk-queue" not in page
    assert "Steer now" not in page


async def test_the_composer_sends_through_engine_talk_behind_the_csrf_token(
        board: Board) -> None:
    sid = await linked_busy(board)
    talk = board.served.engine.talk
    page = (await board.http.get(f"/board/t/{board.key}")).text
    able = await talk.abilities(sid)
    assert f'action="/board/t/{board.key}/talk/{sid}"' in page
    assert 'name="mode" value="queue">Send</button>' in page
    assert ("Steer now</button>" in page) == (able.steer in ("yes", "partial"))
    assert ("Interrupt &amp; send</button>" in page) == (able.interrupt in ("yes", "partial"))
    assert f'hx-get="/board/f/talk/{board.key}/{sid}" hx-trigger="every 3s"' in page

    path = f"/board/t/{board.key}/talk/{sid}"
    for refused in (
            await board.http.post(path, data={"text": "no token", "mode": "queue"},
                                  headers=board.same_origin()),
            await board.http.post(path, data={"text": "no origin", "csrf": board.csrf})):
        assert refused.status_code == 403
    assert await talk.messages(sid) == []

    sent = await board.http.post(path, data={"text": SCRIPT, "mode": "queue"},
                                 headers=board.same_origin(**{"HX-Request": "true",
                                                              "X-CSRF-Token": board.csrf}))
    assert sent.status_code == 200, sent.text
    assert f'id="talk-queue-{sid}"' in sent.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in sent.text
    assert "<script>alert" not in sent.text
    [queued] = await talk.messages(sid, pending=True)
    assert (queued.text, queued.source, queued.state, queued.mode) == (SCRIPT, "board",
                                                                      "queued", "queue")
    # without JavaScript: the form posts and the page comes back
    plain = await board.http.post(path, data={"text": "and docs", "mode": "queue",
                                              "csrf": board.csrf}, headers=board.same_origin())
    assert (plain.status_code, plain.headers["location"]) == (303, f"/board/t/{board.key}")

    for bad, status in (({"text": "  "}, 400), ({"text": "x", "mode": "loudly"}, 400)):
        r = await board.http.post(path, data={**bad, "csrf": board.csrf},
                                  headers=board.same_origin())
        assert r.status_code == status, bad
    other = await finished(board.served, board.repo)  # a session the task does not name
    r = await board.http.post(f"/board/t/{board.key}/talk/{other}",
                              data={"text": "hi", "csrf": board.csrf},
                              headers=board.same_origin())
    assert r.status_code == 404
    assert await talk.messages(other) == []


async def test_another_clients_message_shows_and_cancel_removes_it(board: Board) -> None:
    sid = await linked_busy(board)
    fragment = f"/board/f/talk/{board.key}/{sid}"
    assert "Nothing queued." in (await board.http.get(fragment)).text

    sent = await board.served.client.talk.say(sid, "from the terminal", source="cli")
    shown = (await board.http.get(fragment)).text
    assert "from the terminal" in shown
    assert f'action="/board/t/{board.key}/talk/{sid}/cancel/{sent.id}"' in shown

    cancelled = await board.http.post(f"/board/t/{board.key}/talk/{sid}/cancel/{sent.id}",
                                      data={"csrf": board.csrf},
                                      headers=board.same_origin(**{"HX-Request": "true"}))
    assert cancelled.status_code == 200, cancelled.text
    assert "Nothing queued." in cancelled.text
    [gone] = await board.served.client.talk.messages(sid)
    assert gone.state == "cancelled"
    again = await board.http.post(f"/board/t/{board.key}/talk/{sid}/cancel/{sent.id}",
                                  data={"csrf": board.csrf},
                                  headers=board.same_origin(**{"HX-Request": "true"}))
    assert again.status_code >= 400  # cancelled already: the flash says why
    assert again.headers["HX-Retarget"] == "#flash"
