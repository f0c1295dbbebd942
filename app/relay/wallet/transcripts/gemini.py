"""Gemini CLI chat files: ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` (and older ``*.json``).

**JSONL (0.61).** Line 1 is a header with ``sessionId`` (repeated on each resume); then message
records and ``{"$set": ...}`` patches. Usage is the ``tokens`` of each ``type:"gemini"`` record.
A record is written twice with the same ``id`` (the second adds ``toolCalls``): de-duplicated by
``id``, keeping the largest counts. ``{"$set":{"messages":[...]}}`` replaces the history (resume,
or a rolled-back failed prompt); its copies of earlier records carry no ``tokens`` and count
nothing — tokens a rolled-back call consumed stay counted, since they were spent.

**Whole documents (older releases).** ``session-*.json`` is one JSON object
(``sessionId``, ``messages``) that the CLI **rewrites in place** on every update, so nothing can
be read incrementally: :func:`parse_document` reads the whole file, its reader spec is marked
``whole_file``, and the index re-reads the file from offset 0 whenever its size or mtime
changed, replacing all of that file's entries. Entries of a document all point at offset 0.

**Tokens.** ``input`` is the prompt *including* ``cached`` (the stored ``total`` is input +
output + thoughts + tool), so ``Tokens.input`` = input − cached + tool, ``cache_read`` = cached,
``output`` = output + thoughts (billed as output), ``reasoning`` = thoughts; ``Tokens.total``
equals the stored ``total``. When ``total`` shows the input excluded the cache, nothing is
subtracted. The project is the state's ``project`` hint (the index resolves
``~/.gemini/projects.json``); the session id comes from the header.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from relay.core.jsonvalue import as_text
from relay.wallet.model import Tokens, UsageEntry
from relay.wallet.transcripts import (
    BAD_NUMBER,
    BAD_TIME,
    CORRUPT,
    MAX_LINE_BYTES,
    TOO_LONG,
    BadNumber,
    Buffer,
    EntrySink,
    Parsed,
    State,
    complete_end,
    count,
    iso_ms,
    lines_with,
    load_json,
    load_line,
)

_MARKER = re.compile(rb'"(?:tokens|sessionId)"')


def parse(buf: Buffer, state: State, start: int = 0, end: int | None = None,
          base: int = 0) -> Parsed:
    """Usage entries of the complete JSONL lines in ``buf[start:end]``."""
    stop = complete_end(buf, start, len(buf) if end is None else end)
    state = dict(state)
    warnings: Counter[str] = Counter()
    sink = EntrySink()
    for line_start, line_end in lines_with(buf, _MARKER, start, stop):
        obj = load_line(buf, line_start, line_end, warnings)
        if obj is None:
            continue
        patch = obj.get("$set")
        if isinstance(patch, dict):
            obj = patch
        state["session"] = as_text(obj.get("sessionId")) or state.get("session")
        records = obj.get("messages") if isinstance(patch, dict) else [obj]
        for record in records if isinstance(records, list) else []:
            _add(record, base + line_start, state, sink, warnings)
    return Parsed(sink.entries, [], base + stop, state, warnings)


def parse_document(buf: Buffer, state: State, start: int = 0, end: int | None = None,
                   base: int = 0) -> Parsed:
    """Usage entries of a whole-document chat file (``buf[start:end]`` is the whole file).

    A document that does not parse (caught mid-rewrite) consumes nothing, so the next refresh
    reads it again.
    """
    stop = len(buf) if end is None else end
    warnings: Counter[str] = Counter()
    if stop - start > MAX_LINE_BYTES:
        warnings[TOO_LONG] += 1
        return Parsed([], [], base + start, state, warnings)
    doc = load_json(bytes(buf[start:stop]), warnings) if stop > start else None
    if doc is None:
        return Parsed([], [], base + start, state, warnings)
    state = dict(state)
    state["session"] = as_text(doc.get("sessionId")) or state.get("session")
    sink = EntrySink()
    messages = doc.get("messages")
    if not isinstance(messages, list):
        warnings[CORRUPT] += 1
        messages = []
    for record in messages:
        _add(record, base + start, state, sink, warnings)
    return Parsed(sink.entries, [], base + stop, state, warnings)


def _add(record: object, offset: int, state: State, sink: EntrySink,
         warnings: Counter[str]) -> None:
    if not isinstance(record, dict) or record.get("type") != "gemini":
        return
    tokens = record.get("tokens")
    if not isinstance(tokens, dict):
        return   # a history copy or a record not yet finished: no usage of its own
    ts_ms = iso_ms(record.get("timestamp"))
    if ts_ms is None:
        warnings[BAD_TIME] += 1
        return
    try:
        counted = _tokens(tokens)
    except BadNumber:
        warnings[BAD_NUMBER] += 1
        return
    if counted.total == 0:
        return
    record_id = as_text(record.get("id"))
    sink.add(UsageEntry(
        ts_ms=ts_ms, model=as_text(record.get("model")), tokens=counted,
        dedupe_key=f"gemini:{record_id}" if record_id else None,
        session_id=state.get("session"), project=state.get("project"), offset=offset))


def _tokens(tokens: dict[str, Any]) -> Tokens:
    prompt, cached = count(tokens.get("input")), count(tokens.get("cached"))
    output, thoughts, tool = count(tokens.get("output")), count(tokens.get("thoughts")), count(
        tokens.get("tool"))
    total = tokens.get("total")
    cache_excluded = total == prompt + output + thoughts + tool + cached and cached > 0
    fresh = prompt if cache_excluded else max(prompt - cached, 0)
    return Tokens(input=fresh + tool, output=output + thoughts, cache_read=cached,
                  reasoning=thoughts)
