"""Sessions through the API: start a demo session from a client, follow it to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.api.client import RelayClient
from relay.core.errors import HostGoneError, RelayError, SessionNotFoundError
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


async def test_a_client_whose_hosts_port_another_host_took_says_its_host_stopped(
        served: Served, tmp_path: Path) -> None:
    # the host of old-home stopped (nobody holds its lock), and its port is the served
    # host's now, which refuses old-home's token: not a 401 to show, the host stopped
    old_home = tmp_path / "old-home"
    old_home.mkdir()
    stale = RelayClient(served.host.url, "old-homes-token", home=old_home)
    by_url = RelayClient(served.host.url, "old-homes-token")
    try:
        with pytest.raises(HostGoneError, match="has stopped"):
            await stale.list_sessions()
        with pytest.raises(HostGoneError, match="has stopped"):
            async for _record in stale.follow():
                pass
        with pytest.raises(RelayError, match="refused the token"):  # by URL: the refusal
            await by_url.list_sessions()
    finally:
        await stale.aclose()
        await by_url.aclose()
