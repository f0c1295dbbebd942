"""Where each CLI keeps its transcripts, and which folders the usage index reads.

:func:`sources_for` lists every registered account's configuration folder plus each CLI's
default folder (counted under the bare provider name) when it exists and is not already an
account's. :func:`discover` walks one source for its transcript files: an unreadable folder
or file is counted as a warning and the walk goes on.

The folders are :mod:`relay.core.agent_homes`'s (one each: ``$CLAUDE_CONFIG_DIR`` is one
path, not a list, and Claude Code has no ``~/.config/claude``):

- claude: ``projects/**/*.jsonl`` (subagents included);
- codex: ``sessions/**/*.jsonl`` and ``archived_sessions/**/*.jsonl``;
- gemini: ``tmp/<project>/chats/*.json[l]``;
- pi: ``sessions/**/*.jsonl``.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from relay.core import jsonvalue
from relay.core.agent_homes import ClaudeHome, CodexHome, GeminiHome, PiHome, default_folders
from relay.wallet.transcripts import RUNTIMES, TranscriptSource

#: warning kinds of the walk
UNREADABLE = "unreadable"
UNREADABLE_DIR = "unreadable_dir"


class AccountLike(Protocol):
    """What :func:`sources_for` reads of an account (``relay.core.accounts.Account``)."""

    @property
    def provider(self) -> str: ...

    @property
    def config_dir(self) -> Path | None: ...

    @property
    def entry(self) -> str: ...


class FoundFile(NamedTuple):
    """A transcript file and what ``stat`` said of it (a tuple: thousands are made per refresh)."""

    path: str
    source: TranscriptSource
    size: int
    mtime_ns: int
    inode: int
    device: int
    #: the reader's starting state (Gemini: the project folder the chat belongs to)
    hints: dict[str, Any]


@dataclass(slots=True)
class Discovery:
    """The transcript files of some sources, and where the walk could not look."""

    files: dict[str, FoundFile] = field(default_factory=dict)
    #: folders that could not be listed: files indexed under them earlier are kept
    blind: list[str] = field(default_factory=list)
    #: per account entry, per warning kind
    warnings: dict[str, Counter[str]] = field(default_factory=dict)

    def warn(self, entry: str, kind: str) -> None:
        self.warnings.setdefault(entry, Counter())[kind] += 1


def sources_for(accounts: Iterable[AccountLike], env: Mapping[str, str]) -> list[TranscriptSource]:
    """Every account's folder, then each CLI's default folder not already an account's."""
    sources = [TranscriptSource(a.entry, a.provider, a.config_dir) for a in accounts
               if a.config_dir is not None and a.provider in RUNTIMES]
    taken = {_real(s.root) for s in sources}
    for runtime, root in default_folders(env):
        if _real(root) not in taken and root.is_dir():
            taken.add(_real(root))
            sources.append(TranscriptSource(runtime, runtime, root))
    return sources


def counted_sources(accounts: Iterable[AccountLike], env: Mapping[str, str],
                    default_folders: bool) -> list[TranscriptSource]:
    """:func:`sources_for`, less the CLIs' default folders when the settings leave them
    out (``wallet_default_folders``): then only the registered accounts' folders count."""
    found = sources_for(accounts, env)
    return found if default_folders else [s for s in found if ":" in s.entry]


def discover(sources: Iterable[TranscriptSource]) -> Discovery:
    """The transcript files of ``sources`` (a file under two sources belongs to the first)."""
    found = Discovery()
    for source in sources:
        if source.runtime == "gemini":
            _walk_gemini(source, found)
            continue
        for folder in _transcript_dirs(source):
            if folder.is_dir():
                _walk(str(folder), source, found, {})
    return found


def _transcript_dirs(source: TranscriptSource) -> tuple[Path, ...]:
    """The folders a Claude, Codex or Pi source keeps its transcripts in."""
    if source.runtime == "claude":
        return (ClaudeHome(source.root).projects,)
    if source.runtime == "codex":
        return CodexHome(source.root).rollout_dirs
    if source.runtime == "pi":
        return PiHome(source.root).session_dirs
    return ()


#: the names :func:`relay.wallet.transcripts.reader_for` reads, per runtime
_SUFFIXES = {"claude": (".jsonl",), "codex": (".jsonl",), "pi": (".jsonl",),
             "gemini": (".json", ".jsonl")}


def _walk(folder: str, source: TranscriptSource, found: Discovery, hints: dict[str, Any]) -> None:
    """Every transcript file under ``folder`` (directory symlinks are not followed: no loops)."""
    try:
        with os.scandir(folder) as listing:
            items = list(listing)
    except OSError:
        found.warn(source.entry, UNREADABLE_DIR)
        found.blind.append(folder)
        return
    suffixes = _SUFFIXES.get(source.runtime, ())
    for item in items:
        if item.name.endswith(suffixes):
            _add(item.path, source, found, hints)
        elif _is_dir(item):
            _walk(item.path, source, found, hints)


def _add(path: str, source: TranscriptSource, found: Discovery, hints: dict[str, Any]) -> None:
    if path in found.files:
        return
    try:
        if not path.isascii():
            path.encode("utf-8")   # a name that is not UTF-8 cannot be stored in the index
        info = os.stat(path)
    except (OSError, UnicodeEncodeError):
        found.warn(source.entry, UNREADABLE)
        return
    if not stat.S_ISREG(info.st_mode):
        # a folder, a pipe or a device where a transcript should be: never opened
        found.warn(source.entry, UNREADABLE)
        return
    found.files[path] = FoundFile(path, source, info.st_size, info.st_mtime_ns, info.st_ino,
                                  info.st_dev, hints)


def _walk_gemini(source: TranscriptSource, found: Discovery) -> None:
    """``tmp/<project>/chats/*``, each chat hinted with its project's folder."""
    home = GeminiHome.found_in(source.root)
    projects = _gemini_projects(home)
    try:
        with os.scandir(home.tmp) as listing:
            folders = [item for item in listing if _is_dir(item)]
    except FileNotFoundError:
        return
    except OSError:
        found.warn(source.entry, UNREADABLE_DIR)
        found.blind.append(str(home.tmp))
        return
    for item in folders:
        chats = os.path.join(item.path, "chats")
        if os.path.isdir(chats):
            _walk(chats, source, found, {"project": projects.get(item.name, item.name)})


def _gemini_projects(home: GeminiHome) -> dict[str, str]:
    """``projects.json``: project folder name → the working directory it stands for."""
    try:
        data = jsonvalue.loads(home.projects_file.read_bytes(), fast=True)
    except (OSError, ValueError):
        return {}
    table = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return {}
    return {name: cwd for cwd, name in table.items() if isinstance(name, str)}


def _is_dir(item: os.DirEntry[str]) -> bool:
    try:
        return item.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _real(path: Path) -> str:
    try:
        return str(path.expanduser().resolve())
    except OSError:
        return str(path)
