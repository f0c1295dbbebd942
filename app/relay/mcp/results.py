"""What every MCP tool answers: structured JSON with a readable text, and errors as results.

A tool returns a :class:`~mcp.types.CallToolResult` carrying both ``structuredContent`` (its
output model, checked by the SDK against the schema the tool advertises) and one text block
a model or a person can read. :func:`guarded` turns a :class:`RelayError` into an error
result (``isError``) with its message and hint (as text, and as ``{"error": {"code",
"message", "hint"}}``), and anything else into an error result
naming the failure (the traceback goes to stderr): a tool never stops the server.

Everything leaving the process goes through the secret scrubber first (detected sessions
carry prompts and commands read from other agents' transcripts; events are scrubbed when
stored, but a diff or a retrieved chunk may quote a file): :func:`guarded` is that one point
— every tool is guarded (``tests/mcp/test_tools_scrub.py`` enumerates them), and whatever
result it returns, or the error result it became, is scrubbed (text blocks and structured
content) on the way out.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import ParamSpec

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from relay.core.errors import RelayError, SessionNotFoundError, error_code
from relay.core.events import Usage
from relay.core.models import SessionRow
from relay.core.present import clip, end_state, usage_line
from relay.core.redact import scrub, scrub_obj
from relay.core.store.sql import from_ms
from relay.engine.engine import Engine

log = logging.getLogger(__name__)

P = ParamSpec("P")
Tool = Callable[P, Awaitable[CallToolResult]]


def ok(result: BaseModel, text: str) -> CallToolResult:
    """A successful result: ``result`` as structured content, ``text`` for reading."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=result.model_dump(mode="json"))


def failed(message: str, hint: str | None = None, code: str = "relay") -> CallToolResult:
    """An error result (``isError``): what happened, then what to do about it, as text and as
    ``{"error": {"code", "message", "hint"}}`` for a client that reads JSON."""
    text = f"{message}\n→ {hint}" if hint else message
    error = {"code": code, "message": message, "hint": hint}
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True,
                          structured_content={"error": error})


def scrubbed(result: CallToolResult) -> CallToolResult:
    """``result`` with its text blocks and structured content scrubbed of secrets."""
    content = [block.model_copy(update={"text": scrub(block.text)})
               if isinstance(block, TextContent) else block for block in result.content]
    return result.model_copy(update={"content": content,
                                     "structured_content": scrub_obj(result.structured_content)})


def guarded(fn: Callable[P, Awaitable[CallToolResult]]) -> Callable[P, Awaitable[CallToolResult]]:
    """Wrap a tool so that whatever it raises becomes an error result, never a crash.

    ``functools.wraps`` keeps the signature and docstring the SDK reads to build the tool's
    input schema and description.
    """

    @functools.wraps(fn)
    async def tool(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            result = await fn(*args, **kwargs)
        except RelayError as exc:
            result = failed(exc.message, exc.hint, error_code(exc))
        except ValidationError as exc:  # arguments that make no valid Relay record
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            result = failed(f"Invalid {where}: {first['msg']}.", code="invalid_arguments")
        except Exception as exc:  # a bug: keep serving, say so, log the traceback to stderr
            log.exception("MCP tool %s failed", fn.__name__)
            result = failed(
                f"Relay hit an internal error ({type(exc).__name__}: {clip(str(exc), 300)}).",
                "The traceback is in relay-cli mcp's log (its stderr).", "internal")
        return scrubbed(result)

    tool.relay_guarded = True  # type: ignore[attr-defined]
    return tool


def iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat(timespec="seconds")


def ms_iso(ms: int | None) -> str | None:
    """Unix milliseconds (the store's times) as an aware ISO time."""
    return None if ms is None else iso(from_ms(ms))


class SessionInfo(BaseModel):
    """One Relay session as the store has it."""

    id: str
    task: str
    state: str
    runtime: str
    simulated: bool
    repo: str
    branch: str | None
    workdir: str | None
    reason: str | None
    created: str | None
    updated: str | None
    usage: Usage
    #: whether this MCP server's process runs it (only then can it stop it)
    running_here: bool
    #: tool calls its agent asked for and was refused (never a silent success)
    refused_calls: int = 0


def session_info(row: SessionRow, running_here: bool) -> SessionInfo:
    return SessionInfo(id=row.id, task=row.task, state=row.state, runtime=row.runtime,
                       simulated=row.simulated, repo=row.repo, branch=row.branch,
                       workdir=row.workdir, reason=row.reason, created=iso(row.created_at),
                       updated=iso(row.updated_at), usage=row.usage, running_here=running_here,
                       refused_calls=row.refused_calls)


async def find_session(engine: Engine, session_id: str) -> SessionRow:
    """The session with this id or unique prefix; a clear error naming the tool that lists them."""
    try:
        return await engine.get_session(session_id.strip())
    except SessionNotFoundError as exc:
        raise SessionNotFoundError(exc.message, "relay_list_sessions lists the sessions (an id or a "
                                                "unique prefix of one).") from exc


def session_line(info: SessionInfo) -> str:
    """``<id> · running · demo (simulation) · "task" · updated … · in … · out … · $…``."""
    runtime = f"{info.runtime} (simulation)" if info.simulated else info.runtime
    line = (f"{info.id} · {end_state(info.state, info.refused_calls)} · {runtime}"
            f" · {clip(info.task, 80)!r}"
            f" · updated {info.updated} · {usage_line(info.usage)}")
    if info.branch:
        line += f" · branch {info.branch}"
    if info.reason:
        line += f" — {clip(info.reason, 160)}"
    return line
