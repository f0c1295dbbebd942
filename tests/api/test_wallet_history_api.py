"""The Wallet plots' series over the host's API: the client reads what the engine gathers."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.core.models import SessionSpec
from tests.api.conftest import Served


async def test_a_client_reads_the_same_series_over_the_api(
        served: Served, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")
    spec = SessionSpec(repo=git_repo, task="notes", runtime="demo", chain=["demo:primary"],
                       demo_quota=[20.0, 30.0])
    sid = await served.client.start_session(spec)
    await served.client.wait_session(sid)
    over_api = await served.client.wallet.history("demo:primary")
    direct = await served.engine.wallet.history("demo:primary")
    # (a window without a known reset starts "a window's length ago": a moment apart)
    assert [(w.kind, w.points) for w in over_api.windows] == [
        (w.kind, w.points) for w in direct.windows]
    assert over_api.days == direct.days
    assert [v for _, v in over_api.windows[0].points] == [0.2, 0.3]
    assert over_api.entry == "demo:primary"
