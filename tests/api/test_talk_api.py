"""Talking to a session over the API, through ``client.talk`` on a real socket against a host
running the demo runtime: each answer is ``engine.talk``'s own model (compared with what the
engine says in-process), each refusal the same RelayError class."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import httpx
import pytest

from relay.api.client_talk import TalkClient
from relay.core.capabilities import Cap, Capabilities
from relay.core.errors import RelayError, SessionNotFoundError, UnsupportedCapabilityError
from relay.core.events import NeedsInput
from relay.core.models import SessionSpec
from relay.engine.talk import Talk
from tests.api.conftest import Served

TALK = ("say", "messages", "edit", "cancel", "interrupt", "fork", "abilities")


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")


async def asking(served: Served, repo: Path) -> tuple[str, NeedsInput]:
    """A demo session that waits for the user's answer: busy until it is answered."""
    sid = await served.client.start_session(SessionSpec(repo=repo, task="notes", runtime="demo",
                                                        demo_ask=True, approvals="ask"))
    async for record in served.client.follow(sid):
        if isinstance(record.event, NeedsInput):
            return sid, record.event
    raise AssertionError("the session ended without asking")


async def finished(served: Served, repo: Path) -> str:
    sid = await served.client.start_session(SessionSpec(repo=repo, task="add a greeting",
                                                        runtime="demo"))
    row = await served.client.wait_session(sid)
    assert row.state == "completed", row.reason
    return sid


def test_client_talk_has_engine_talks_names_and_signatures() -> None:
    for name in TALK:
        assert inspect.signature(getattr(TalkClient, name)) == inspect.signature(
            getattr(Talk, name)), name


async def test_the_openapi_document_shows_the_talk_routes(served: Served) -> None:
    doc = await served.client.call("GET", "/openapi.json")
    paths = doc["paths"]
    messages = paths["/api/v1/sessions/{session_id}/messages"]
    assert set(messages) >= {"get", "post"}
    assert messages["post"]["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SessionMessage"}
    assert set(paths["/api/v1/sessions/{session_id}/messages/{message_id}"]) >= {"patch",
                                                                                 "delete"}
    assert "post" in paths["/api/v1/sessions/{session_id}/interrupt"]
    fork = paths["/api/v1/sessions/{session_id}/fork"]["post"]
    assert fork["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ForkResult"}
    talk = paths["/api/v1/sessions/{session_id}/talk"]["get"]
    assert talk["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/TalkAbilities"}
    say_body = doc["components"]["schemas"]["SayBody"]["properties"]
    assert say_body["mode"]["enum"] == ["queue", "now", "interrupt"]


async def test_a_message_to_a_busy_session_waits_for_the_turn_then_goes_once(
        served: Served, git_repo: Path) -> None:
    talk, eng = served.client.talk, served.engine
    sid, question = await asking(served, git_repo)
    able = await talk.abilities(sid)
    assert able == await eng.talk.abilities(sid)
    assert (able.session_id, able.busy, able.can_send) == (sid, True, True)

    sent = await talk.say(sid, "also add a changelog", source="tui")
    assert (sent.session_id, sent.state, sent.mode, sent.source) == (sid, "queued", "queue",
                                                                     "tui")
    assert await talk.messages(sid, pending=True) == await eng.talk.messages(sid, pending=True)
    assert [m.id for m in await talk.messages(sid, pending=True)] == [sent.id]
    edited = await talk.edit(sid, sent.id, "also add a CHANGELOG.md")
    assert (edited.id, edited.text, edited.state) == (sent.id, "also add a CHANGELOG.md",
                                                      "queued")

    await served.client.answer_input(sid, question.request_id, "allow")
    await wait_delivered(served, sid, sent.id)
    row = await served.client.wait_session(sid)
    assert row.state == "completed", row.reason
    [done] = await talk.messages(sid)
    assert (done.id, done.state, done.text) == (sent.id, "delivered", "also add a CHANGELOG.md")
    assert done.how in ("turn", "resume")
    assert await talk.messages(sid, pending=True) == []


async def wait_delivered(served: Served, sid: str, message_id: str) -> None:
    """Until the message is delivered (the inbox's row says so), within a minute."""
    deadline = asyncio.get_running_loop().time() + 60
    while asyncio.get_running_loop().time() < deadline:
        found = {m.id: m for m in await served.client.talk.messages(sid)}
        if found[message_id].state == "delivered":
            return
        assert found[message_id].state in ("queued", "sending"), found[message_id]
        await asyncio.sleep(0.05)
    raise AssertionError("the message was not delivered in a minute")


async def test_a_queued_message_is_cancelled_and_never_sent(served: Served,
                                                            git_repo: Path) -> None:
    talk = served.client.talk
    sid, question = await asking(served, git_repo)
    sent = await talk.say(sid, "never mind this one")
    cancelled = await talk.cancel(sid, sent.id)
    assert (cancelled.id, cancelled.state) == (sent.id, "cancelled")
    assert await talk.messages(sid, pending=True) == []
    with pytest.raises(RelayError):  # cancelled: neither editable nor cancellable again
        await talk.edit(sid, sent.id, "after all")
    runs_before = len(await served.client.runs(sid))
    await served.client.answer_input(sid, question.request_id, "allow")
    row = await served.client.wait_session(sid)
    assert row.state == "completed", row.reason
    assert len(await served.client.runs(sid)) == runs_before  # no run carried it
    [kept] = await talk.messages(sid)
    assert kept.state == "cancelled"


async def test_a_follow_up_on_a_finished_session_is_a_new_run_of_it(served: Served,
                                                                   git_repo: Path) -> None:
    talk = served.client.talk
    sid = await finished(served, git_repo)
    runs = len(await served.client.runs(sid))
    able = await talk.abilities(sid)
    assert (able.busy, able.can_send) == (False, True)

    sent = await talk.say(sid, "now wave as well", mode="now")  # finished: the mode is moot
    assert sent.session_id == sid
    assert sent.state in ("sending", "delivered")
    row = await served.client.wait_session(sid)
    assert row.state == "completed", row.reason
    assert len(await served.client.runs(sid)) == runs + 1
    [done] = await talk.messages(sid)
    assert (done.state, done.run_id) == ("delivered", (await served.client.runs(sid))[-1].id)
    assert done.how in ("resume", "brief")


async def test_interrupt_stops_the_turn_and_keeps_the_session(served: Served,
                                                              git_repo: Path) -> None:
    sid, _question = await asking(served, git_repo)
    said = await served.client.talk.interrupt(sid)
    assert said
    row = await served.client.wait_session(sid)
    assert row.state == "interrupted", row.reason
    assert row.workdir
    assert Path(row.workdir).is_dir()
    # the next message continues it
    await served.client.talk.say(sid, "go on")
    row = await served.client.wait_session(sid)
    assert len(await served.client.runs(sid)) >= 2


async def test_a_fork_is_a_new_session_and_the_original_is_untouched(served: Served,
                                                                    git_repo: Path) -> None:
    sid = await finished(served, git_repo)
    before = await served.client.get_session(sid)
    forked = await served.client.talk.fork(sid, prompt="the same, differently")
    assert forked.parent_id == sid
    assert forked.session_id != sid
    row = await served.client.wait_session(forked.session_id)
    assert row.state == "completed", row.reason
    assert row.branch != before.branch
    after = await served.client.get_session(sid)
    assert (after.state, after.branch, after.updated_at) == (before.state, before.branch,
                                                             before.updated_at)


async def test_refusals_are_the_same_error_class_and_json_over_http(served: Served) -> None:
    talk = served.client.talk
    with pytest.raises(SessionNotFoundError):
        await talk.say("nosuchsession", "hello")
    with pytest.raises(SessionNotFoundError):
        await talk.messages("nosuchsession")
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False, timeout=30,
                                 headers={"Authorization": f"Bearer {served.token}"}) as http:
        for body in ({"text": ""}, {"text": "x", "mode": "loudly"}, {"text": "x", "extra": 1},
                     {"text": "x", "source": "<script>"}):
            r = await http.post("/api/v1/sessions/nosuchsession/messages", json=body)
            assert r.status_code == 422, (body, r.text)
            assert r.json()["error"]["code"] == "invalid_request"
        r = await http.post("/api/v1/sessions/nosuchsession/messages", json={"text": "hi"})
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "session_not_found"
        assert "Traceback" not in r.text


@pytest.fixture
def codex_mid_turn(fakes_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake codex replays a capture that stops mid-turn and waits to be stopped."""
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "e7_sigterm_midturn")


async def busy_codex(served: Served, repo: Path) -> str:
    """A codex session whose turn is running (its runtime cannot take a message mid-turn)."""
    assert Capabilities.for_runtime("codex").level(Cap.STEER).value == "no"  # relied on here
    sid = await served.client.start_session(SessionSpec(repo=repo, task="hello",
                                                        runtime="codex"))
    deadline = asyncio.get_running_loop().time() + 60
    while not (await served.client.talk.abilities(sid)).busy:
        assert asyncio.get_running_loop().time() < deadline, "the codex turn never started"
        await asyncio.sleep(0.05)
    return sid


async def test_steering_a_runtime_that_cannot_is_refused_with_the_ways_that_work(
        codex_mid_turn: None, served: Served, git_repo: Path) -> None:
    sid = await busy_codex(served, git_repo)
    able = await served.client.talk.abilities(sid)
    assert (able.runtime, able.busy, able.steer) == ("codex", True, "no")
    assert able.why_not["steer"]
    with pytest.raises(UnsupportedCapabilityError) as refused:
        await served.client.talk.say(sid, "look at the tests too", mode="now")
    assert "Queue it" in (refused.value.hint or "")
    assert await served.client.talk.messages(sid) == []  # nothing was sent
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False, timeout=30,
                                 headers={"Authorization": f"Bearer {served.token}"}) as http:
        r = await http.post(f"/api/v1/sessions/{sid}/messages",
                            json={"text": "now", "mode": "now"})
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "unsupported_capability"
    queued = await served.client.talk.say(sid, "look at the tests too")  # queueing works
    assert queued.state == "queued"
    await served.client.talk.cancel(sid, queued.id)
    await served.client.cancel_session(sid)
    assert (await served.client.wait_session(sid)).finished
