"""Sessions through the API: start a demo session from a client, follow it to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.core.errors import SessionNotFoundError
from relay.core.models import SessionSpec
from tests.api.conftest import Served


async def test_a_demo_session_started_over_the_api_runs_in_the_host(served: Served,
                                                                    git_repo: Path) -> None:
    sid = await served.client.start_session(SessionSpec(repo=str(git_repo), task="hello",
                                                        runtime="demo"))
    seen = [r async for r in served.client.follow(sid)]
    assert seen, "the stream carried the session's events"
    assert [r.id for r in seen] == sorted({r.id for r in seen})
    stored = await served.engine.session_events(sid)
    assert [r.id for r in seen] == [r.id for r in stored]
    row = await served.client.get_session(sid)
    assert row.state == "completed"
    listed = await served.client.list_sessions()
    assert [s.id for s in listed] == [sid]


async def test_an_unknown_session_is_the_same_error_class_on_the_client(served: Served) -> None:
    with pytest.raises(SessionNotFoundError, match="nosuchsession"):
        await served.client.get_session("nosuchsession")
