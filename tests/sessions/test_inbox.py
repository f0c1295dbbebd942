"""The session inbox: one claim per message, stale claims taken over, one event per change,
scrubbed bodies, and the one prompt queued messages are delivered as."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.bus import EventBus
from relay.core.config import load_config
from relay.core.errors import MessageRefusedError
from relay.core.events import MessageChanged, MessageKind, utcnow
from relay.core.models import SessionMessage
from relay.core.store.db import Store
from relay.core.store.writer import EventWriter
from relay.sessions.inbox import (
    REVIEW_HEADER,
    STALE_CLAIM_MS,
    Inbox,
    Letter,
    check_attachments,
    render,
)

SID = "0123456789ab"


@pytest.fixture
async def inbox(relay_home: Path) -> AsyncIterator[Inbox]:
    store = await Store.open(load_config().db_path)
    writer = EventWriter(store, EventBus())
    writer.start()
    try:
        yield Inbox(store, writer)
    finally:
        await writer.close()
        await store.close()


async def _changes(inbox: Inbox, message_id: str) -> list[MessageChanged]:
    await inbox.writer.flush()
    return [r.event for r in await inbox.store.events_after(0, session_id=SID)
            if isinstance(r.event, MessageChanged) and r.event.message_id == message_id]


async def test_two_claims_at_once_never_take_the_same_message(inbox: Inbox) -> None:
    sent = [await inbox.add(SID, f"message {i}") for i in range(5)]
    first, second = await asyncio.gather(inbox.claim(SID), inbox.claim(SID))
    ids = [x.message.id for x in first] + [x.message.id for x in second]
    assert sorted(ids) == sorted(m.id for m in sent)  # every one claimed, once
    assert not ({x.message.id for x in first} & {x.message.id for x in second})
    assert await inbox.claim(SID) == []
    assert [m.state for m in await inbox.messages(SID)] == ["sending"] * 5


async def test_a_stale_claim_is_taken_over(inbox: Inbox) -> None:
    message = await inbox.add(SID, "hello")
    assert [x.message.id for x in await inbox.claim(SID)] == [message.id]
    assert await inbox.claim(SID) == []  # a live claim stays its engine's
    await inbox.store.conn.execute("UPDATE session_messages SET claimed_ms=claimed_ms-?",
                                   (STALE_CLAIM_MS + 1,))
    await inbox.store.conn.commit()
    assert await inbox.pending_sessions() == [SID]
    assert [x.message.id for x in await inbox.claim(SID)] == [message.id]  # its engine died


async def test_every_change_is_one_event_and_edits_stop_at_sending(inbox: Inbox) -> None:
    message = await inbox.add(SID, "first text", source="window")
    edited = await inbox.edit(SID, message.id, "second text")
    assert edited.text == "second text"
    claimed = await inbox.claim(SID)
    with pytest.raises(MessageRefusedError, match="being sent"):
        await inbox.edit(SID, message.id, "third text")
    with pytest.raises(MessageRefusedError, match="being sent"):
        await inbox.cancel(SID, message.id)
    await inbox.delivered(claimed, "turn", "run1")
    changes = await _changes(inbox, message.id)
    assert [(c.state, c.text, c.how) for c in changes] == [
        ("queued", "first text", None), ("queued", "second text", None),
        ("sending", "second text", None), ("delivered", "second text", "turn")]
    assert {c.source for c in changes} == {"window"}
    got = await inbox.get(SID, message.id)
    assert (got.state, got.how, got.run_id, got.text) == ("delivered", "turn", "run1",
                                                          "second text")
    assert got.delivered_at is not None


async def test_failed_and_cancelled_are_kept_with_why(inbox: Inbox) -> None:
    gone = await inbox.add(SID, "never mind")
    await inbox.cancel(SID, gone.id)
    lost = await inbox.add(SID, "try this")
    await inbox.failed(await inbox.claim(SID), "the agent cannot start")
    states = {m.id: (m.state, m.error) for m in await inbox.messages(SID)}
    assert states == {gone.id: ("cancelled", None), lost.id: ("failed", "the agent cannot start")}
    assert await inbox.messages(SID, pending=True) == []


async def test_bodies_are_scrubbed_and_empty_refused(inbox: Inbox) -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4E5" * 9
    message = await inbox.add(SID, f"the key is {secret}")
    assert secret not in message.text
    with pytest.raises(MessageRefusedError, match="empty"):
        await inbox.add(SID, "  \n ")
    with pytest.raises(MessageRefusedError, match="empty"):
        await inbox.edit(SID, message.id, " ")
    changes = await _changes(inbox, message.id)
    assert changes
    assert all(secret not in c.text for c in changes)


def _letter(text: str, kind: MessageKind = "message", attachments: list[str] | None = None,
            **meta: object) -> Letter:
    return Letter(SessionMessage(id=text[:8], session_id=SID, text=text, kind=kind,
                                 attachments=attachments or [], created_at=utcnow()), dict(meta))


def test_render_keeps_the_order_and_each_kinds_form() -> None:
    text = render([
        _letter("Please also add tests.", attachments=["/tmp/spec.md"]),
        _letter("Name it better.", "review", sha="a" * 40, path="app.py", line=3, side="new",
                excerpt="x = 1"),
        _letter("Old line is wrong.", "review", sha="b" * 40, path="app.py", line=9,
                side="old"),
        _letter("Mention the date.", "board", task="DEMO-4"),
    ])
    assert text == "\n".join([
        "Please also add tests.",
        "Attached: /tmp/spec.md",
        "",
        REVIEW_HEADER,
        "",
        f"- app.py line 3, commit {'a' * 10}:",
        "    `x = 1`",
        "    Name it better.",
        f"- app.py line 9 (the old version), commit {'b' * 10}:",
        "    Old line is wrong.",
        "",
        "A comment on your board task DEMO-4:",
        "    Mention the date.",
    ])


def test_attachments_must_exist_inside_the_worktree_or_be_given_in_full(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / "notes.md").write_text("n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("o")
    assert check_attachments(["notes.md", str(outside)], worktree) == [
        str((worktree / "notes.md").resolve()), str(outside)]
    with pytest.raises(MessageRefusedError, match="outside"):
        check_attachments(["../elsewhere.txt"], worktree)
    with pytest.raises(MessageRefusedError, match="No such file"):
        check_attachments([str(tmp_path / "missing")], worktree)
    with pytest.raises(MessageRefusedError, match="too many"):
        check_attachments([str(outside)] * 21, worktree)
