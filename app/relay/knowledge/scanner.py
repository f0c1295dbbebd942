"""The code scanner: a repository's source files into module and symbol nodes and chunks.

**Which files.** Those git tracks (the index) plus untracked files git does not ignore,
listed through pygit2, in the working tree as they are now. Left out: anything under a
``node_modules``, ``vendor``, ``target``, ``dist``, ``build`` or ``.git`` folder; files
that may hold credentials (:func:`sensitive`); anything inside Relay's data folder (its
vault, databases and worktrees); symbolic links and submodules; files over 1 MB; files
with a NUL byte in their first 8 KB (binary); and files in none of the outlined languages
(:mod:`relay.knowledge.langs`).

**Incremental.** A file's blob sha is git's: from the index when git says the working
file matches it (nothing is read), else hashed from the file. A file whose sha the index
already has is skipped; a changed one has its rows replaced; one that is gone (deleted,
ignored, grown past 1 MB …) leaves the index. Files are committed in batches, so a scan
that is cancelled (``cancel`` set: Relay is closing) keeps what it did; nothing is
removed then, since the listing was not finished.

**What is recorded** per file (ids carry a short hash of the repository path):

- a ``module`` node (payload: path, lang, lines, imports, symbol count) with a chunk of its
  header — module docstring, package line and imports (at most 200 lines);
- a ``symbol`` node per symbol (name, kind, path, lines) — top-level ones and the members
  of types (``Class.method``, TS class properties and accessors, Rust impl methods …, see
  :mod:`relay.knowledge.langs`) — with a ``defines`` edge from its module and a chunk of its
  source: the comment lines right above it and the symbol itself, at most
  :data:`MAX_CHUNK_LINES` lines;
- an ``imports`` edge from the module to ``import:<name>`` for each imported name (a
  name, not a node: imports are not resolved to files).
"""

from __future__ import annotations

import stat
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pygit2

from relay.core.errors import WorktreeError
from relay.knowledge.langs import Outline, language_of, outline
from relay.knowledge.model import Chunk, Edge, Graph, Node, short_hash
from relay.knowledge.store import KnowledgeStore
from relay.sessions.worktree import repo_root

MAX_FILE_BYTES = 1_000_000
BINARY_PROBE = 8000
MAX_CHUNK_LINES = 200
MAX_HEADER_LINES = 200
SKIP_DIRS = frozenset({"node_modules", "vendor", "target", "dist", "build", ".git"})
_SENSITIVE_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk")
_SENSITIVE_NAMES = frozenset({".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials",
                              "credentials", "credentials.json"})
_SENSITIVE_PREFIXES = (".env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
#: commit after this many changed files, or this many seconds
BATCH_FILES = 200
BATCH_SECONDS = 0.5
_CHANGED = (pygit2.GIT_STATUS_WT_MODIFIED | pygit2.GIT_STATUS_WT_TYPECHANGE
            | pygit2.GIT_STATUS_WT_RENAMED)


@dataclass
class ScanReport:
    """What one scan did."""

    repo: str
    #: source files found
    files: int = 0
    #: read and indexed again
    scanned: int = 0
    unchanged: int = 0
    removed: int = 0
    symbols: int = 0
    #: files left out, by reason (sensitive, vendored, data_folder, link, large, binary)
    skipped: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    cancelled: bool = False

    def to_json(self) -> dict[str, object]:
        return {"repo": self.repo, "files": self.files, "scanned": self.scanned,
                "unchanged": self.unchanged, "removed": self.removed, "symbols": self.symbols,
                "skipped": dict(sorted(self.skipped.items())), "seconds": round(self.seconds, 3),
                "cancelled": self.cancelled}


def sensitive(path: str) -> bool:
    """Files that may hold credentials are never read: ``.env*``, keys and certificates
    (``*.pem``, ``*.key``, ``*.p12``, ``*.pfx``, ``*.jks``, ``*.keystore``, ``*.ppk``), SSH
    keys (``id_rsa*`` …), ``.netrc``, ``.pgpass``, ``.npmrc``, ``.pypirc``,
    ``.git-credentials``, ``credentials(.json)``."""
    name = PurePosixPath(path).name
    lowered = name.lower()
    return (lowered.startswith(_SENSITIVE_PREFIXES) or lowered.endswith(_SENSITIVE_SUFFIXES)
            or lowered in _SENSITIVE_NAMES)


def repo_key(root: Path) -> str:
    return short_hash(str(root))


def scan_repo(store: KnowledgeStore, root: Path, *, exclude: Sequence[Path] = (),
              cancel: threading.Event | None = None) -> ScanReport:
    """Bring the index up to date with the repository whose working tree is ``root``.

    ``exclude`` are folders never read (Relay's data folder). ``cancel`` stops the scan
    between two files.
    """
    started = time.monotonic()
    root = repo_root(root)
    repo, key = str(root), repo_key(root)
    report = ScanReport(repo=repo)
    candidates = _listing(pygit2.Repository(str(root)), root, exclude, report)
    known = store.file_shas(repo)
    kept: set[str] = set()
    batch = _Batch(store)
    try:
        for path, sha in candidates:
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            if _scan_file(store, batch, root, repo, key, path, sha, known.get(path), report):
                kept.add(path)
        if not report.cancelled:
            for gone in sorted(set(known) - kept):
                batch.begin()
                store.drop_file(repo, gone)
                report.removed += 1
            batch.begin()
            store.mark_scanned(repo, key)
    except BaseException:
        batch.rollback()  # files committed in earlier batches stay: each is complete
        raise
    batch.commit()
    report.seconds = time.monotonic() - started
    return report


def _listing(repo: pygit2.Repository, root: Path, exclude: Sequence[Path],
             report: ScanReport) -> list[tuple[str, str | None]]:
    """``(path, sha)`` for each source file to look at; ``sha`` is None when the working
    file differs from the index (or is untracked)."""
    try:
        status = repo.status(untracked_files="all")
        index = repo.index
    except (pygit2.GitError, OSError) as exc:
        raise WorktreeError(f"Cannot read the git status of {root}: {exc}.") from exc
    found: dict[str, str | None] = {}
    for entry in index:
        flags = status.get(entry.path, 0)
        if entry.mode in (pygit2.GIT_FILEMODE_LINK, pygit2.GIT_FILEMODE_COMMIT):
            report.skipped["link"] += 1
        elif not flags & pygit2.GIT_STATUS_WT_DELETED:
            found[entry.path] = None if flags & _CHANGED else str(entry.id)
    for path, flags in status.items():
        if flags & pygit2.GIT_STATUS_WT_NEW:
            found.setdefault(path, None)
    excluded = _inside(root, exclude)
    out = []
    for path in sorted(found):
        reason = _skip_reason(path, excluded)
        if reason:
            report.skipped[reason] += 1
        elif language_of(path) is not None:
            out.append((path, found[path]))
    report.files = len(out)
    return out


def _inside(root: Path, folders: Sequence[Path]) -> list[str]:
    """The ``folders`` inside ``root``, as repository-relative prefixes ending in ``/``."""
    out = []
    for folder in folders:
        try:
            rel = folder.resolve().relative_to(root)
        except ValueError:
            continue
        out.append("" if rel == Path(".") else rel.as_posix() + "/")
    return out


def _skip_reason(path: str, excluded: list[str]) -> str | None:
    if any(path.startswith(prefix) for prefix in excluded):
        return "data_folder"
    if SKIP_DIRS.intersection(PurePosixPath(path).parts[:-1]):
        return "vendored"
    if sensitive(path):
        return "sensitive"
    return None


class _Batch:
    """Commits every :data:`BATCH_FILES` files or :data:`BATCH_SECONDS` seconds."""

    def __init__(self, store: KnowledgeStore) -> None:
        self.store = store
        self.count = 0
        self.since = 0.0

    def begin(self) -> None:
        if self.store.conn.in_transaction and (
                self.count >= BATCH_FILES or time.monotonic() - self.since > BATCH_SECONDS):
            self.commit()
        if not self.store.conn.in_transaction:
            self.store.conn.execute("BEGIN IMMEDIATE")
            self.count, self.since = 0, time.monotonic()
        self.count += 1

    def commit(self) -> None:
        if self.store.conn.in_transaction:
            self.store.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.store.conn.in_transaction:
            self.store.conn.execute("ROLLBACK")


def _scan_file(store: KnowledgeStore, batch: _Batch, root: Path, repo: str, key: str, path: str,
               sha: str | None, known: str | None, report: ScanReport) -> bool:
    """Index one file if it changed; whether it belongs in the index."""
    target = root / path
    try:
        info = target.lstat()
        if stat.S_ISLNK(info.st_mode):
            report.skipped["link"] += 1
            return False
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would never end
            report.skipped["special"] += 1
            return False
        if info.st_size > MAX_FILE_BYTES:
            report.skipped["large"] += 1
            return False
        if sha is not None and sha == known:
            report.unchanged += 1
            return True
        data = target.read_bytes()
    except OSError:
        return False  # gone since the listing, or unreadable: left out
    if b"\0" in data[:BINARY_PROBE]:
        report.skipped["binary"] += 1
        return False
    sha = sha or str(pygit2.hash(data))
    if sha == known:
        report.unchanged += 1
        return True
    lang = language_of(path) or ""
    text = data.decode("utf-8", errors="replace")
    shape = outline(lang, text, path)
    batch.begin()
    store.replace_file(repo, path, sha, lang, file_graph(repo, key, path, lang, text, sha, shape),
                       len(shape.symbols))
    report.scanned += 1
    report.symbols += len(shape.symbols)
    return True


def file_graph(repo: str, key: str, path: str, lang: str, text: str, sha: str,
               shape: Outline) -> Graph:
    """The nodes, edges and chunks of one outlined file."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    module_id = f"module:{key}:{path}"
    graph = Graph(nodes=[Node(module_id, "module", {
        "path": path, "lang": lang, "lines": len(lines), "imports": shape.imports,
        "symbols": len(shape.symbols), "damaged": shape.damaged}, repo=repo, path=path)])
    graph.edges += [Edge(module_id, f"import:{name}", "imports") for name in shape.imports]
    header = _header_end(shape, len(lines))
    if header and any(line.strip() for line in lines[:header]):
        graph.chunks.append(Chunk(module_id, path, lang, 1, header, "\n".join(lines[:header]), sha,
                                  "module", path, module_id, repo))
    seen: Counter[str] = Counter()
    for sym in shape.symbols:
        seen[sym.name] += 1
        node_id = f"symbol:{key}:{path}#{sym.name}" + (f"~{seen[sym.name]}" if seen[sym.name] > 1
                                                       else "")
        graph.nodes.append(Node(node_id, "symbol", {
            "name": sym.name, "kind": sym.kind, "path": path, "startLine": sym.start,
            "endLine": sym.end}, repo=repo, path=path))
        graph.edges.append(Edge(module_id, node_id, "defines"))
        first, last = sym.chunk_start, min(sym.end, sym.chunk_start + MAX_CHUNK_LINES - 1)
        graph.chunks.append(Chunk(node_id, path, lang, first, last,
                                  "\n".join(lines[first - 1:last]), sha, "symbol", sym.name,
                                  node_id, repo))
    return graph


def _header_end(shape: Outline, total: int) -> int:
    """The last line of the module's header chunk (0: none)."""
    if shape.header_end:
        end = shape.header_end
    elif shape.symbols:
        end = min(s.chunk_start for s in shape.symbols) - 1
    else:
        end = total
    return max(0, min(end, MAX_HEADER_LINES, total))
