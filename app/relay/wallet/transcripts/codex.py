"""Codex rollouts: ``<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-*.jsonl`` (``exec resume`` appends).

**One usage source, per-response deltas.** A rollout has three overlapping records of the same
tokens: ``token_usage_record`` (0.171+: ``usage`` per response, plus turn and thread totals) and
``event_msg`` ``token_count`` (every version: ``info.total_token_usage``, cumulative over the
thread, and ``info.last_token_usage``, the last response). This reader uses **only
``token_count``**, because every Codex version writes it and it also carries the official
``rate_limits``: an entry is the rise of ``total_token_usage`` since the file's previous
``token_count``. A ``token_count`` that repeats the same total (Codex re-emits one when only the
rate limits changed) adds nothing. ``last_token_usage`` is used only where there is no earlier
total in the file (its first one, which may continue a resumed thread) or the total went
backwards. The state carries the last total between refreshes.

**Tokens.** Codex's ``input_tokens`` includes the cached part (``cached_input_tokens``) and, we
assume, ``cache_write_input_tokens``; ``output_tokens`` includes reasoning. So, like
@ccusage/codex: ``Tokens.input`` = input − cached − cache write, ``cache_read`` = cached,
``reasoning`` = reasoning_output_tokens (inside ``output``) — ``Tokens.total`` equals Codex's
``total_tokens``. The model is the latest ``turn_context.model``; session and project come
from ``session_meta``.

**Limits.** ``rate_limits.primary``/``secondary`` (``used_percent``, ``window_minutes``,
``resets_at`` epoch seconds) become :class:`LimitSnapshot` readings: 300 minutes is
``five_hour``, 10080 ``seven_day``, anything else ``other``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from relay.core.jsonvalue import as_text
from relay.wallet.model import LimitSnapshot, Tokens, UsageEntry, WindowKind
from relay.wallet.transcripts import (
    BAD_NUMBER,
    BAD_TIME,
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

_MARKER = re.compile(rb'"(?:session_meta|turn_context|token_count)"')
_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens",
           "reasoning_output_tokens")
_WINDOWS: dict[int, WindowKind] = {300: "five_hour", 10080: "seven_day"}
ORIGIN = "codex token_count"

Usage = tuple[int, ...]


def parse(buf: Buffer, state: State, start: int = 0, end: int | None = None,
          base: int = 0) -> Parsed:
    """Usage deltas and limit readings of the complete lines in ``buf[start:end]``."""
    stop = complete_end(buf, start, len(buf) if end is None else end)
    state = dict(state)
    out = Parsed([], [], base + stop, state, Counter())
    sink = EntrySink()
    for line_start, line_end in lines_with(buf, _MARKER, start, stop):
        obj = load_line(buf, line_start, line_end, out.warnings)
        payload = obj.get("payload") if obj is not None else None
        if obj is None or not isinstance(payload, dict):
            continue
        kind = obj.get("type")
        if kind == "session_meta":
            state["session"] = as_text(payload.get("id")) or state.get("session")
            state["cwd"] = as_text(payload.get("cwd")) or state.get("cwd")
        elif kind == "turn_context":
            state["model"] = as_text(payload.get("model")) or state.get("model")
            state["cwd"] = as_text(payload.get("cwd")) or state.get("cwd")
        elif kind == "event_msg" and payload.get("type") == "token_count":
            _token_count(obj, payload, base + line_start, state, out, sink)
    out.entries = sink.entries
    return out


def _token_count(obj: dict[str, Any], payload: dict[str, Any], offset: int, state: State,
                 out: Parsed, sink: EntrySink) -> None:
    ts_ms = iso_ms(obj.get("timestamp"))
    if ts_ms is None:
        out.warnings[BAD_TIME] += 1
        return
    info = payload.get("info")
    if isinstance(info, dict):
        try:
            delta, key_usage = _delta(info, state)
        except BadNumber:
            out.warnings[BAD_NUMBER] += 1
            delta = key_usage = None
        if delta is not None and any(delta):
            key = f"codex:{obj.get('timestamp')}:" + ":".join(map(str, key_usage or delta))
            sink.add(_entry(delta, ts_ms, offset, key, state))
    limits = payload.get("rate_limits")
    if isinstance(limits, dict):
        out.snapshots.extend(_snapshots(limits, ts_ms))


def _usage(value: object) -> Usage | None:
    if not isinstance(value, dict):
        return None
    return tuple(count(value.get(name)) for name in _FIELDS)


def _delta(info: dict[str, Any], state: State) -> tuple[Usage | None, Usage | None]:
    """(this response's usage, the cumulative figures that identify it) — see the docstring."""
    total, last = _usage(info.get("total_token_usage")), _usage(info.get("last_token_usage"))
    if total is None:
        return last, last
    previous = state.get("total")
    state["total"] = list(total)
    if (not isinstance(previous, list) or len(previous) != len(total)
            or any(t < p for t, p in zip(total, previous, strict=True))):
        return (total if last is None else last), total
    return tuple(t - p for t, p in zip(total, previous, strict=True)), total


def _entry(delta: Usage, ts_ms: int, offset: int, key: str, state: State) -> UsageEntry:
    inp, cached, cache_write, output, reasoning = delta
    return UsageEntry(
        ts_ms=ts_ms,
        model=state.get("model"),
        tokens=Tokens(input=max(inp - cached - cache_write, 0), output=output,
                      cache_read=cached,
                      cache_write=cache_write, reasoning=reasoning),
        dedupe_key=key,
        session_id=state.get("session"),
        project=state.get("cwd"),
        offset=offset,
    )


def _snapshots(limits: dict[str, Any], observed_ms: int) -> list[LimitSnapshot]:
    limit_id = limits.get("limit_id")
    found = []
    for name in ("primary", "secondary"):
        window = limits.get(name)
        if not isinstance(window, dict):
            continue
        minutes = window.get("window_minutes")
        minutes = int(minutes) if isinstance(minutes, int | float) else None
        kind: WindowKind = _WINDOWS.get(minutes or 0, "other")
        if limit_id not in (None, "codex"):
            kind = "other"   # a second, model-specific limit must not pose as the account's
        used = window.get("used_percent")
        found.append(LimitSnapshot(
            entry="", window=kind, observed_ms=observed_ms,
            used_percent=float(used) if isinstance(used, int | float) else None,
            resets_at_ms=_resets_at_ms(window, observed_ms), window_minutes=minutes,
            origin=ORIGIN))
    return found


def _resets_at_ms(window: dict[str, Any], observed_ms: int) -> int | None:
    resets_at = window.get("resets_at")
    if isinstance(resets_at, int | float):
        return int(resets_at * 1000)
    # older releases gave only a countdown
    seconds = window.get("resets_in_seconds")
    return observed_ms + int(seconds * 1000) if isinstance(seconds, int | float) else None
