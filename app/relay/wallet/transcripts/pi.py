"""Pi session files: ``<agent dir>/sessions/--<cwd>--/<time>_<session>.jsonl`` (appended).

The agent dir is ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``. Line 1 (repeated on resume) is
``{"type":"session","id":...,"cwd":...}``; usage is on each ``type:"message"`` line whose
``message.role`` is ``assistant``: ``usage.{input,output,cacheRead,cacheWrite}`` with ``input``
already excluding the cache, and ``usage.cost.total`` — the cost Pi computed from its own
price table, kept as ``cost_usd``. Failed attempts are written as assistant messages with zero
usage: skipped. De-duplicated by the API's ``responseId`` (a forked session copies it), else by
session + entry id.
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
    MISSING,
    BadNumber,
    Buffer,
    EntrySink,
    Parsed,
    State,
    complete_end,
    count,
    iso_ms,
    lines_with,
    load_line,
)

_MARKER = re.compile(rb'"(?:usage|session)"')


def parse(buf: Buffer, state: State, start: int = 0, end: int | None = None,
          base: int = 0) -> Parsed:
    """Usage entries of the complete lines in ``buf[start:end]``."""
    stop = complete_end(buf, start, len(buf) if end is None else end)
    state = dict(state)
    warnings: Counter[str] = Counter()
    sink = EntrySink()
    for line_start, line_end in lines_with(buf, _MARKER, start, stop):
        obj = load_line(buf, line_start, line_end, warnings)
        if obj is None:
            continue
        kind = obj.get("type")
        if kind == "session":
            state["session"] = as_text(obj.get("id")) or state.get("session")
            state["cwd"] = as_text(obj.get("cwd")) or state.get("cwd")
        elif kind == "message":
            try:
                entry = _entry(obj, base + line_start, state, warnings)
            except BadNumber:
                warnings[BAD_NUMBER] += 1
                continue
            if entry is not None:
                sink.add(entry)
    return Parsed(sink.entries, [], base + stop, state, warnings)


def _entry(obj: dict[str, Any], offset: int, state: State,
           warnings: Counter[str]) -> UsageEntry | None:
    message = obj.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict):
        warnings[MISSING] += 1
        return None
    tokens = Tokens(input=count(usage.get("input")), output=count(usage.get("output")),
                    cache_read=count(usage.get("cacheRead")),
                    cache_write=count(usage.get("cacheWrite")))
    if tokens.total == 0:
        return None
    ts_ms = iso_ms(obj.get("timestamp"))
    if ts_ms is None:
        # the message's own epoch milliseconds
        epoch = message.get("timestamp")
        ts_ms = int(epoch) if isinstance(epoch, int | float) and not isinstance(epoch, bool) else None
    if ts_ms is None:
        warnings[BAD_TIME] += 1
        return None
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    response, entry_id = as_text(message.get("responseId")), as_text(obj.get("id"))
    key = (f"pi:{response}" if response
           else f"pi:{state.get('session')}:{entry_id}" if entry_id else None)
    return UsageEntry(
        ts_ms=ts_ms, model=as_text(message.get("model")), tokens=tokens,
        cost_usd=float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
        dedupe_key=key, session_id=state.get("session"), project=state.get("cwd"), offset=offset)
