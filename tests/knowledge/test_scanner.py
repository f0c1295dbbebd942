"""The code scanner on a real git repository: every language, incremental rescans, what it
never reads."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pygit2
import pytest

from relay.core.errors import SchemaTooNewError, WorktreeError
from relay.knowledge.scanner import MAX_CHUNK_LINES, MAX_FILE_BYTES, scan_repo
from relay.knowledge.store import SCHEMA_VERSION, KnowledgeStore, open_store
from tests.knowledge.conftest import fts_intact
from tests.knowledge.samples import IMPORTS, LANGS, SOURCES, SYMBOLS


def symbols(store: KnowledgeStore, path: str) -> list[tuple[str, str, int, int]]:
    rows = store.conn.execute("SELECT payload FROM nodes WHERE node_type='symbol' AND path=?",
                              (path,))
    found = [json.loads(r[0]) for r in rows]
    found.sort(key=lambda p: (p["startLine"], p["endLine"] * -1))
    return [(p["kind"], p["name"], p["startLine"], p["endLine"]) for p in found]


def module(store: KnowledgeStore, path: str) -> dict[str, Any] | None:
    row = store.conn.execute("SELECT payload FROM nodes WHERE node_type='module' AND path=?",
                             (path,)).fetchone()
    return None if row is None else dict(json.loads(row[0]))


def indexed_paths(store: KnowledgeStore) -> set[str]:
    return {r[0] for r in store.conn.execute("SELECT path FROM files")}


def chunk(store: KnowledgeStore, title: str) -> tuple[str, int, int, str]:
    row = store.conn.execute("SELECT path, startLine, endLine, body FROM chunks WHERE title=?",
                             (title,)).fetchone()
    assert row is not None, title
    return row[0], row[1], row[2], row[3]


def test_every_language_gets_its_modules_symbols_and_imports(kstore: KnowledgeStore,
                                                              sample_repo: Path) -> None:
    report = scan_repo(kstore, sample_repo)

    assert report.files == len(SOURCES)  # README.md is not source
    assert report.scanned == len(SOURCES)
    assert set(LANGS.values()) == {"go", "rust", "typescript", "javascript", "python", "java",
                                   "ruby"}
    for path, expected in SYMBOLS.items():
        assert sorted(symbols(kstore, path), key=lambda s: (s[2], -s[3])) == \
            sorted(expected, key=lambda s: (s[2], -s[3])), path
        mod = module(kstore, path)
        assert mod is not None
        assert (mod["lang"], mod["imports"], mod["symbols"]) == (LANGS[path], IMPORTS[path],
                                                                 len(expected))
    total = sum(len(v) for v in SYMBOLS.values())
    edges = dict(kstore.conn.execute("SELECT edge_type, count(*) FROM edges GROUP BY 1").fetchall())
    assert edges == {"defines": total, "imports": sum(len(v) for v in IMPORTS.values())}
    assert kstore.conn.execute("SELECT to_id FROM edges WHERE edge_type='imports' AND from_id LIKE"
                               " '%:cmd/server.go'").fetchall() == [("import:fmt",), ("import:strings",)]
    assert fts_intact(kstore)


def test_chunks_hold_each_symbol_with_its_comments_and_each_module_header(
        kstore: KnowledgeStore, sample_repo: Path) -> None:
    scan_repo(kstore, sample_repo)
    lines = SOURCES["geometry/src/lib.rs"].split("\n")

    path, start, end, body = chunk(kstore, "fetch_shapes")
    assert (path, start, end) == ("geometry/src/lib.rs", 36, 40)
    assert body == "\n".join(lines[35:40])
    # the doc comment above a symbol is in its chunk, not in its declared range
    path, start, end, body = chunk(kstore, "Point")
    assert (start, end) == (8, 13)
    assert body.startswith("/// A point on the plane.\n#[derive(Debug, Clone)]")
    # a module's chunk is its header: package line and imports
    path, start, end, body = chunk(kstore, "cmd/server.go")
    assert (start, end) == (1, 7)
    assert body.splitlines()[-1] == ")"
    assert '"fmt"' in body


def test_a_long_symbol_is_cut_to_the_chunk_limit(kstore: KnowledgeStore, tmp_path: Path) -> None:
    from tests.conftest import make_repo

    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_CHUNK_LINES + 50))
    repo = make_repo(tmp_path / "long", {"big.py": f"def big():\n{body}    return 0\n"})
    scan_repo(kstore, repo)
    _, start, end, text = chunk(kstore, "big")
    assert (start, end) == (1, MAX_CHUNK_LINES)
    assert len(text.splitlines()) == MAX_CHUNK_LINES
    assert symbols(kstore, "big.py") == [("function", "big", 1, MAX_CHUNK_LINES + 52)]


def test_a_rescan_reads_only_what_changed_and_drops_what_is_gone(kstore: KnowledgeStore,
                                                                  sample_repo: Path) -> None:
    scan_repo(kstore, sample_repo)
    rowids = dict(kstore.conn.execute("SELECT id, rowid FROM chunks").fetchall())

    billing = sample_repo / "app" / "billing.py"
    billing.write_text(billing.read_text() + "\n\ndef refund(invoice):\n    return -invoice\n")
    (sample_repo / "web" / "util.js").unlink()  # deleted in the working tree, still in the index
    (sample_repo / "cmd" / "extra.go").write_text("package server\n\nfunc Extra() {}\n")  # untracked
    (sample_repo / ".gitignore").write_text("generated/\n")
    (sample_repo / "generated").mkdir()
    (sample_repo / "generated" / "gen.py").write_text("def generated(): pass\n")  # ignored

    report = scan_repo(kstore, sample_repo)

    assert (report.scanned, report.unchanged, report.removed) == (2, len(SOURCES) - 2, 1)
    assert ("function", "refund", 24, 25) in symbols(kstore, "app/billing.py")
    assert symbols(kstore, "web/util.js") == []
    assert module(kstore, "web/util.js") is None
    assert kstore.conn.execute("SELECT count(*) FROM chunks WHERE path='web/util.js'"
                               ).fetchone() == (0,)
    assert kstore.search('"joinAll"', 5) == []
    assert symbols(kstore, "cmd/extra.go") == [("func", "Extra", 3, 3)]
    assert "generated/gen.py" not in indexed_paths(kstore)
    # files that did not change kept their rows (nothing was rewritten)
    kept = dict(kstore.conn.execute("SELECT id, rowid FROM chunks WHERE path='lib/shop.rb'"))
    assert kept
    assert all(rowids[k] == v for k, v in kept.items())
    assert fts_intact(kstore)

    # a file committed as it is now is still unchanged: the index sha and the hashed one agree
    repo = pygit2.Repository(str(sample_repo))
    repo.index.add("app/billing.py")
    repo.index.write()
    again = scan_repo(kstore, sample_repo)
    assert (again.scanned, again.removed) == (0, 0)


def test_files_that_must_not_be_read_are_left_out(kstore: KnowledgeStore, tmp_path: Path,
                                                  relay_home: Path) -> None:
    from tests.conftest import make_repo

    files = {
        "app/main.py": "def main(): pass\n",
        "node_modules/lib/index.js": "export function vendored() {}\n",
        "vendor/dep/dep.go": "package dep\nfunc Vendored() {}\n",
        "build/out.py": "def built(): pass\n",
        "pkg/target/x.rs": "fn targeted() {}\n",
        ".env.local.py": "SECRET_KEY = 'x'\n",
        "certs/server.key": "not source anyway\n",
        "keys/id_rsa.py": "def key(): pass\n",
        "big.py": "x = 1\n" + "#" * MAX_FILE_BYTES + "\n",
        "blob.js": "const a = 1;\0\0binary\n",
    }
    repo = make_repo(tmp_path / "mixed", files)
    os.symlink(repo / "app" / "main.py", repo / "app" / "link.py")
    data = repo / ".relay"  # a data folder inside the repository: its worktrees hold source
    (data / "worktrees" / "s1").mkdir(parents=True)
    (data / "worktrees" / "s1" / "copy.py").write_text("def copied(): pass\n")

    report = scan_repo(kstore, repo, exclude=[data])

    assert indexed_paths(kstore) == {"app/main.py"}
    assert report.skipped["vendored"] == 4
    assert report.skipped["sensitive"] == 3
    assert report.skipped["data_folder"] == 1
    assert report.skipped["large"] == 1
    assert report.skipped["binary"] == 1
    assert report.skipped["link"] == 1


def test_a_folder_that_is_not_a_git_repository_is_refused(kstore: KnowledgeStore,
                                                          tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(WorktreeError, match="not in a git repository"):
        scan_repo(kstore, tmp_path / "plain")


class _StopAfter(threading.Event):
    """A cancel flag that is set once the scanner has looked at it ``n`` times."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.left = n

    def is_set(self) -> bool:
        self.left -= 1
        return self.left < 0


def test_a_cancelled_scan_keeps_its_work_and_removes_nothing(kstore: KnowledgeStore,
                                                              sample_repo: Path) -> None:
    scan_repo(kstore, sample_repo)
    shutil.rmtree(sample_repo / "web")
    (sample_repo / "app" / "billing.py").write_text("def changed(): pass\n")
    (sample_repo / "lib" / "shop.rb").write_text("def changed_too; end\n")

    # listing order is sorted: app/billing.py, bank/…, cmd/…, geometry/…, lib/shop.rb
    stopped = scan_repo(kstore, sample_repo, cancel=_StopAfter(2))

    assert stopped.cancelled
    assert (stopped.scanned, stopped.removed) == (1, 0)
    assert symbols(kstore, "app/billing.py") == [("function", "changed", 1, 1)]
    assert symbols(kstore, "web/widget.ts")  # not removed by an unfinished listing
    finished = scan_repo(kstore, sample_repo)
    assert (finished.scanned, finished.removed) == (1, 2)
    assert symbols(kstore, "lib/shop.rb") == [("def", "changed_too", 1, 1)]
    assert fts_intact(kstore)


def test_a_file_that_does_not_parse_still_has_its_module(kstore: KnowledgeStore,
                                                         tmp_path: Path) -> None:
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "broken", {"half.py": "def ok():\n    return (\n"})
    scan_repo(kstore, repo)
    mod = module(kstore, "half.py")
    assert mod is not None
    assert mod["damaged"] is True
    assert symbols(kstore, "half.py") == []


def test_an_index_of_another_schema_is_rebuilt_or_refused(tmp_path: Path,
                                                          sample_repo: Path) -> None:
    path = tmp_path / "k.sqlite"
    store = open_store(path)
    scan_repo(store, sample_repo)
    store.conn.execute("UPDATE meta SET value='0' WHERE key='schema'")
    store.close()

    rebuilt = open_store(path)  # older: a cache, rebuilt empty
    assert rebuilt.conn.execute("SELECT count(*) FROM nodes").fetchone() == (0,)
    rebuilt.conn.execute("UPDATE meta SET value='99' WHERE key='schema'")
    rebuilt.close()
    with pytest.raises(SchemaTooNewError, match="newer Relay"):
        open_store(path)

    path.write_bytes(b"this is not a database, just bytes" * 100)  # damaged: rebuilt
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    store = open_store(path)
    assert store.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == (
        str(SCHEMA_VERSION),)
    store.close()
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_odd_files_are_indexed_without_raising(kstore: KnowledgeStore, tmp_path: Path) -> None:
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "odd", {
        "empty.py": "",
        "half.ts": "export class Ok { run() {} }\nexport function broken( {\n",
        "README.md": "# odd\n",
    })
    (repo / "latin1.rb").write_bytes(b"require \"json\"\n\n# Caf\xe9 \xab menu \xbb\n"
                                     b"class Menu\n  def price; \"\xe9\"; end\nend\n")

    report = scan_repo(kstore, repo)

    assert (report.files, report.scanned) == (3, 3)
    empty = module(kstore, "empty.py")
    assert empty is not None
    assert (empty["lines"], empty["imports"], empty["symbols"], empty["damaged"]) == (1, [], 0, False)
    assert kstore.conn.execute("SELECT count(*) FROM chunks WHERE path='empty.py'").fetchone() == (0,)
    half = module(kstore, "half.ts")
    assert half is not None
    assert half["damaged"] is True
    assert ("class", "Ok", 1, 1) in symbols(kstore, "half.ts")
    assert ("method", "Ok.run", 1, 1) in symbols(kstore, "half.ts")
    latin = module(kstore, "latin1.rb")
    assert latin is not None
    assert latin["imports"] == ["json"]
    assert symbols(kstore, "latin1.rb") == [("class", "Menu", 4, 6), ("method", "Menu#price", 5, 5)]
    _, start, _, body = chunk(kstore, "Menu")
    assert start == 3  # the comment above it, replacement characters and all
    assert body.startswith("# Caf\ufffd \ufffd menu \ufffd")
    assert fts_intact(kstore)


def test_an_index_the_old_scanner_filled_is_rescanned(tmp_path: Path, sample_repo: Path) -> None:
    path = tmp_path / "k.sqlite"
    store = open_store(path)
    scan_repo(store, sample_repo)
    store.conn.execute("DELETE FROM nodes WHERE node_type='symbol'")  # what it missed
    store.conn.execute("UPDATE meta SET value=? WHERE key='schema'", (str(SCHEMA_VERSION - 1),))
    store.close()

    store = open_store(path)
    try:
        report = scan_repo(store, sample_repo)
        assert report.scanned == len(SOURCES)  # not "unchanged": the blob shas were dropped too
        assert ("method", "Widget.size", 11, 13) in symbols(store, "web/widget.ts")
    finally:
        store.close()


def test_replacing_a_files_rows_looks_them_up_by_index(kstore: KnowledgeStore) -> None:
    """Each file scanned drops its old rows first: a scan of the chunks table per file would
    make a full scan of a large repository quadratic."""
    ids = "SELECT id FROM nodes WHERE repo=? AND path=? AND origin='code'"
    for statement in (f"DELETE FROM edges WHERE from_id IN ({ids})",
                      f"DELETE FROM chunks WHERE node_id IN ({ids})"):
        plan = " ".join(str(r[3]) for r in kstore.conn.execute(f"EXPLAIN QUERY PLAN {statement}",
                                                               ("r", "p")))
        assert "SCAN" not in plan, (statement, plan)
