"""relay-cli budget / prices / run --budget, as a user runs them: real processes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.cli.test_cli import assert_no_traceback, cli


def spec_of(home: Path, session_prefix: str = "") -> dict[str, object]:
    with sqlite3.connect(home / "relay.db") as conn:
        row = conn.execute("SELECT spec_json FROM sessions WHERE id LIKE ? ORDER BY created_ms DESC",
                           (f"{session_prefix}%",)).fetchone()
    spec: dict[str, object] = json.loads(row[0])
    return spec


def test_budgets_are_set_listed_with_their_spend_and_cleared(relay_home: Path) -> None:
    empty = cli("budget", "list")
    assert empty.returncode == 0, empty.stderr
    assert "No budgets. Set one: relay-cli budget set day 30" in empty.stdout

    assert cli("demo").returncode == 0  # spends $0.0377 (reported by the demo runtime)
    day = cli("budget", "set", "day", "0.04")
    assert day.returncode == 0, day.stderr
    assert "Day budget for all work: $0.0400" in day.stdout
    week = cli("budget", "set", "week", "$5", "--account", "claude:work")
    assert "Week budget for claude:work: $5.00" in week.stdout

    listed = cli("budget", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    budgets = json.loads(listed.stdout)["budgets"]
    assert budgets == [
        {"scope": "day", "entry": "*", "limit_usd": 0.04, "spent_usd": 0.03765, "state": "warn",
         "source": "recorded", "detail": "1 run: 1 reported by the CLI"},
        {"scope": "week", "entry": "claude:work", "limit_usd": 5.0, "spent_usd": 0.0,
         "state": "ok", "source": "recorded", "detail": "no runs"}]
    table = cli("budget", "list")
    assert "94 %" in table.stdout
    assert "warn" in table.stdout
    assert "calls already in flight can take the spend past a budget" in table.stdout

    cleared = cli("budget", "clear", "week", "--account", "claude:work")
    assert "Cleared the week budget for claude:work." in cleared.stdout
    again = cli("budget", "clear", "week", "--account", "claude:work")
    assert "There was no week budget for claude:work." in again.stdout
    assert [b["scope"] for b in json.loads(cli("budget", "list", "--json").stdout)["budgets"]] == ["day"]


def test_bad_budgets_are_refused_without_a_traceback(relay_home: Path) -> None:
    for args in (("budget", "set", "day", "-3"), ("budget", "set", "day", "lots"),
                 ("budget", "set", "month", "3"), ("budget", "set", "day", "3", "--account", "nope:x"),
                 ("run", "t", "--budget", "-1")):
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert_no_traceback(proc)
    session = cli("budget", "set", "session", "3")
    assert session.returncode == 2
    assert "Name the session whose session budget this is." in session.stderr
    unknown = cli("budget", "set", "session", "3", "--session", "nosuchsession")
    assert unknown.returncode == 2
    assert "No session 'nosuchsession'" in unknown.stderr
    assert_no_traceback(unknown)


def test_run_takes_budgets_and_a_session_budget_can_be_changed(relay_home: Path,
                                                               git_repo: Path) -> None:
    run = cli("run", "do it", "--repo", str(git_repo), "--budget", "2.5", "--task-budget", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    spec = spec_of(relay_home)
    assert (spec["budget_usd"], spec["task_budget_usd"]) == (2.5, 1.0)
    with sqlite3.connect(relay_home / "relay.db") as conn:
        session = conn.execute("SELECT id FROM sessions").fetchone()[0]
    changed = cli("budget", "set", "session", "7", "--session", session[:8])
    assert changed.returncode == 0, changed.stderr
    assert f"Session {session}'s budget: $7.00." in changed.stdout
    assert spec_of(relay_home)["budget_usd"] == 7.0
    cleared = cli("budget", "clear", "task", "--session", session)
    assert f"Cleared session {session}'s budget per task (run)." in cleared.stdout
    assert spec_of(relay_home)["task_budget_usd"] is None


def test_prices_shows_the_table_its_dates_and_the_override(relay_home: Path) -> None:
    shown = cli("prices")
    assert shown.returncode == 0, shown.stderr
    assert "claude-opus-4-8" in shown.stdout
    assert "anthropic: as of 2026-11-30 — https://platform.claude.com" in shown.stdout
    assert f"your prices: {relay_home / 'prices.json'} (not present" in shown.stdout

    relay_home.mkdir(parents=True, exist_ok=True)
    (relay_home / "prices.json").write_text(json.dumps({"providers": {"local": {
        "as_of": "2026-12-01", "models": {"my-local": {"input": 0, "output": 0}}}}}))
    data = json.loads(cli("prices", "--json").stdout)
    assert data["override_file"] == str(relay_home / "prices.json")
    assert data["override_exists"] is True
    mine = [m for m in data["models"] if m["model"] == "my-local"]
    assert mine
    assert mine[0]["as_of"] == "2026-12-01"
    assert mine[0]["origin"] == str(relay_home / "prices.json")
    assert data["providers"]["openai"]["as_of"] == "2026-06-04"
    assert data["problems"] == []
