"""What the four CLI stores (Claude, Codex, Gemini, Pi) share.

* :class:`TranscriptRead` — a :class:`~relay.detect.stores.base.StoreRead` plus what every CLI
  transcript records and ``StoreRead`` has no field for: the first real prompt and the branch.
* :func:`head_and_tail` — a summary read's lines: the head up to the first prompt, then the
  tail (the table's state and last words), not the megabytes between.
* :func:`records` — the JSON objects of a JSONL file. Corrupt or truncated lines, lines over the
  limit (never held in memory) and non-UTF-8 lines are counted into ``problems``; an unreadable
  file is a problem too. Never raises.
* :func:`failure_events` — one failure text (plus status / machine-readable fields) through
  :mod:`relay.core.signals`: a blocking :class:`~relay.core.events.LimitHit` for a usage
  limit, quota or rate limit (with the reset time anchored at the moment the failure was
  written), then the fatal :class:`~relay.core.events.AgentError`.
* clipping: a transcript may hold megabytes of tool output; events keep only a bounded part.

Events the stores build carry ``replay=True`` (re-read from disk: never published) and the time
of the record they come from.
"""

from __future__ import annotations

import errno
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, BinaryIO

from relay.core import signals
from relay.core.events import AgentEvent
from relay.core.fsutil import is_regular, open_regular
from relay.core.signals import classify
from relay.detect.stores.base import StoreItem, StoreListing, StoreRead, iter_lines, tail_start
from relay.wallet.transcripts import CORRUPT, NOT_UTF8, load_json

#: lines longer than this are skipped and counted (a huge tool result never blows memory)
LINE_LIMIT = 64 * 1024 * 1024
#: characters of a tool result, a tool argument, an assistant text or a prompt kept in events
MAX_OUTPUT = 4000
MAX_ARGUMENT = 4000
MAX_TEXT = 20_000
MAX_PROMPT = 8000
#: a summary read (the table's) reads at most this much of a transcript's head for its
#: first prompt and cwd, and this much of its tail for its state and last words
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 32 * 1024


@dataclass(slots=True)
class TranscriptRead(StoreRead):
    """A session read from a CLI transcript."""

    #: the first prompt the user typed (not the CLI's own context messages), clipped
    initial_prompt: str = ""
    #: the git branch the CLI recorded (Claude: every line; Codex: session_meta)
    git_branch: str | None = None


# --- reading lines ---------------------------------------------------------------------------

def records(path: Path, problems: list[str], limit: int = LINE_LIMIT,
            at: int = 0) -> Iterator[dict[str, Any]]:
    """Each JSON object of the JSONL file ``path`` (from the line starting at ``at``); what
    could not be read goes to ``problems``.

    A partial last line (being written, or cut off) is not yielded and is reported.
    """
    return (obj for _, obj in records_at(path, problems, limit, at))


def records_at(path: Path, problems: list[str], limit: int = LINE_LIMIT,
               at: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`records` with where each object's line ends (the next line's offset). The
    lines counted so far are reported even when the caller stops early."""
    counts: Counter[str] = Counter()
    try:
        with open_regular(path) as peek:
            for offset, line in iter_lines(path, limit, at):
                if not line:
                    if not _blank_at(peek, offset):
                        counts["too_long"] += 1
                    continue
                obj = load_json(line, counts)
                if obj is not None:
                    yield offset + len(line) + 1, obj
            if _partial_tail(peek):
                counts["partial"] += 1
    except OSError as exc:
        problems.append(f"cannot read {path.name}: {exc.strerror or exc}")
    finally:
        problems.extend(describe(counts, limit))


def head_and_tail(item: StoreItem, problems: list[str], limit: int,
                  line: Callable[[dict[str, Any]], None], known: Callable[[], bool],
                  gap: Callable[[], None]) -> bool:
    """Feed ``line`` the head of a JSONL transcript — until ``known()`` says what the
    table needs from it is read (the first prompt, the cwd) or :data:`HEAD_BYTES` — then
    its last :data:`TAIL_BYTES` (at least its last complete line, however long), calling
    ``gap()`` between them when lines were skipped. True when nothing was (the whole
    file was read)."""
    end = 0
    for end, obj in records_at(item.path, problems, limit):
        line(obj)
        if end >= HEAD_BYTES or known():
            break
    try:
        with open_regular(item.path) as handle:
            start = tail_start(handle, handle.seek(0, os.SEEK_END), TAIL_BYTES, end, limit)
    except OSError as exc:
        problems.append(f"cannot read {item.path.name}: {exc.strerror or exc}")
        return True
    if start > end:
        gap()
    for obj in records(item.path, problems, limit, start):
        line(obj)
    return start == end


def describe(counts: Counter[str], limit: int = LINE_LIMIT) -> list[str]:
    """Problem sentences for the counted lines."""
    out = []
    if counts[CORRUPT]:
        out.append(_plural(counts[CORRUPT], "unreadable line") + " (corrupt or truncated)")
    if counts[NOT_UTF8]:
        out.append(_plural(counts[NOT_UTF8], "line") + " not UTF-8")
    if counts["too_long"]:
        out.append(_plural(counts["too_long"], "line") + f" over {_size(limit)} skipped")
    if counts["partial"]:
        out.append("the last line is incomplete (still being written, or cut off)")
    return out


def _blank_at(handle: BinaryIO, offset: int) -> bool:
    """iter_lines gives ``b""`` for an empty line and for one over the limit: tell them apart."""
    handle.seek(offset)
    head = handle.read(2)
    return head[:1] == b"\n" or head == b"\r\n"


def _partial_tail(handle: BinaryIO) -> bool:
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return False
    handle.seek(size - 1)
    return handle.read(1) != b"\n"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


# --- listing ---------------------------------------------------------------------------------

def scan(folder: Path, listing: StoreListing) -> list[os.DirEntry[str]]:
    """The entries of ``folder``; a missing one is empty, an unreadable one a problem."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except FileNotFoundError:
        return []
    except OSError as exc:
        listing.problems.append(f"cannot list {folder}: {exc.strerror or exc}")
        return []


def is_dir(entry: os.DirEntry[str]) -> bool:
    """A real folder (symlinks are not followed: no loops)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def add_item(listing: StoreListing, runtime: str, session_id: str, entry: str,
             path: Path) -> None:
    """Append the session file ``path`` to the listing (a file that vanished is skipped)."""
    try:
        info = path.stat()
        if not is_regular(info):  # a FIFO or a device never ends: not a session
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)")
    except FileNotFoundError:
        return
    except OSError as exc:
        listing.problems.append(f"cannot read {path}: {exc.strerror or exc}")
        return
    listing.items.append(StoreItem(runtime=runtime, agent_session_id=session_id, entry=entry,
                                   path=path, size=info.st_size, mtime_ns=info.st_mtime_ns))


def head(path: Path, size: int = 64 * 1024) -> bytes:
    """The first ``size`` bytes of a file (b"" when it cannot be read)."""
    try:
        with open_regular(path) as handle:
            return handle.read(size)
    except OSError:
        return b""


# --- events ----------------------------------------------------------------------------------

def failure_events(runtime: str, message: str, *, at: datetime, http_status: int | None = None,
                   structured: Mapping[str, Any] | None = None,
                   tz: tzinfo | None = None) -> list[AgentEvent]:
    """A failed turn: LimitHit (when it is a limit) then the fatal AgentError.

    ``at`` is when the failure was written: a reset worded as a clock time ("resets 12:05pm")
    is the next such time after it, not after now.
    """
    signal = classify(message, http_status=http_status, structured=structured,
                      provider=runtime, now=at, tz=tz)
    return signals.failure_events(signal, message, runtime=runtime, ts=at, replay=True)


def restamp(events: list[AgentEvent], at: datetime) -> list[AgentEvent]:
    """Events a stream parser built, with the record's time and ``replay=True``."""
    return [event.model_copy(update={"ts": at, "replay": True}) for event in events]


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_value(value: Any, limit: int = MAX_ARGUMENT, depth: int = 0) -> Any:
    """A tool call's arguments with every long string clipped (a Write's content, a patch)."""
    if isinstance(value, str):
        return clip(value, limit)
    if depth > 8:
        return None
    if isinstance(value, dict):
        return {str(k): clip_value(v, limit, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [clip_value(v, limit, depth + 1) for v in value[:200]]
    return value


def add_unique(items: list[str], value: str | None) -> None:
    """Append ``value`` unless empty or already there (keeps first-seen order)."""
    if value and value not in items:
        items.append(value)


def at_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def mtime_of(item: StoreItem) -> datetime:
    return datetime.fromtimestamp(item.mtime_ns / 1e9, UTC)


_SKILL_LINE = re.compile(r"^- ([A-Za-z0-9][\w.:-]*): ", re.MULTILINE)


def skill_names(listing: str) -> list[str]:
    """Skill names of a "- name: description" listing (Claude's skill_listing, Codex's skills)."""
    return list(dict.fromkeys(_SKILL_LINE.findall(listing)))
