"""Project instruction files: which exist in a worktree, and which runtime reads which itself.

**Found** (:func:`discover`): ``AGENTS.md``, ``AGENTS.override.md``, ``CLAUDE.md``,
``CLAUDE.local.md`` and ``GEMINI.md`` (or the names a project's ``.gemini/settings.json``
gives as ``context.fileName``) in the root and in every subfolder; at the root only
``.claude/CLAUDE.md``, ``.claude/rules/*.md``, ``CONVENTIONS.md``,
``.github/copilot-instructions.md``, ``.cursorrules`` and ``.cursor/rules/*.mdc``.
Folders and files git ignores are not searched (``CLAUDE.local.md`` excepted: it is
meant to be ignored), nor ``.git``, other hidden folders, or deeper than
:data:`MAX_DEPTH`. A file that is unreadable, not UTF-8 text, or a link leading out of
the worktree is skipped with a notice; an empty one is left out; an ``AGENTS.md``
beside an ``AGENTS.override.md`` is overridden (Codex's rule) and left out.

**Read natively** (:data:`NATIVE`, from the recorded CLIs' help, captures and docs in
``tests/fixtures``): Claude Code 2.1.197 reads ``CLAUDE.md`` / ``CLAUDE.local.md``
(the root's at start, a subfolder's when it works there), ``.claude/CLAUDE.md`` and
``.claude/rules``; Codex 0.171.0 reads ``AGENTS.override.md`` or else ``AGENTS.md`` per
folder (its base instructions tell the model to follow a subfolder's when editing
there); Gemini CLI 0.61.0 reads every ``GEMINI.md`` up and down the tree (its
``contextFileName``); Pi 0.73.1 reads the root's ``AGENTS.md`` or else ``CLAUDE.md``
(``--no-context-files`` names both) but never a subfolder's. The ACP agents
``claude-acp``, ``codex-acp`` and ``gemini-acp`` read what their CLI reads; the HTTP
runtimes, other ACP agents and the demo read nothing themselves. Everything a runtime does not read is
passed on (:mod:`relay.sessions.instructions_delivery`), unless its content equals a
file it does get.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

import pygit2

from relay.core import jsonvalue
from relay.core.fsutil import open_regular
from relay.core.redact import scrub

#: the deepest folder searched (the root is depth 0)
MAX_DEPTH = 8
#: at most this many folders are searched; the rest are reported as not searched
MAX_FOLDERS = 5_000
#: at most this much of one file is read (its hash covers the whole file)
MAX_READ = 256 * 1024

ANYWHERE = ("AGENTS.override.md", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md")
AT_ROOT = (".claude/CLAUDE.md", ".claude/rules/*.md", "CONVENTIONS.md",
           ".github/copilot-instructions.md", ".cursorrules", ".cursor/rules/*.mdc")
_HIDDEN_SEARCHED = frozenset({".claude", ".github", ".cursor"})
_NEVER_SEARCHED = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})
_MEANT_TO_BE_IGNORED = frozenset({"CLAUDE.local.md"})
GEMINI_SETTINGS = ".gemini/settings.json"

How = Literal["native", "passed_on", "duplicate"]


@dataclass(frozen=True)
class NativeReads:
    """The instruction files a runtime reads by itself (fnmatch patterns on the path)."""

    #: file names read in the root and in any subfolder
    anywhere: tuple[str, ...] = ()
    #: paths read at the root only
    at_root: tuple[str, ...] = ()
    #: ``name → other``: the root's ``name`` is read only when the root has no ``other``
    unless: tuple[tuple[str, str], ...] = ()


#: runtime → what it reads natively (a runtime not listed reads nothing: an HTTP runtime,
#: an ACP agent, the demo)
NATIVE: dict[str, NativeReads] = {
    "claude": NativeReads(anywhere=("CLAUDE.md", "CLAUDE.local.md"),
                          at_root=(".claude/CLAUDE.md", ".claude/rules/*.md")),
    "codex": NativeReads(anywhere=("AGENTS.override.md", "AGENTS.md")),
    "gemini": NativeReads(anywhere=("GEMINI.md",)),
    "pi": NativeReads(at_root=("AGENTS.md",), unless=(("CLAUDE.md", "AGENTS.md"),)),
}
#: the ACP agents that are these CLIs (or bridges over their own engines)
NATIVE |= {"claude-acp": NATIVE["claude"], "codex-acp": NATIVE["codex"],
           "gemini-acp": NATIVE["gemini"]}
_GEMINI = frozenset({"gemini", "gemini-acp"})


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file: its path in the worktree, hash, and scrubbed text."""

    path: str
    sha256: str
    text: str
    size: int
    #: False: only the first MAX_READ bytes were read
    complete: bool = True

    @property
    def folder(self) -> str:
        parent = PurePosixPath(self.path).parent.as_posix()
        return "" if parent == "." else parent


@dataclass(frozen=True)
class Found:
    """What :func:`discover` found, and what it skipped (one sentence each)."""

    files: tuple[InstructionFile, ...] = ()
    skipped: tuple[str, ...] = ()
    #: the names Gemini CLI reads (``context.fileName`` of the project's settings)
    gemini_names: tuple[str, ...] = ("GEMINI.md",)


@dataclass(frozen=True)
class Placement:
    """How one file reaches one runtime: read natively, passed on by Relay, or neither
    because its content equals a file the runtime gets (``duplicate``)."""

    file: InstructionFile
    runtime: str
    how: How


@dataclass
class _Walk:
    root: Path
    repo: pygit2.Repository | None
    #: ``root`` relative to the repository's work tree (root itself: "")
    prefix: str
    names: tuple[str, ...]
    files: list[InstructionFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    folders: int = 0


def discover(root: Path, *, deep: bool = True) -> Found:
    """The instruction files in the worktree ``root`` (see the module docstring).

    ``deep=False`` looks at the root's known paths only (a quick look for the GUI).
    Never raises for a file: problems become ``skipped`` sentences.
    """
    root = root.resolve()
    gemini_names, skipped = _gemini_names(root)
    walk = _Walk(root, *_repository(root), tuple(dict.fromkeys((*ANYWHERE, *gemini_names))), skipped=skipped)
    for folder, subdirs, names in os.walk(root):
        rel = Path(folder).relative_to(root)
        walk.folders += 1
        subdirs[:] = sorted(d for d in subdirs if _searched(walk, rel, d, deep))
        if rel.parts and rel.parts[0] in _HIDDEN_SEARCHED:
            wanted = [n for n in sorted(names) if _matches_root((rel / n).as_posix())]
        else:
            wanted = [n for n in sorted(names)
                      if n in walk.names or (not rel.parts and _matches_root(n))]
        _look(walk, rel, wanted)
        if walk.folders >= MAX_FOLDERS:
            walk.skipped.append(f"Stopped looking for instruction files after {MAX_FOLDERS} "
                                "folders; the others were not searched.")
            break
    return Found(tuple(_without_overridden(walk.files)), tuple(walk.skipped), gemini_names)


def _searched(walk: _Walk, rel: Path, name: str, deep: bool) -> bool:
    in_hidden = bool(rel.parts) and rel.parts[0] in _HIDDEN_SEARCHED
    if name in _NEVER_SEARCHED or len(rel.parts) + 1 > MAX_DEPTH:
        return False
    entering_hidden = not rel.parts and name in _HIDDEN_SEARCHED
    if not (in_hidden or entering_hidden) and (name.startswith(".") or not deep):
        return False
    return not _ignored(walk, (rel / name).as_posix() + "/")


def _repository(root: Path) -> tuple[pygit2.Repository | None, str]:
    try:
        found = pygit2.discover_repository(str(root))
        repo = pygit2.Repository(found) if found else None
    except (pygit2.GitError, KeyError):
        return None, ""
    if repo is None or repo.workdir is None:
        return None, ""
    workdir = Path(repo.workdir).resolve()
    if not root.is_relative_to(workdir):
        return None, ""
    rel = root.relative_to(workdir).as_posix()
    return repo, "" if rel == "." else rel + "/"


def _ignored(walk: _Walk, rel: str) -> bool:
    return walk.repo is not None and walk.repo.path_is_ignored(walk.prefix + rel)


def _matches_root(rel: str) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in AT_ROOT)


def _look(walk: _Walk, rel: Path, names: list[str]) -> None:
    for name in names:
        path = (rel / name).as_posix()
        if name not in _MEANT_TO_BE_IGNORED and _ignored(walk, path):
            continue
        found = _read(walk.root, path, walk.skipped)
        if found is not None:
            walk.files.append(found)


def _read(root: Path, rel: str, skipped: list[str]) -> InstructionFile | None:
    target = root / rel
    try:
        if not target.resolve().is_relative_to(root):
            skipped.append(f"{rel} was skipped: it links outside the repository.")
            return None
        digest, head, size = hashlib.sha256(), b"", 0
        with open_regular(target) as fh:  # a FIFO or a device is skipped, never waited on
            while chunk := fh.read(1 << 16):
                digest.update(chunk)
                if size < MAX_READ:
                    head += chunk
                size += len(chunk)
    except OSError as exc:
        skipped.append(f"{rel} was skipped: it cannot be read ({exc.strerror or exc}).")
        return None
    if b"\0" in head:
        skipped.append(f"{rel} was skipped: it is not text.")
        return None
    try:
        text = head[:MAX_READ].decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < MAX_READ - 4:  # not just a character cut at the read limit
            skipped.append(f"{rel} was skipped: it is not UTF-8 text.")
            return None
        text = head[:exc.start].decode("utf-8-sig")
    if not text.strip():
        return None
    return InstructionFile(path=rel, sha256=digest.hexdigest(), text=scrub(text), size=size,
                           complete=size <= MAX_READ)


def _without_overridden(files: list[InstructionFile]) -> list[InstructionFile]:
    overrides = {f.folder for f in files if PurePosixPath(f.path).name == "AGENTS.override.md"}
    return [f for f in files
            if not (PurePosixPath(f.path).name == "AGENTS.md" and f.folder in overrides)]


def _gemini_names(root: Path) -> tuple[tuple[str, ...], list[str]]:
    """``context.fileName`` (or the older ``contextFileName``) of the project's settings."""
    path = root / GEMINI_SETTINGS
    if not path.is_file():
        return ("GEMINI.md",), []
    try:
        settings = jsonvalue.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return ("GEMINI.md",), [f"{GEMINI_SETTINGS} was not read (not valid JSON); Gemini "
                                "is assumed to read GEMINI.md."]
    context = settings.get("context") if isinstance(settings, dict) else None
    raw = context.get("fileName") if isinstance(context, dict) else None
    if raw is None and isinstance(settings, dict):
        raw = settings.get("contextFileName")
    names = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    valid = tuple(n for n in names if isinstance(n, str) and n and "/" not in n)
    return (valid or ("GEMINI.md",)), []


# --- who reads what ---------------------------------------------------------------------

def native_reads(runtime: str, found: Found) -> NativeReads:
    """What ``runtime`` reads itself in this worktree (Gemini's names come from ``found``)."""
    if runtime in _GEMINI:
        return NativeReads(anywhere=found.gemini_names)
    return NATIVE.get(runtime, NativeReads())


def reads_natively(runtime: str, file: InstructionFile, found: Found) -> bool:
    """Whether ``runtime`` reads ``file`` by itself."""
    reads = native_reads(runtime, found)
    name = PurePosixPath(file.path).name
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in reads.anywhere):
        return True
    at_root = {f.path for f in found.files if not f.folder}
    if any(fnmatch.fnmatchcase(file.path, pattern) for pattern in reads.at_root):
        return True
    return any(file.path == name_ and other not in at_root for name_, other in reads.unless)


def placements(runtime: str, found: Found) -> list[Placement]:
    """How each found file reaches ``runtime``: natively first, then what Relay passes
    on (root before subfolders), a file whose content it already gets as a duplicate."""
    native = [f for f in found.files if reads_natively(runtime, f, found)]
    others = sorted((f for f in found.files if f not in native),
                    key=lambda f: (0 if _matches_root(f.path) else f.path.count("/"),
                                   _family(f.path), f.path))
    out = [Placement(f, runtime, "native") for f in native]
    seen = {f.sha256 for f in native}
    for file in others:
        out.append(Placement(file, runtime, "duplicate" if file.sha256 in seen else "passed_on"))
        seen.add(file.sha256)
    return out


def _family(path: str) -> int:
    """The order files are passed on in: agent-neutral ones first, tool-specific ones last."""
    order = ("AGENTS.override.md", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md",
             ".claude/*", "CONVENTIONS.md", ".github/*", ".cursorrules", ".cursor/*")
    name = PurePosixPath(path).name
    for i, pattern in enumerate(order):
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(path, pattern):
            return i
    return len(order)
