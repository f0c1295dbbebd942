"""benchmarks/faults: how a kill trial is judged, and when a harness fails."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from benchmarks.faults import kill_handoff
from benchmarks.faults.trials import COMPLETED, FAILED, NOT_STARTED, Tally, Verdict


def test_lost_doubled_or_an_audit_gap_fails_the_harness() -> None:
    tally = Tally()
    tally.add(Verdict("snapshotted", 1))
    clean = tally.ok
    assert clean
    gap = Tally([Verdict("dispatched", 2, audit_gap=["1 committed record(s) never audited"])])
    assert not gap.ok  # the log catches up when Relay opens again: a gap is a defect
    doubled = Verdict("random moment", 3, note="killed after 0.500 s")
    doubled.doubled.append("2 snapshot commits for h-1")
    tally.add(doubled)
    assert not tally.ok
    lost = Tally([Verdict("pausing", 4, lost=["the worktree"])])
    assert not lost.ok
    assert tally.findings()[0] == (
        "random moment (trial seed 3, killed after 0.500 s): doubled: 2 snapshot commits for h-1"
    )


def test_the_table_counts_each_outcome_per_row_and_in_all() -> None:
    failed = Verdict("random moment", 2, killed=False)
    failed.fail("`recover` did not finish")
    tally = Tally(
        [
            Verdict("pausing", 1),
            failed,
            Verdict("random moment", 3, outcome=NOT_STARTED, lost=["the session row"]),
        ]
    )
    assert failed.outcome == FAILED
    rows = {line.split()[0]: line.split()[1:] for line in tally.table("t").splitlines()[3:]}
    # trials, killed, completed once, not started, lost, doubled, failed, audit gap
    assert rows["pausing"] == ["1", "1", "1", "0", "0", "0", "0", "0"]
    assert rows["random"] == ["moment", "2", "1", "0", "1", "1", "0", "1", "0"]
    assert rows["all"] == ["3", "2", "1", "1", "1", "0", "1", "0"]
    assert Verdict("x", 0).outcome == COMPLETED


def test_the_handoff_harness_reads_what_relay_printed_and_its_audited_records(tmp_path: Path) -> None:
    printed = kill_handoff.printed_records(
        '{"id": 3, "event": {"kind": "limit_hit"}}\n{"id": 4, "event": {"ki'
    )  # cut by the kill
    assert printed == {3: "limit_hit"}
    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(home / "relay.db") as conn:
        conn.execute("CREATE TABLE events (id INTEGER, run_id TEXT, kind TEXT, payload TEXT)")
        conn.executemany(
            "INSERT INTO events VALUES (?, ?, ?, ?)",
            [
                (1, None, "state_changed", '{"state": "running"}'),
                (2, "r1", "assistant_text", "{}"),
                (3, None, "handoff_step", '{"state": "pausing"}'),
                (4, "r1", "session_ended", '{"outcome": "failed"}'),
            ],
        )
    conn.close()
    facts = kill_handoff.Facts.read(home)
    assert facts.audited == {1: "running", 3: "pausing", 4: "failed"}
    assert facts.steps == ["pausing"]
    assert facts.session is None  # no sessions table yet: killed before the schema was made
