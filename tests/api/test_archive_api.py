"""Archive instead of delete, over the API: ``client.sessions`` as ``engine.sessions``."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.core.errors import RelayError, SessionNotFoundError
from relay.core.models import SessionSpec
from tests.api.conftest import Served


async def test_an_archived_session_leaves_the_list_and_comes_back(served: Served,
                                                                   git_repo: Path) -> None:
    client = served.client
    kept = await served.engine.run_session(SessionSpec(repo=git_repo, task="kept",
                                                       runtime="demo"))
    old = await served.engine.run_session(SessionSpec(repo=git_repo, task="old",
                                                      runtime="demo"))

    row = await client.sessions.archive(old.id[:8])  # a unique prefix will do

    assert row.id == old.id
    assert row.archived_at is not None
    assert [s.id for s in await client.list_sessions()] == [kept.id]
    listed = await client.sessions.recent(archived=True)
    assert {s.id: s.archived_at is not None for s in listed} == {kept.id: False, old.id: True}
    assert (await served.engine.get_session(old.id)).archived_at is not None  # in the store
    again = await client.sessions.archive(old.id)  # archiving twice changes nothing
    assert again.archived_at == row.archived_at

    back = await client.sessions.unarchive(old.id)

    assert back.archived_at is None
    assert {s.id for s in await client.list_sessions()} == {kept.id, old.id}


async def test_a_running_session_is_not_archived_and_an_unknown_one_is_not_found(
        served: Served, git_repo: Path) -> None:
    sid = await served.client.start_session(SessionSpec(repo=str(git_repo), task="slow",
                                                        runtime="demo", demo_ask=True))
    with pytest.raises(RelayError, match="only a finished session is archived"):
        await served.client.sessions.archive(sid)
    assert [s.id for s in await served.client.list_sessions()] == [sid]
    with pytest.raises(SessionNotFoundError):
        await served.client.sessions.archive("nosuchsession")
    await served.client.cancel_session(sid)
    await served.engine.wait_finished(sid, 30)


async def test_the_row_carries_the_entries_its_runs_used(served: Served,
                                                         git_repo: Path) -> None:
    row = await served.engine.run_session(SessionSpec(
        repo=git_repo, task="hand me off", runtime="demo", chain=["demo:primary", "demo:backup"],
        demo_limit_after=1))

    listed = (await served.client.list_sessions())[0]

    assert row.state == "completed"
    assert listed.entries == ["demo:primary", "demo:backup"]
    assert listed.handing_to is None  # the handoff is done
