"""The fake claude's ``--input-format stream-json``: one recorded turn per stdin user line,
slow turns, the interrupt control request answered like Claude Code 2.1.197
(docs/claude-talk.md). Used by ``tests/fakes/bin/claude`` (see its docstring)."""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import Any


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class StreamInput:
    """``--input-format stream-json``: one recorded turn per stdin user line (see the
    module docstring)."""

    def __init__(self) -> None:
        self.play: Any = None
        self.buffer = b""
        self.eof = False
        self.turn = 0
        self.working = False
        self.queued: list[dict[str, Any]] = []
        delays = os.environ.get("RELAY_FAKE_CLAUDE_TURN_DELAY", "0")
        self.delays = [float(d) for d in delays.split(",") if d.strip()] or [0.0]

    def message(self, timeout: float | None) -> dict[str, Any] | None:
        """The next stdin line as JSON (None: EOF, or nothing within ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer and not self.eof:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if left == 0.0 or not select.select([0], [], [], left)[0]:
                return None
            chunk = os.read(0, 65536)
            self.eof = not chunk
            self.buffer += chunk
        if b"\n" not in self.buffer:
            self.buffer, rest = b"", self.buffer
            if not rest.strip():
                return None
        else:
            rest, _, self.buffer = self.buffer.partition(b"\n")
        if not rest.strip():
            return self.message(timeout)
        obj: dict[str, Any] = json.loads(rest)
        log = os.environ.get("RELAY_FAKE_STDIN_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"line": obj, "turn": self.turn,
                                     "during_turn": self.working}) + "\n")
        return obj

    def first_prompt(self) -> str | None:
        """Read (and keep for the first turn) the first user message, for the log."""
        obj = self.message(None)
        if obj is None:
            return None
        self.queued.append(obj)
        content = (obj.get("message") or {}).get("content")
        return content if isinstance(content, str) else json.dumps(content)

    def replay(self, play: Any, lines: list[str], escaped: dict[str, str]) -> None:
        self.play = play
        turns = split_turns(lines)
        while True:
            obj = self.queued.pop(0) if self.queued else self.message(None)
            if obj is None:
                return  # EOF: exit like the CLI
            if obj.get("type") == "control_request":
                self.control(obj, None)
                continue
            body, result = turns[min(self.turn, len(turns) - 1)]
            delay = self.delays[min(self.turn, len(self.delays) - 1)]
            self.turn += 1
            self.working = True
            for line in body:
                self.play(line)
            if result is None:
                return  # the recorded run ended without a result (an error, a signal)
            filled = result
            for placeholder, value in escaped.items():
                filled = filled.replace(placeholder, value)
            if not self.hold(delay, filled):
                self.play(result)
            self.working = False

    def hold(self, delay: float, result: str) -> bool:
        """Wait ``delay`` s before the result, taking stdin; True if interrupted."""
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0 and not self.eof:
            obj = self.message(left)
            if obj is None:
                continue
            if obj.get("type") == "control_request":
                if self.control(obj, result):
                    return True
            else:
                self.queued.append(obj)
        return False

    def control(self, obj: dict[str, Any], result: str | None) -> bool:
        request = obj.get("request") or {}
        _emit({"type": "control_response", "response": {
            "subtype": "success", "request_id": obj.get("request_id")}})
        if request.get("subtype") != "interrupt" or result is None:
            return False
        session = json.loads(result).get("session_id")
        _emit({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user]"}]},
            "parent_tool_use_id": None, "session_id": session})
        _emit({
            "type": "result", "subtype": "error_during_execution", "duration_ms": 1,
            "duration_api_ms": 0, "is_error": True, "num_turns": 1, "stop_reason": None,
            "session_id": session, "total_cost_usd": 0, "usage": {
                "input_tokens": 0, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": 0},
            "modelUsage": {}, "permission_denials": [], "terminal_reason": "aborted_streaming",
            "errors": ["[ede_diagnostic] result_type=user last_content_type=n/a "
                       "stop_reason=null"]})
        return True


def split_turns(lines: list[str]) -> list[tuple[list[str], str | None]]:
    """The capture's turns: the lines before each ``result``, and that result."""
    turns: list[tuple[list[str], str | None]] = []
    body: list[str] = []
    for line in lines:
        try:
            kind = json.loads(line).get("type")
        except (ValueError, AttributeError):
            kind = None
        if kind == "result":
            turns.append((body, line))
            body = []
        else:
            body.append(line)
    if body or not turns:
        turns.append((body, None))
    return turns
