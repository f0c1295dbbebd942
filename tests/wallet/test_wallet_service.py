"""The wallet end to end: official readings, the views, and the pre-emptive handoff."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.conftest import fixtures_root

CLI = [sys.executable, "-m", "relay.cli.main"]


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def snapshots(engine: Engine, entry: str) -> list[tuple[str, str | None, float | None]]:
    return [(r.window, r.status, r.used_percent) for r in await engine.wallet.limits.history(entry)]


async def test_a_window_filling_up_hands_off_before_the_limit(engine: Engine,
                                                              git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="notes", runtime="demo",
                       chain=["demo:primary", "demo:backup"], demo_quota=[40.0, 97.0, 99.0])
    row = await engine.run_session(spec)

    assert row.state == "completed", row.reason
    handoffs = await engine.handoffs(row.id)
    assert len(handoffs) == 1
    assert handoffs[0].reason is not None
    assert handoffs[0].reason.startswith("pre-emptive: demo:primary's five-hour window")
    runs = await engine.runs(row.id)
    # no usage limit was ever hit: the first account was left before its wall
    assert [r.outcome for r in runs] == ["cancelled", "completed"]
    kinds = [r.event.kind for r in await engine.session_events(row.id)]
    assert "limit_hit" not in kinds
    readings = await snapshots(engine, "demo:primary")
    assert readings[0] == ("five_hour", "allowed", 40.0)


async def test_the_watermark_alone_hands_off_when_no_burn_is_known(relay_home: Path,
                                                                   vault_env: None,
                                                                   git_repo: Path,
                                                                   monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    monkeypatch.setenv("RELAY_WALLET_HORIZON", "0")  # no run-out forecast: the level decides
    eng = await Engine.open(load_config(demo_step_delay=0))
    try:
        spec = SessionSpec(repo=git_repo, task="notes", runtime="demo",
                           chain=["demo:primary", "demo:backup"], demo_quota=[50.0, 96.0])
        row = await eng.run_session(spec)
        (handoff,) = await eng.handoffs(row.id)
        assert handoff.reason is not None
        assert "at 96%" in handoff.reason
        assert "watermark is 95%" in handoff.reason
    finally:
        await eng.close()


async def test_a_simulated_account_is_judged_by_its_own_run_alone(
        relay_home: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_WALLET_HORIZON", "0")  # no run-out forecast: the level decides
    eng = await Engine.open(load_config(demo_step_delay=0))
    try:
        spec = SessionSpec(repo=git_repo, task="notes", runtime="demo",
                           chain=["demo:primary", "demo:backup"], demo_quota=[50.0, 96.0])
        rows = [await eng.run_session(spec) for _ in range(3)]
        for row in rows:  # each run the same: demo:primary from 50 %, off at its 96 %
            assert row.state == "completed", row.reason
            (handoff,) = await eng.handoffs(row.id)
            assert handoff.reason is not None
            assert "at 96%" in handoff.reason
            assert (handoff.from_entry, handoff.to_entry) == ("demo:primary", "demo:backup")
            assert len(await eng.runs(row.id)) == 2
            notices = [r.event.message for r in await eng.session_events(row.id)
                       if r.event.kind == "notice"]
            assert not [n for n in notices if n.startswith("Skipping")]
        # the views still show what the demos reported
        assert ("five_hour", "allowed", 96.0) in await snapshots(eng, "demo:primary")
        assert await eng.wallet.pressure("demo:primary") is not None
        assert await eng.wallet.pressure("demo:primary", session_id="another") is None
    finally:
        await eng.close()


async def test_a_limit_reading_is_kept_with_the_account_and_shown_as_official(
        engine: Engine, git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="notes", runtime="demo",
                       chain=["demo:primary", "demo:backup"], demo_limit_after=2)
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason

    assert ("five_hour", "rejected", 100.0) in await snapshots(engine, "demo:primary")
    assert await snapshots(engine, "demo:backup") == []
    views = {v.entry: v for v in await engine.wallet.summary()}
    five = next(w for w in views["demo:primary"].windows if w.kind == "five_hour")
    assert five.used.value == 1.0
    assert five.used.source == "official"
    assert five.resets_at.source == "official"
    assert views["demo:primary"].breaker_until_ms is not None
    # Relay's own records of the demo's turns: recorded, and priced as the demo reported
    assert views["demo:backup"].burn_tpm.source == "recorded"
    assert views["demo:backup"].cost_today.value is not None
    assert views["demo:backup"].cost_today.value > 0


def shifted_codex_fixtures(tmp_path: Path) -> Path:
    """The recorded fixtures, with the Codex rate-limit capture's reset times moved to the
    future (they are the recording run's clock times; the structure is untouched)."""
    root = tmp_path / "fixtures"
    src = fixtures_root()
    for runtime in src.iterdir():
        if runtime.name != "codex":
            (root / runtime.name).parent.mkdir(parents=True, exist_ok=True)
            (root / runtime.name).symlink_to(runtime)
    shutil.copytree(src / "codex", root / "codex", symlinks=True)
    soon = int(time.time()) + 3600
    for path in (root / "codex" / "captures" / "a5_rate_limit_headers_on_success").rglob("*.jsonl"):
        text = re.sub(r'"resets_at":\d+', f'"resets_at":{soon}', path.read_text())
        path.write_text(text)
    return root


async def test_an_account_past_the_watermark_is_avoided_by_the_next_session(
        relay_home: Path, vault_env: None, git_repo: Path, fakes_on_path: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FIXTURES", str(shifted_codex_fixtures(tmp_path)))
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a5_rate_limit_headers_on_success")
    monkeypatch.setenv("RELAY_WALLET_WATERMARK", "0.4")  # the capture's window is 42.5 % used
    codex_home = tmp_path / "codex-work"
    codex_home.mkdir()
    eng = await Engine.open(load_config())
    try:
        await eng.accounts.add("codex", "work", codex_home)
        first = await eng.run_session(SessionSpec(repo=git_repo, task="hello", runtime="codex",
                                                  chain=["codex:work"]))
        assert first.state == "completed", first.reason
        # the rollout's rate_limits (from the x-codex-* headers) are the official reading
        await eng.wallet.refresh_index()
        view = next(v for v in await eng.wallet.summary() if v.entry == "codex:work")
        five = next(w for w in view.windows if w.kind == "five_hour")
        assert five.used.value == pytest.approx(0.425)
        assert five.used.source == "official"
        assert five.used.detail == "codex token_count"
        seven = next(w for w in view.windows if w.kind == "seven_day")
        assert seven.used.value == pytest.approx(0.12)

        second = await eng.run_session(SessionSpec(repo=git_repo, task="hello", runtime="codex",
                                                   chain=["codex:work", "claude"]))
        assert second.state == "completed", second.reason
        assert [r.runtime for r in await eng.runs(second.id)] == ["claude"]
        notices = [r.event.message for r in await eng.session_events(second.id)
                   if r.event.kind == "notice"]
        assert any(n.startswith("Skipping codex:work: codex:work's five-hour window is at 42%")
                   for n in notices), notices
    finally:
        await eng.close()


def cli(*args: str, stdin: str = "", env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=60, check=False)


async def test_statusline_records_claudes_official_windows_for_the_account(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "claude-work"
    folder.mkdir()
    await engine.accounts.add("claude", "work", folder)
    reset = int(time.time()) + 2 * 3600
    payload = {"model": {"display_name": "Opus"}, "rate_limits": {
        "five_hour": {"used_percentage": 61.5, "resets_at": reset},
        "seven_day": {"used_percentage": 20, "resets_at": reset + 86400}}}
    import os

    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(folder)}
    done = cli("statusline", stdin=json.dumps(payload), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[Opus] · claude:work · 5h 62% · 7d 20%"

    view = next(v for v in await engine.wallet.summary() if v.entry == "claude:work")
    five = next(w for w in view.windows if w.kind == "five_hour")
    assert five.used.value == pytest.approx(0.615)
    assert five.used.detail == "claude statusline"
    assert five.resets_at.value == reset * 1000
    assert view.cost_today.value is None  # nothing seen is unknown, never $0

    bad = cli("statusline", stdin="{not json", env=env)
    assert bad.returncode == 1
    assert "not JSON" in bad.stdout
    assert "Traceback" not in bad.stderr


async def test_wallet_json_lists_each_account_with_sources(engine: Engine,
                                                           git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="notes", runtime="demo",
                       chain=["demo:primary", "demo:backup"], demo_limit_after=1)
    await engine.run_session(spec)
    done = cli("wallet", "--json")
    assert done.returncode == 0, done.stderr
    views = {v["entry"]: v for v in json.loads(done.stdout)}
    assert set(views) >= {"demo:primary", "demo:backup"}
    five = next(w for w in views["demo:primary"]["windows"] if w["kind"] == "five_hour")
    assert five["used"] == {"value": 1.0, "source": "official",
                            "observed_ms": five["used"]["observed_ms"],
                            "detail": "demo (simulated)"}
    seven = next(w for w in views["demo:primary"]["windows"] if w["kind"] == "seven_day")
    assert seven["used"]["value"] is None  # unknown, never 0
    assert seven["confidence"] == "none"
    text = cli("wallet")
    assert "demo:primary" in text.stdout
    assert "official" in text.stdout


async def test_the_first_callers_of_a_new_index_do_not_race(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # the window's start-up scan, its first summary and a session's guard all open the
    # index; only one of them may create it (two opened the file at once and collided)
    from relay.wallet import service
    from relay.wallet.usage_index import UsageIndex

    opened: list[Path] = []

    class Counted(UsageIndex):
        def __init__(self, path: Path) -> None:
            opened.append(path)
            super().__init__(path)

    monkeypatch.setattr(service, "UsageIndex", Counted)
    found = await asyncio.gather(*(engine.wallet.index_entries(None, None) for _ in range(4)))
    assert found == [[]] * 4
    assert len(opened) == 1
    assert all(not v.registered for v in await engine.wallet.summary())
