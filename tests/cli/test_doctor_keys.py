"""relay-cli doctor and the model APIs: a key in an api_key account counts, never shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from relay.cli import doctor_cmd
from relay.core.config import load_config
from relay.engine.engine import Engine

KEY = "sk-ant-api03-" + "Zq9Xw8Vu7Ts6Rq5P" * 5


async def test_an_api_key_account_makes_the_runtime_ready(relay_home: Path, vault_env: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = load_config()
    before = Console(record=True, width=250)
    doctor_cmd.doctor(config, before)
    engine = await Engine.open(config)
    try:
        await engine.accounts.add("anthropic", "work", None, auth_kind="api_key", api_key=KEY)
    finally:
        await engine.close()
    after = Console(record=True, width=250)

    doctor_cmd.doctor(config, after)

    was, now = before.export_text(), after.export_text()
    anthropic_before = next(line for line in was.splitlines() if "│ anthropic " in line)
    anthropic_now = next(line for line in now.splitlines() if "│ anthropic " in line)
    assert "missing" in anthropic_before
    assert "ok" in anthropic_now
    assert "anthropic:work" in anthropic_now
    openai_now = next(line for line in now.splitlines() if "│ openai " in line)
    assert "missing" in openai_now  # no account of its own
    assert KEY not in now
