"""Claude Code's permission prompt as a Relay question (a :class:`NeedsInput`).

In print mode Claude Code cannot ask anyone, so under ``--permission-mode default`` or
``acceptEdits`` a tool call that needs approval is denied. Given ``--permission-prompt-tool
mcp__relay_approval__approve`` and an ``--mcp-config`` naming that MCP server, it calls the
tool instead — ``{"tool_name", "input", "tool_use_id"}`` — and reads the text of the result
as JSON: ``{"behavior": "allow", "updatedInput": {...}}`` or ``{"behavior": "deny",
"message": "…"}`` (verified against the real 2.1.197: tests/integration/
test_claude_permission_real.py).

The MCP server is Relay's own ``relay-cli permission-bridge`` (:mod:`relay.cli.permission_cmd`),
which Claude starts over stdio. It knows nothing and decides nothing: it forwards each call
over a Unix socket to the :class:`PermissionBroker` of the adapter that started Claude, and
returns what comes back. The broker turns the call into a ``NeedsInput`` (merged into the
adapter's event stream by :func:`with_questions`) and answers it through ``answer_input``.

Decisions:

* The socket lives in a fresh ``mkdtemp`` folder (mode 0700), so no other user can connect;
  nothing secret crosses it (the tool's name and input, and the decision). Unix only: on
  Windows no bridge is started and Claude denies as before (``bridge_supported``).
* The server entry has ``"alwaysLoad": true``: by default print mode connects MCP servers
  in the background, and a tool call in the first second found the prompt tool missing
  (``MCP tool … not found``, the call denied).
* "Allow always" is remembered by the broker for this run only (one Claude process): the
  tool name, or for Bash the exact command. Later calls are allowed without asking.
* Stop or the end of the run: every open call is answered ``deny`` (Claude unwinds) and
  withdrawn with an :class:`InputWithdrawn` before the run's ``SessionEnded``.
* Claude prints nothing while it waits for the answer, so the process runs without the
  reader's inactivity timeout and :func:`with_questions` keeps it instead, counting only
  the time no question is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from relay.core import jsonvalue
from relay.core.errors import RelayError
from relay.core.events import (
    AgentError,
    AgentEvent,
    InputOption,
    InputWithdrawn,
    NeedsInput,
    Notice,
    SessionEnded,
)
from relay.core.guard import Guard
from relay.core.models import PermissionPolicy
from relay.runtimes.base import RunRequest
from relay.runtimes.guarded import as_question, check_call

SERVER_NAME = "relay_approval"
TOOL_NAME = "approve"
#: the name Claude knows the tool by (``--permission-prompt-tool``)
PROMPT_TOOL = f"mcp__{SERVER_NAME}__{TOOL_NAME}"

#: tools that only read (the ``read_only`` approval policy allows these by itself)
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch",
                        "TaskList", "TaskGet", "TaskOutput", "ListMcpResourcesTool",
                        "ReadMcpResourceTool"})
#: tools that change something; any other tool (an MCP server's…) is "unknown" (None)
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"})

ALLOW, ALLOW_ALWAYS, REJECT = "allow", "allow_always", "reject"
DENIED_BY_USER = "The user did not allow this tool call."
STOPPED = "Relay stopped the run before the user answered."
#: the longest call the socket reads (a Write's whole content travels in it)
MAX_MESSAGE = 64 * 1024 * 1024
SOCKET_PATH_MAX = 90


def bridge_supported() -> bool:
    """The bridge needs Unix domain sockets (not on Windows)."""
    return sys.platform != "win32"


def wants_bridge(request: RunRequest) -> bool:
    """Ask through the bridge when the session's approval policy can answer
    (``options["approvals"]`` ``ask`` or ``read_only``, which the runner passes on) and Claude
    would otherwise deny by itself: ``default`` and ``acceptEdits`` modes. Not under ``deny``
    (the same answer, without a bridge), not without a policy, never on Windows."""
    return (request.options.get("approvals") in ("ask", "read_only")
            and request.permission in (PermissionPolicy.READ_ONLY, PermissionPolicy.WORKSPACE)
            and bridge_supported())


def bridge_command(socket_path: Path) -> list[str]:
    """How Claude starts the bridge: the frozen bundle's own ``relay-cli``, or this Python."""
    if getattr(sys, "frozen", False):
        name = "relay-cli.exe" if sys.platform.startswith("win") else "relay-cli"
        return [str(Path(sys.executable).with_name(name)), "permission-bridge",
                "--socket", str(socket_path)]
    root = str(Path(__file__).resolve().parents[2])  # the folder holding the relay package
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            "from relay.cli.permission_cmd import main; sys.exit(main(sys.argv[1:]))")
    return [sys.executable, "-c", code, "--socket", str(socket_path)]


def describe(tool: str, tool_input: dict[str, Any]) -> str:
    """A one-line question for a tool call: ``Allow Write to create /x/notes.md?``."""
    def text(key: str) -> str:
        value = tool_input.get(key)
        return value if isinstance(value, str) else ""
    if tool == "Bash" and text("command"):
        return f"Allow Bash to run: {text('command')[:300]}?"
    if tool == "Write" and text("file_path"):
        return f"Allow Write to create or overwrite {text('file_path')}?"
    if tool in ("Edit", "MultiEdit", "NotebookEdit") and (text("file_path") or text("notebook_path")):
        return f"Allow {tool} to change {text('file_path') or text('notebook_path')}?"
    for key in ("file_path", "path", "url", "pattern", "query"):
        if text(key):
            return f"Allow {tool} on {text(key)[:300]}?"
    shown = json.dumps(tool_input, ensure_ascii=False)
    return f"Allow {tool} with {shown[:300] + ('…' if len(shown) > 300 else '')}?"


def _read_only(tool: str) -> bool | None:
    if tool in READ_TOOLS:
        return True
    return False if tool in WRITE_TOOLS else None


def _always_key(tool: str, tool_input: dict[str, Any]) -> str:
    return f"Bash\0{tool_input.get('command')}" if tool == "Bash" else tool


@dataclass
class _Call:
    writer: asyncio.StreamWriter
    call_id: object
    tool: str
    tool_input: dict[str, Any]


class PermissionBroker:
    """The adapter's end of the bridge: a Unix socket server, open calls, their answers."""

    def __init__(self, runtime: str = "claude", guard: Guard | None = None,
                 cwd: str | None = None) -> None:
        self.runtime = runtime
        #: the session's guard: asked first about every call Claude asks about
        self.guard, self.cwd = guard, cwd
        #: NeedsInput / InputWithdrawn / Notice events for the adapter's stream
        self.events: asyncio.Queue[AgentEvent] = asyncio.Queue()
        self._calls: dict[str, _Call] = {}
        self._always: set[str] = set()
        self._folder: Path | None = None
        self._server: asyncio.AbstractServer | None = None
        self._closed = False

    @property
    def open_calls(self) -> int:
        return len(self._calls)

    async def start(self) -> Path:
        """Listen on ``<private temp folder>/s``; returns the socket's path."""
        self._folder = Path(tempfile.mkdtemp(prefix="relay-"))  # mode 0700
        if len(str(self._folder)) > SOCKET_PATH_MAX and Path("/tmp").is_dir():
            # a socket's path has ~104 bytes at most (a long TMPDIR, macOS's …)
            self._folder.rmdir()
            self._folder = Path(tempfile.mkdtemp(prefix="relay-", dir="/tmp"))
        path = self._folder / "s"
        self._server = await asyncio.start_unix_server(self._serve, path=str(path),
                                                       limit=MAX_MESSAGE)
        return path

    def claude_flags(self, socket_path: Path) -> list[str]:
        """The flags that make Claude call the bridge for its permission prompts."""
        command = bridge_command(socket_path)
        config = {"mcpServers": {SERVER_NAME: {"type": "stdio", "command": command[0],
                                               "args": command[1:], "alwaysLoad": True}}}
        return ["--mcp-config", json.dumps(config), "--permission-prompt-tool", PROMPT_TOOL]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    message = jsonvalue.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    await self._call(message, writer)
        except (ConnectionError, ValueError):  # ValueError: a line over MAX_MESSAGE
            pass
        finally:
            for request_id, call in list(self._calls.items()):
                if call.writer is writer:  # the bridge went away: nobody to answer
                    del self._calls[request_id]
                    self.events.put_nowait(InputWithdrawn(
                        runtime=self.runtime, request_id=request_id,
                        reason="Claude no longer waits for this answer"))
            writer.close()

    async def _call(self, message: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        tool = str(message.get("tool_name") or "?")
        raw_input = message.get("input")
        tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
        call_id = message.get("id")
        if self._closed:
            await _reply(writer, call_id, {"behavior": "deny", "message": STOPPED})
            return
        tool_use_id = message.get("tool_use_id")
        guarded = check_call(self.guard, runtime=self.runtime, where="claude_bridge", tool=tool,
                             tool_input=tool_input, cwd=self.cwd,
                             call_id=str(tool_use_id) if tool_use_id else None,
                             denial_event=False)  # Claude's result lists the denial
        for event in guarded.events if guarded is not None else ():
            self.events.put_nowait(event)
        verdict = guarded.verdict if guarded is not None else None
        if guarded is not None and verdict is not None and verdict.decision == "deny":
            await _reply(writer, call_id, {"behavior": "deny", "message": guarded.refusal})
            return
        asks = verdict is not None and verdict.decision == "ask"
        if not asks and _always_key(tool, tool_input) in self._always:
            await _reply(writer, call_id, {"behavior": "allow", "updatedInput": tool_input})
            self.events.put_nowait(Notice(runtime=self.runtime, message=(
                f"Allowed {tool} without asking (allowed always in this run).")))
            return
        request_id = str(tool_use_id) if tool_use_id else f"perm-{uuid.uuid4().hex[:12]}"
        if request_id in self._calls:
            request_id = f"{request_id}-{uuid.uuid4().hex[:6]}"
        self._calls[request_id] = _Call(writer, call_id, tool, tool_input)
        always = ("Always allow this command in this run" if tool == "Bash"
                  else f"Allow {tool} for the rest of this run")
        question = NeedsInput(
            runtime=self.runtime, request_id=request_id, about="permission", tool=tool,
            read_only=_read_only(tool), prompt=describe(tool, tool_input),
            options=[InputOption(id=ALLOW, label="Allow once", kind="allow_once"),
                     InputOption(id=ALLOW_ALWAYS, label=always, kind="allow_always"),
                     InputOption(id=REJECT, label="Reject", kind="reject_once")])
        self.events.put_nowait(as_question(question, verdict) if asks and verdict else question)

    async def answer(self, request_id: str, option_id: str | None = None, *,
                     text: str | None = None) -> None:
        """Send the decision for an open call (no option: denied, with ``text`` as the reason).

        Raises:
            RelayError: no such open call, or an option this question does not offer.
        """
        call = self._calls.get(request_id)
        if call is None:
            raise RelayError(f"Claude is not waiting for an answer to {request_id}.",
                             "It may have been answered or withdrawn already.")
        if option_id not in (ALLOW, ALLOW_ALWAYS, REJECT, None):
            raise RelayError(f"{option_id!r} is not an answer to a Claude permission prompt.",
                             f"Pick one of: {ALLOW}, {ALLOW_ALWAYS}, {REJECT}.")
        del self._calls[request_id]
        if option_id in (ALLOW, ALLOW_ALWAYS):
            if option_id == ALLOW_ALWAYS:
                self._always.add(_always_key(call.tool, call.tool_input))
            decision: dict[str, Any] = {"behavior": "allow", "updatedInput": call.tool_input}
        else:
            decision = {"behavior": "deny", "message": text or DENIED_BY_USER}
        with contextlib.suppress(ConnectionError, OSError):
            await _reply(call.writer, call.call_id, decision)

    async def deny_all(self, why: str = STOPPED) -> list[str]:
        """Answer every open call ``deny`` (Claude unwinds); queue their withdrawals."""
        self._closed = True
        denied = list(self._calls)
        for request_id in denied:
            call = self._calls.pop(request_id)
            with contextlib.suppress(ConnectionError, OSError):
                await _reply(call.writer, call.call_id, {"behavior": "deny", "message": why})
            self.events.put_nowait(InputWithdrawn(runtime=self.runtime, request_id=request_id,
                                                  reason=why))
        return denied

    async def close(self) -> None:
        """Deny what is still open, stop listening, remove the private folder."""
        await self.deny_all("the run ended")
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


async def _reply(writer: asyncio.StreamWriter, call_id: object, decision: dict[str, Any]) -> None:
    writer.write(json.dumps({"id": call_id, "result": decision}).encode() + b"\n")
    await writer.drain()


_END = object()


async def with_questions(inner: AsyncGenerator[AgentEvent, None], broker: PermissionBroker,
                         inactivity_timeout: float | None,
                         on_stall: Callable[[], Awaitable[None]] | None = None,
                         waiting: Callable[[], bool] = lambda: False,
                         ) -> AsyncGenerator[AgentEvent, None]:
    """``inner``'s events with the broker's questions merged in; open calls are denied and
    withdrawn before the closing ``SessionEnded``.

    ``inner`` must run its process without an inactivity timeout; this keeps it, except
    while a question is open or ``waiting()`` (for the user's next message): on silence
    ``on_stall()`` stops the agent, an
    ``AgentError(category="stalled")`` is yielded and the end is reported as a failure.
    """
    merged: asyncio.Queue[object] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in inner:
                await merged.put(event)
        finally:
            await inner.aclose()  # its cleanup (stopping the process) runs here, not at GC
            await merged.put(_END)

    async def forward_questions() -> None:
        while True:
            await merged.put(await broker.events.get())

    pumping = asyncio.create_task(pump())
    forwarding = asyncio.create_task(forward_questions())
    stalled = False
    try:
        while True:
            try:  # an event already queued needs no timer (a burst costs no task per event)
                item = (merged.get_nowait() if not merged.empty()
                        else await asyncio.wait_for(merged.get(), inactivity_timeout))
            except TimeoutError:
                if broker.open_calls or stalled or waiting():
                    continue  # Claude waits for the user: its silence is expected
                stalled = True
                yield AgentError(runtime=broker.runtime, category="stalled",
                                 message=f"The agent printed nothing for {inactivity_timeout:g} s.")
                if on_stall is not None:
                    await on_stall()
                continue
            if item is _END:
                break
            item = cast(AgentEvent, item)  # the queue holds events and _END
            if isinstance(item, SessionEnded):
                forwarding.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await forwarding
                await broker.deny_all("the run ended")
                for queue in (merged, broker.events):  # the inner run's SessionEnded was last
                    while not queue.empty():
                        extra = queue.get_nowait()
                        # a question never shown needs no answer; its withdrawal is harmless
                        if extra is not _END and not isinstance(extra, NeedsInput):
                            yield cast(AgentEvent, extra)
                if stalled:
                    item = item.model_copy(update={"outcome": "failed", "reason": "agent stalled"})
                yield item
                await pumping  # the last event: let the inner run finish its cleanup
                return
            yield item
    finally:
        for task in (pumping, forwarding):
            task.cancel()
        for task in (pumping, forwarding):
            with contextlib.suppress(asyncio.CancelledError):
                await task
