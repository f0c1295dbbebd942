"""relay-cli retrieve / knowledge as a user runs them: real subprocesses, data folder, git."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import assert_no_traceback, cli
from tests.knowledge.samples import SYMBOLS


def test_scan_then_retrieve_prints_where_each_hit_is(sample_repo: Path) -> None:
    scanned = cli("knowledge", "scan", "--repo", str(sample_repo), "--json")
    assert scanned.returncode == 0, scanned.stderr
    report = json.loads(scanned.stdout)
    assert (report["scanned"], report["symbols"]) == (7, sum(len(s) for s in SYMBOLS.values()))

    found = cli("retrieve", "fetch shapes", "--json", "--limit", "3")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert 1 <= len(hits) <= 3
    assert {k: hits[0][k] for k in ("path", "startLine", "endLine", "kind", "title", "lang")} == {
        "path": "geometry/src/lib.rs", "startLine": 36, "endLine": 40, "kind": "symbol",
        "title": "fetch_shapes", "lang": "rust"}
    assert hits[0]["score"] > 0
    assert "fn «fetch»_«shapes»" in hits[0]["snippet"]

    human = cli("retrieve", "fetch shapes", "--repo", str(sample_repo))
    assert human.returncode == 0, human.stderr
    first = human.stdout.splitlines()[0]
    assert "geometry/src/lib.rs:36-40" in first
    assert "symbol fetch_shapes" in first
    assert "score" in first

    again = json.loads(cli("knowledge", "scan", "--repo", str(sample_repo), "--json").stdout)
    assert (again["scanned"], again["unchanged"]) == (0, 7)


def test_what_an_agent_was_told_is_found_after_its_session(git_repo: Path) -> None:
    run = cli("run", "Tidy the notes. Never rename public functions.", "--repo", str(git_repo),
              "--provider", "demo")
    assert run.returncode == 0, run.stderr

    found = cli("retrieve", "rename public functions", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["kind"] == "constraint"
    assert hits[0]["snippet"] == "Never «rename» «public» «functions»."
    assert hits[0]["sessionId"]
    assert hits[0]["repo"] == str(git_repo.resolve())

    stats = json.loads(cli("knowledge", "stats", "--json").stdout)
    assert stats["sessions"] == 1
    assert stats["chunks"]["constraint"] == 1
    assert [r["repo"] for r in stats["repos"]] == [str(git_repo.resolve())]


def test_bad_queries_are_explained_without_a_traceback(tmp_path: Path) -> None:
    for args in (("retrieve", "  "), ("retrieve", '"()*'), ("retrieve", "x", "--repo",
                                                            str(tmp_path))):
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("error:")
        assert "→" in proc.stderr
        assert_no_traceback(proc)
    limit = cli("retrieve", "x", "--limit", "0")
    assert limit.returncode == 2
    assert "must be 1 or more" in limit.stderr

    syntax = cli("retrieve", 'foo(" OR *')  # FTS syntax is only text
    assert syntax.returncode == 0, syntax.stderr
    assert "No matches" in syntax.stdout
    assert "index is empty" in syntax.stdout
