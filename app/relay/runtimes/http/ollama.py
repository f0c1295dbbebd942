"""Ollama over its HTTP API: ``POST /api/chat`` streamed as NDJSON, ``GET /api/tags``.

The server is ``OLLAMA_HOST`` (``host:port`` or a URL; default ``127.0.0.1:11434``). Each
line is a chunk — ``message.content`` / ``message.thinking`` pieces, ``message.tool_calls``
(``function.name`` and ``arguments`` as an object; ids are made up when the server sends
none) — until the ``done`` line, which carries ``done_reason`` and the usage
(``prompt_eval_count`` → input, ``eval_count`` → output). A line with ``error`` is a failure.

A model without tool support answers 400 "… does not support tools": the loop goes on as
a plain chat (no tools offered) and says so in a ``Notice``. With no model named
(``--model``, ``OLLAMA_MODEL``) the first model ``/api/tags`` lists is used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import UTC
from typing import TYPE_CHECKING, Any

from relay.core.events import AgentEvent, AssistantText, Notice, utcnow
from relay.core.signals import Signal, classify
from relay.runtimes.http.conversation import Message, ToolUse
from relay.runtimes.http.provider import Provider, Reply, TurnContext
from relay.runtimes.http.tools import function_tools
from relay.runtimes.http.transport import ApiFailure, MalformedStream, ndjson_objects
from relay.runtimes.probe import DEFAULT_OLLAMA_HOST, ollama_host
from relay.wallet.model import Tokens

if TYPE_CHECKING:  # httpx (and its CLI extras) loads only for a real request
    import httpx

DEFAULT_HOST = DEFAULT_OLLAMA_HOST
#: ``OLLAMA_HOST`` as a base URL (defined with the probes ``relay-cli doctor`` runs)
host_url = ollama_host
NO_TOOLS = "does not support tools"


async def list_models(client: httpx.AsyncClient, base: str) -> list[str]:
    """The model names the server has (``GET /api/tags``). Raises httpx errors."""
    response = await client.get(base + "/api/tags")
    response.raise_for_status()
    models = response.json().get("models") or []
    return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]


class OllamaProvider(Provider):
    runtime = "ollama"
    key_env = None
    base_env = "OLLAMA_HOST"
    default_base = DEFAULT_HOST
    model_env = "OLLAMA_MODEL"
    default_model = None
    account_provider = "ollama"

    @classmethod
    def base_from(cls, env: Mapping[str, str]) -> str:
        return host_url(env)

    def body(self, ctx: TurnContext) -> dict[str, Any]:
        body: dict[str, Any] = {"model": ctx.model, "stream": True,
                                "messages": wire_messages(ctx.system, ctx.conv.messages)}
        if ctx.tools:
            body["tools"] = function_tools(ctx.tools)
        return body

    async def turn(self, ctx: TurnContext) -> AsyncIterator[AgentEvent | Reply]:
        call = self.call(ctx, "/api/chat", {"content-type": "application/json"}, self.body(ctx))
        try:
            async for event in call.send():
                yield event
        except ApiFailure as exc:
            if NO_TOOLS not in exc.message or not ctx.tools:
                raise
            ctx.tools = []
            yield Notice(runtime=self.runtime, category="fallback", message=(
                f"{ctx.model} does not support tools: it goes on as a plain chat, without "
                "reading or changing files."))
            call = self.call(ctx, "/api/chat", {"content-type": "application/json"},
                             self.body(ctx))
            async for event in call.send():
                yield event
        assert call.response is not None
        reply, text, thinking, done = Reply(model=ctx.model), [], [], False
        try:
            async for obj in ndjson_objects(call.response):
                if obj.get("error"):
                    raise ApiFailure(_signal(str(obj["error"])),
                                     f"ollama: {obj['error']}")
                msg = obj.get("message") or {}
                text.append(str(msg.get("content") or ""))
                thinking.append(str(msg.get("thinking") or ""))
                for tc in msg.get("tool_calls") or []:
                    fn = tc.get("function") or {}
                    args = fn.get("arguments")
                    reply.tool_calls.append(ToolUse(
                        id=str(tc.get("id") or f"call_{ctx.conv.id[:8]}_{len(ctx.conv.messages)}_"
                                                f"{len(reply.tool_calls)}"),
                        name=str(fn.get("name")), input=args if isinstance(args, dict) else {}))
                if obj.get("done"):
                    done, reply.stop_reason = True, obj.get("done_reason")
                    reply.model = obj.get("model") or reply.model
                    reply.tokens = Tokens(input=int(obj.get("prompt_eval_count") or 0),
                                          output=int(obj.get("eval_count") or 0))
        finally:
            await call.response.aclose()
        if not done:
            raise MalformedStream("the stream ended before its done line")
        if "".join(thinking):
            yield AssistantText(runtime=self.runtime, text="".join(thinking), reasoning=True)
        reply.text = "".join(text)
        if reply.text:
            yield AssistantText(runtime=self.runtime, text=reply.text)
        yield reply


def _signal(message: str) -> Signal:
    return classify(message, provider="ollama", now=utcnow(), tz=UTC)


def wire_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for m in messages:
        if m.role == "user":
            out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.text}
            if m.tool_calls:
                msg["tool_calls"] = [{"function": {"name": c.name, "arguments": c.input}}
                                     for c in m.tool_calls]
            out.append(msg)
        else:
            out.append({"role": "tool", "content": m.text, "tool_name": m.tool_name})
    return out
