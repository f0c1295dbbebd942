"""Incremental usage readers of each agent CLI's own session files: bytes in, entries out.

Each reader is a pure function of the same shape, :data:`ParseFn`::

    parse(buf, state, start=0, end=None, base=0) -> Parsed

``buf[start:end]`` holds bytes of one file beginning at a line boundary; ``base`` is the
file offset of ``buf[0]`` (0 for a memory map of the whole file, the read offset for a slice),
so every :class:`~relay.wallet.model.UsageEntry` gets ``offset`` = the file offset of its line.
Only complete lines (ending in ``\\n``) are consumed: :attr:`Parsed.end` stops after the last
newline, and a partial last line (the CLI is still writing it) is read by the next refresh.
``state`` is a small JSON-serialisable dict a reader carries between calls on the same file
(Codex's current model and cumulative total, Pi's session header...); the index stores it.

Readers never raise on bad input: corrupt or truncated lines, lines over
:data:`MAX_LINE_BYTES`, non-UTF-8 bytes, missing or mistyped fields and impossible counts are
skipped and counted in :attr:`Parsed.warnings` by kind. For speed they look for a marker with
a C-speed byte search and parse only the lines that contain one: most bytes of a transcript
are tool results that carry no usage.

Readers: ``claude`` (Claude Code JSONL), ``codex`` (rollouts), ``gemini`` (chat JSONL) and
``gemini_json`` (older whole-document chat files), ``pi`` (Pi session JSONL).
"""

from __future__ import annotations

import mmap
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.wallet.model import LimitSnapshot, Tokens, UsageEntry

#: what a reader scans: the bytes of a file, or a memory map of it
Buffer = bytes | mmap.mmap
#: what a reader carries from one call to the next on the same file (JSON-serialisable)
State = dict[str, Any]

#: longer lines are skipped (counted as ``line_too_long``) instead of parsed
MAX_LINE_BYTES = 64 * 1024 * 1024
#: more tokens than this in one call is damage (and would not fit SQLite's 64-bit integers)
MAX_COUNT = 10**12

#: the runtimes whose transcripts have a reader
RUNTIMES = ("claude", "codex", "gemini", "pi")

#: warning kinds the readers count
CORRUPT = "corrupt_line"
NOT_UTF8 = "not_utf8"
TOO_LONG = "line_too_long"
MISSING = "missing_field"
BAD_TIME = "bad_timestamp"
BAD_NUMBER = "bad_number"


@dataclass(frozen=True, slots=True)
class TranscriptSource:
    """A folder of one CLI's transcripts, counted for one account.

    ``root`` is the CLI's configuration folder (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``,
    ``~/.gemini``, Pi's agent dir); ``entry`` is the account (``provider:label``), or the bare
    provider for the CLI's default folder.
    """

    entry: str
    runtime: str
    root: Path


@dataclass(slots=True)
class Parsed:
    """What one reader call found in ``buf[start:end]``."""

    entries: list[UsageEntry]
    snapshots: list[LimitSnapshot]
    #: file offset just after the last complete line consumed (the next call starts here)
    end: int
    state: State
    warnings: Counter[str] = field(default_factory=Counter)


ParseFn = Callable[..., Parsed]


@dataclass(frozen=True, slots=True)
class ReaderSpec:
    """A reader and how the index must feed it."""

    name: str
    parse: ParseFn
    #: True: the file is a whole document rewritten in place — re-read it from 0 on any change
    whole_file: bool = False


def complete_end(buf: Buffer, start: int, end: int) -> int:
    """Index just after the last ``\\n`` in ``buf[start:end]`` (``start`` when there is none)."""
    return buf.rfind(b"\n", start, end) + 1 or start


def lines_with(buf: Buffer, marker: bytes | re.Pattern[bytes], start: int,
               end: int) -> Iterator[tuple[int, int]]:
    """``(line_start, line_end)`` of each line in ``buf[start:end]`` that contains ``marker``.

    ``buf[start:end]`` must be whole lines (``end`` just after a newline). ``line_end`` is the
    index of the line's newline.
    """
    pos = start
    while pos < end:
        if isinstance(marker, bytes):
            hit = buf.find(marker, pos, end)
        else:
            match = marker.search(buf, pos, end)
            hit = -1 if match is None else match.start()
        if hit < 0:
            return
        line_start = buf.rfind(b"\n", pos, hit) + 1 or pos
        line_end = buf.find(b"\n", hit, end)
        if line_end < 0:
            return
        yield line_start, line_end
        pos = line_end + 1


def load_line(buf: Buffer, line_start: int, line_end: int,
              warnings: Counter[str]) -> dict[str, Any] | None:
    """The JSON object on one line, or None (counted) when it is too long, corrupt or not one."""
    if line_end - line_start > MAX_LINE_BYTES:
        warnings[TOO_LONG] += 1
        return None
    return load_json(buf[line_start:line_end], warnings)


def load_json(data: bytes, warnings: Counter[str]) -> dict[str, Any] | None:
    """``orjson.loads`` that counts a failure (``not_utf8`` or ``corrupt_line``) instead of raising."""
    try:
        obj = jsonvalue.loads(data, fast=True)
    except ValueError:
        # orjson rejects invalid UTF-8 with the same error: tell the two apart only on failure
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            warnings[NOT_UTF8] += 1
            return None
        warnings[CORRUPT] += 1
        return None
    if not isinstance(obj, dict):
        warnings[CORRUPT] += 1
        return None
    return obj


def iso_ms(value: object) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp (naive ones are UTC), else None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def count(value: object) -> int:
    """A token count from JSON; a missing (or null) one is 0.

    Raises:
        BadNumber: not a number, negative, or more than :data:`MAX_COUNT` (damage, not usage —
            and beyond SQLite's integers); readers skip the entry and count ``bad_number``.
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < MAX_COUNT:
        raise BadNumber(value)
    return int(value)


class BadNumber(ValueError):
    """A token count no model call can have."""


class EntrySink:
    """Collects entries, merging those with the same dedupe key.

    Copies of one model call in the same file keep the first copy's time and place and the
    largest of each count: Claude Code writes one line per content block, and older releases
    wrote growing ``output_tokens`` on the later ones (Gemini rewrites a record the same way).
    """

    def __init__(self) -> None:
        self.entries: list[UsageEntry] = []
        self._index: dict[str, int] = {}

    def add(self, entry: UsageEntry) -> None:
        key = entry.dedupe_key
        if key is None:
            self.entries.append(entry)
            return
        at = self._index.get(key)
        if at is None:
            self._index[key] = len(self.entries)
            self.entries.append(entry)
        else:
            self.entries[at] = merge_copies(self.entries[at], entry)


def merge_copies(first: UsageEntry, later: UsageEntry) -> UsageEntry:
    """``first`` with each count the larger of the two copies' (see :class:`EntrySink`)."""
    a, b = first.tokens, later.tokens
    tokens = Tokens(max(a.input, b.input), max(a.output, b.output), max(a.cache_read, b.cache_read),
                    max(a.cache_write, b.cache_write), max(a.reasoning, b.reasoning))
    costs = [c for c in (first.cost_usd, later.cost_usd) if c is not None]
    return replace(first, tokens=tokens, cost_usd=max(costs) if costs else None,
                   model=first.model or later.model)


def reader_for(runtime: str, path: str) -> ReaderSpec | None:
    """The reader for a file of ``runtime`` (None: not a transcript this runtime writes)."""
    if path.endswith(".jsonl"):
        return _specs()[runtime] if runtime in RUNTIMES else None
    if runtime == "gemini" and path.endswith(".json"):
        return reader_named("gemini_json")
    return None


def reader_named(name: str) -> ReaderSpec:
    """The reader called ``name`` (worker processes are sent names, not functions).

    Raises:
        KeyError: no reader has that name.
    """
    return _specs()[name]


@cache
def _specs() -> dict[str, ReaderSpec]:
    # imported here: the reader modules import this package's helpers
    from relay.wallet.transcripts import claude, codex, gemini, pi

    return {"claude": ReaderSpec("claude", claude.parse), "codex": ReaderSpec("codex", codex.parse),
            "gemini": ReaderSpec("gemini", gemini.parse), "pi": ReaderSpec("pi", pi.parse),
            "gemini_json": ReaderSpec("gemini_json", gemini.parse_document, whole_file=True)}
