"""Adapters narrow the capability table to what the running agent reported."""

from __future__ import annotations

import pytest

from relay.core.capabilities import Cap, Level
from relay.core.errors import UnsupportedCapabilityError
from relay.core.events import SessionStarted
from relay.runtimes.registry import make_adapter


@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_an_agent_without_a_session_id_cannot_be_resumed(runtime: str) -> None:
    adapter = make_adapter(runtime, env={})
    assert adapter.capabilities.level(Cap.RESUME) == Level.YES
    adapter.handshake(SessionStarted(agent_session_id=None))
    assert adapter.capabilities.level(Cap.RESUME) == Level.NO
    with pytest.raises(UnsupportedCapabilityError) as info:
        adapter.capabilities.require(Cap.RESUME)
    assert info.value.runtime == runtime


def test_a_normal_handshake_keeps_the_table() -> None:
    adapter = make_adapter("claude", env={})
    before = adapter.capabilities.as_dict()
    adapter.handshake(SessionStarted(agent_session_id="11111111-1111-4111-8111-111111111111"))
    assert adapter.capabilities.as_dict() == before
