"""The stdio transport: the SDK's, behind a reader that answers every line that is no message.

The SDK's own reader drops a line it cannot read (the client would wait for a reply
forever) and reads a line of any length into memory. Here each line of stdin is read, at
most :data:`MAX_LINE_BYTES` of it, and checked before the SDK sees it (JSON-RPC 2.0, one
message per line as MCP's stdio transport has it):

* not UTF-8, not JSON (``NaN`` included), nested deeper or a number longer than the
  parser reads → ``-32700`` parse error, id null;
* JSON that is no JSON-RPC 2.0 message (no or another ``"jsonrpc"``, a method that is not
  a string, an id that is neither a string nor a number, not an object at all) or a line
  over the bound → ``-32600`` invalid request, with the request's id when it has a usable
  one, else null. A batch (an array) is one too: MCP has had no batches since 2025-06-18;
* a blank line is skipped; a message goes on to the SDK unchanged (a notification never
  gets a reply, an unknown method the SDK's ``-32601``).

Stdin is served from a private duplicate while fd 0 points at the null device (as the SDK
does for both streams), so an agent or command the server starts never reads the protocol.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import IO, Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

__all__ = ["INVALID_REQUEST", "MAX_LINE_BYTES", "PARSE_ERROR", "Reject", "check_line", "stdio_transport"]

#: the longest line read as a message; the rest of a longer one is skipped, unread
MAX_LINE_BYTES = 8 * 1024 * 1024
#: what JSON counts as whitespace (str.strip would take any Unicode space for blank)
JSON_WHITESPACE = " \t\r\n"
#: the longest integer read (Python's own limit for turning digits into a number)
MAX_DIGITS = 4300

Send = Callable[[SessionMessage], Awaitable[None]]


@dataclass(frozen=True)
class Reject:
    """The error a line gets instead of being handed on."""

    code: int
    message: str
    request_id: str | int | None = None

    def frame(self) -> SessionMessage:
        return SessionMessage(
            JSONRPCError(
                jsonrpc="2.0", id=self.request_id, error=ErrorData(code=self.code, message=self.message)
            )
        )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number of more than {MAX_DIGITS} digits")
    return int(digits)


def _request_id(value: object) -> str | int | None:
    """The id to answer with: the message's own when it is one JSON-RPC allows, else null."""
    if isinstance(value, dict):
        request_id = value.get("id")
        if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
            return request_id
    return None


def _id_allowed(value: object) -> bool:
    """No id, a string or number one, or null on an error reply (MCP allows no other)."""
    if not isinstance(value, dict) or "id" not in value:
        return True
    return _request_id(value) is not None or (value["id"] is None and "error" in value)


def check_line(raw: bytes) -> str | Reject | None:
    """A line of stdin: the message to hand on, the error to answer it with, or None (blank)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Reject(PARSE_ERROR, "Parse error: the line is not UTF-8 text.")
    if not text.strip(JSON_WHITESPACE):
        return None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int)
    except RecursionError:
        return Reject(PARSE_ERROR, "Parse error: the JSON is nested too deeply.")
    except ValueError as exc:  # JSONDecodeError, NaN, a 5,000-digit number
        return Reject(PARSE_ERROR, f"Parse error: {exc}.")
    if isinstance(value, list):
        return Reject(
            INVALID_REQUEST, "Invalid Request: batches are not part of MCP; send one message per line."
        )
    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
        if not _id_allowed(value):  # the SDK would take it for a notification and stay silent
            raise ValueError("an id that is neither a string nor a number")
    except (ValidationError, ValueError, RecursionError):
        return Reject(
            INVALID_REQUEST,
            "Invalid Request: not a JSON-RPC 2.0 message (it needs "
            '"jsonrpc": "2.0", a string method, and a string or '
            "number id unless it is a notification).",
            _request_id(value),
        )
    return text


def _read_line(stream: IO[bytes]) -> tuple[bytes | None, bool]:
    """The next line (None at the end) and whether it was longer than the bound: the rest of
    a longer line is read and dropped, a bound at a time, never kept."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if not line:
        return None, False
    if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
        return line, False
    while True:
        rest = stream.readline(MAX_LINE_BYTES)
        if not rest or rest.endswith(b"\n"):
            return b"", True


class CheckedLines:
    """The lines the SDK's reader iterates: only messages; every other line answered here."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._send: Send | None = None
        self._ready = anyio.Event()

    def answer_with(self, send: Send) -> None:
        """Where the error replies go (the SDK's write stream, once it exists)."""
        self._send = send
        self._ready.set()

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:  # reading and checking a line (up to 8 MiB of JSON) never blocks the loop
            checked = await anyio.to_thread.run_sync(_next_line, self._stream, abandon_on_cancel=True)
            if checked is _END:
                raise StopAsyncIteration
            if isinstance(checked, str):
                return checked
            if isinstance(checked, Reject):
                await self._ready.wait()
                assert self._send is not None
                await self._send(checked.frame())


_END = object()


def _next_line(stream: IO[bytes]) -> str | Reject | object | None:
    """The next line of ``stream`` checked (:func:`check_line`), or ``_END``."""
    line, too_long = _read_line(stream)
    if line is None:
        return _END
    if too_long:
        return Reject(INVALID_REQUEST, f"Invalid Request: the line is longer than {MAX_LINE_BYTES} bytes.")
    return check_line(line)


def _claim_stdin() -> tuple[IO[bytes], Callable[[], None]]:
    """Stdin's bytes from a private duplicate, fd 0 on the null device; and how to undo it."""
    try:
        if sys.stdin is None or sys.stdin.fileno() != 0:
            raise OSError("stdin is not fd 0")
        private = os.dup(0)
    except (OSError, ValueError, AttributeError):  # no fd 0 to divert: read it in place
        return sys.stdin.buffer, lambda: None
    diverted = False
    with suppress(OSError):
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        diverted = True

    def restore() -> None:
        if diverted:
            with suppress(OSError):
                os.dup2(private, 0)

    # never closed: a worker thread may still block reading it after the server stops
    return os.fdopen(private, "rb", closefd=False), restore


@asynccontextmanager
async def stdio_transport() -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` for the SDK's server, over checked stdin and stdout."""
    stream, restore = _claim_stdin()
    lines = CheckedLines(stream)
    try:
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.answer_with(write_stream.send)
            yield read_stream, write_stream
    finally:
        restore()
