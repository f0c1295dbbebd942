"""The History dock's tree and words, from a timeline (Qt-free)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from relay.gui.history_text import (
    DiffSource,
    audit_text,
    comment_sha,
    header_text,
    source_title,
    summary_text,
    timeline_nodes,
)
from relay.history.model import CommitInfo, FinishSummary, Stint, Timeline, TimelineEntry

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
BASE, A, B = "b" * 40, "a" * 40, "c" * 40


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def timeline(uncommitted: int = 0, audit_ok: bool | None = True) -> Timeline:
    stints = [
        Stint(0, "claude:work", "claude", ("r1",), at(0), at(60), "failed", BASE, A),
        Stint(1, "codex", "codex", ("r2", "r3"), at(61), at(120), "completed", A, B),
    ]
    entries = [
        TimelineEntry(at(0), "run", "claude:work started", entry="claude:work", run_id="r1",
                      stint=0),
        TimelineEntry(at(50), "commit", "notes", sha=A, stint=0, detail="agent · claude"),
        TimelineEntry(at(55), "handoff", "Handoff claude:work → codex: pausing", stint=0,
                      audited=True, detail="usage limit"),
        TimelineEntry(at(60), "handoff", "Handoff claude:work → codex: done", stint=0,
                      audited=True),
        TimelineEntry(at(90), "verify", "Check pytest -q failed (exit 1)", stint=1,
                      detail="1 failed", audited=True),
        TimelineEntry(at(100), "commit", "fix", sha=B, stint=1),
        TimelineEntry(at(110), "review", "Comment on a.py:3 (queued)", sha=B, stint=1,
                      detail="why?"),
        TimelineEntry(at(121), "state", "Session completed", audited=False),
    ]
    commits = [CommitInfo(A, "notes", "claude", at(50), "agent"),
               CommitInfo(B, "fix", "codex", at(100), "run_end")]
    return Timeline("s1", "add a greeting\nmore", "completed", "relay/s1", "/tmp/w", BASE,
                    "main", entries, stints, commits, audit_ok, "line 3 altered",
                    uncommitted=uncommitted)


def test_the_tree_groups_entries_by_stint() -> None:
    nodes = timeline_nodes(timeline(uncommitted=2))
    assert [n.title for n in nodes[:3]] == ["Whole session",
                                            "1 · claude:work — handed off → codex",
                                            "2 · codex — completed"]
    assert nodes[0].detail == "completed · 2 commits · 2 files not committed"
    assert (nodes[1].tone, nodes[2].tone) == ("", "ok")
    first = [c.title for c in nodes[1].children]
    assert first == ["▶ claude:work started", "● notes  [aaaaaaa]",
                     "⇄ Handoff claude:work → codex: done"]
    second = nodes[2].children
    assert second[0].title == "✗ Check pytest -q failed (exit 1)"
    assert second[0].tone == "error"
    when = at(90).astimezone().strftime("%H:%M:%S")
    assert second[0].detail == f"{when}\n1 failed\nin the audit log"
    # an entry of no stint comes last, at the top level
    assert nodes[-1].title == "■ Session completed"
    assert nodes[-1].detail.endswith("\nnot in the audit log")
    assert len(nodes) == 4


def test_a_pre_emptive_handoffs_stint_is_handed_off_not_cancelled() -> None:
    """The wallet handed off before the limit: the runner stopped the agent (its run ends
    "cancelled"), but nothing went wrong — neither the stint nor its run end is red."""
    line = timeline()
    stints = [dataclasses.replace(line.stints[0], outcome="cancelled"), line.stints[1]]
    entries = [
        line.entries[0],
        TimelineEntry(at(55), "handoff", "Handoff claude:work → codex: pausing", stint=0,
                      detail="pre-emptive: 92% of the 5-hour window used"),
        TimelineEntry(at(58), "run", "claude:work ended: cancelled", stint=0, run_id="r1",
                      entry="claude:work", detail="stopped for a handoff"),
        TimelineEntry(at(60), "handoff", "Handoff claude:work → codex: done", stint=0),
        *line.entries[4:],
    ]
    nodes = timeline_nodes(dataclasses.replace(line, stints=stints, entries=entries))
    stint = nodes[1]
    assert stint.title == "1 · claude:work — handed off (pre-emptive) → codex"
    assert stint.tone == ""
    ended = [c for c in stint.children if c.entry and c.entry.kind == "run"][-1]
    assert ended.title == "▶ claude:work handed off (pre-emptive) → codex"
    assert ended.tone == "muted"
    assert not any(c.tone == "error" for c in stint.children)
    # a handoff that failed leaves the stint's own outcome, in red
    failed = [*entries[:3], TimelineEntry(at(60), "handoff",
                                          "Handoff claude:work → codex: failed", stint=0)]
    again = timeline_nodes(dataclasses.replace(line, stints=stints, entries=failed))[1]
    assert again.title == "1 · claude:work — cancelled"
    assert again.tone == "error"


def test_a_handoffs_steps_fold_into_one_node() -> None:
    first = timeline_nodes(timeline())[1]
    handoff = first.children[2]
    assert handoff.title == "⇄ Handoff claude:work → codex: done"
    steps = [at(55).astimezone().strftime("%H:%M:%S"), at(60).astimezone().strftime("%H:%M:%S")]
    assert handoff.detail == (f"{steps[0]}  pausing — usage limit\n{steps[1]}  done\n"
                              "in the audit log")
    assert handoff.source == DiffSource("stint", stint=0)
    assert handoff.rewind_sha is None


def test_what_each_node_shows_and_where_it_rewinds_to() -> None:
    nodes = timeline_nodes(timeline())
    session, first, second = nodes[0], nodes[1], nodes[2]
    assert session.source == DiffSource("session")
    assert session.rewind_sha == B  # the tip
    assert first.source == DiffSource("stint", stint=0)
    assert first.rewind_sha == A  # the stint's last commit
    commit = first.children[1]
    assert (commit.key, commit.source, commit.rewind_sha) == (
        f"commit:{A}", DiffSource("commit", 0, A), A)
    run = first.children[0]
    assert run.source == DiffSource("stint", stint=0)  # a run shows its stint's work
    assert run.rewind_sha is None
    review = second.children[2]
    assert review.source == DiffSource("commit", 1, B)  # a comment shows its commit
    every = [*nodes, *first.children, *second.children]
    assert len(every) == 10  # two handoff steps, one node
    assert len({n.key for n in every}) == len(every)  # the dock finds a node by its key


def test_titles_and_comment_commits() -> None:
    line = timeline(uncommitted=1)
    assert source_title(DiffSource("commit", 0, A), line) == f"Commit {A[:10]} — notes"
    assert source_title(DiffSource("stint", stint=1), line) == (
        f"What codex changed (stint 2: {A[:10]}..{B[:10]})")
    assert source_title(DiffSource("session"), line) == (
        f"The whole session: main @ {BASE[:10]} → tip and the uncommitted work")
    assert comment_sha(DiffSource("commit", 0, A), line) == A
    assert comment_sha(DiffSource("stint", stint=0), line) == A
    assert comment_sha(DiffSource("session"), line) == B
    assert header_text(line) == "add a greeting — completed · relay/s1 from main"
    assert audit_text(line) == ("audit log: chain intact", "ok")
    assert audit_text(timeline(audit_ok=False)) == (
        "AUDIT LOG BROKEN: line 3 altered", "error")
    assert audit_text(timeline(audit_ok=None)) == ("", "")


def test_a_session_without_commits_has_nothing_to_rewind_to() -> None:
    line = timeline()
    bare = Timeline(line.session_id, line.task, "running", "relay/s1", None, BASE, "main",
                    [], [], [], None)
    nodes = timeline_nodes(bare)
    assert [n.title for n in nodes] == ["Whole session"]
    assert nodes[0].rewind_sha is None
    assert comment_sha(DiffSource("session"), bare) == BASE


def test_the_finish_summary_in_words() -> None:
    summary = FinishSummary("s1", "relay/s1", "main", BASE, B, 2,
                            [("a.py", "modified", 3, 1), ("b.py", "added", 10, 0)],
                            ["claude:work — 1 run, 1 file changed, failed",
                             "codex — 2 runs, 2 files changed, completed"], True)
    assert summary_text(summary) == (
        f"Branch relay/s1 — 2 commits, 2 files changed (+13 −1) against main @ {BASE[:10]}.\n"
        "• claude:work — 1 run, 1 file changed, failed\n"
        "• codex — 2 runs, 2 files changed, completed")
