"""Anthropic Messages API (``POST /v1/messages``, streamed as SSE).

Events read: ``message_start`` (model, input and cache usage), ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``thinking_delta``, ``input_json_delta`` of a
``tool_use`` block) / ``content_block_stop``, ``message_delta`` (stop reason, output
usage), ``message_stop`` and ``error`` (a mid-stream failure: classified like an HTTP
error, never retried once text has been shown). ``ping`` and unknown events are skipped.
Key: ``ANTHROPIC_API_KEY`` as ``x-api-key``; base URL: ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC
from typing import Any

from relay.core import jsonvalue
from relay.core.events import AgentEvent, AssistantText, utcnow
from relay.core.signals import classify
from relay.runtimes.http.conversation import Message, ToolUse
from relay.runtimes.http.provider import Provider, Reply, TurnContext
from relay.runtimes.http.transport import ApiFailure, MalformedStream, sse_events
from relay.wallet.model import Tokens

API_VERSION = "2023-06-01"
MAX_TOKENS = 8192


class AnthropicProvider(Provider):
    runtime = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    base_env = "ANTHROPIC_BASE_URL"
    default_base = "https://api.anthropic.com"
    model_env = "ANTHROPIC_MODEL"
    default_model = "claude-sonnet-5"
    account_provider = "anthropic"

    def body(self, ctx: TurnContext) -> dict[str, Any]:
        body: dict[str, Any] = {"model": ctx.model, "max_tokens": MAX_TOKENS, "stream": True,
                                "system": ctx.system, "messages": wire_messages(ctx.conv.messages)}
        if ctx.tools:
            body["tools"] = [{"name": t.name, "description": t.description,
                              "input_schema": t.parameters} for t in ctx.tools]
        return body

    async def turn(self, ctx: TurnContext) -> AsyncIterator[AgentEvent | Reply]:
        headers = {"x-api-key": ctx.key or "", "anthropic-version": API_VERSION,
                   "content-type": "application/json"}
        call = self.call(ctx, "/v1/messages", headers, self.body(ctx))
        async for event in call.send():
            yield event
        assert call.response is not None
        reply, blocks, usage = Reply(model=ctx.model), {}, {}  # type: ignore[var-annotated]
        try:
            async for name, data in sse_events(call.response):
                if not isinstance(data, dict):
                    raise MalformedStream(f"an SSE {name} event without a JSON object")
                kind = data.get("type", name)
                if kind == "message_start":
                    msg = data.get("message") or {}
                    reply.model = msg.get("model") or reply.model
                    usage.update(msg.get("usage") or {})
                elif kind == "content_block_start":
                    blocks[data.get("index")] = dict(data.get("content_block") or {},
                                                     _json="")
                elif kind == "content_block_delta":
                    _delta(blocks.get(data.get("index")), data.get("delta") or {})
                elif kind == "content_block_stop":
                    shown = _finish_block(blocks.get(data.get("index")), reply, self.runtime)
                    if shown is not None:
                        yield shown
                elif kind == "message_delta":
                    reply.stop_reason = (data.get("delta") or {}).get("stop_reason")
                    usage.update({k: v for k, v in (data.get("usage") or {}).items()
                                  if v is not None})
                elif kind == "error":
                    raise _stream_error(data.get("error") or {}, self.runtime)
        finally:
            await call.response.aclose()
        reply.tokens = _tokens(usage)
        yield reply


def _delta(block: dict[str, Any] | None, delta: dict[str, Any]) -> None:
    if block is None:
        raise MalformedStream("a content_block_delta for a block that never started")
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif kind == "input_json_delta":
        block["_json"] += str(delta.get("partial_json", ""))


def _finish_block(block: dict[str, Any] | None, reply: Reply, runtime: str) -> AgentEvent | None:
    if block is None:
        return None
    kind = block.get("type")
    if kind == "text" and block.get("text"):
        reply.text += block["text"]
        return AssistantText(runtime=runtime, text=block["text"])
    if kind == "thinking" and block.get("thinking"):
        return AssistantText(runtime=runtime, text=block["thinking"], reasoning=True)
    if kind == "tool_use":
        raw = block["_json"] or "{}"
        try:
            args = jsonvalue.loads(raw)
        except ValueError:
            raise MalformedStream(f"tool_use input is not JSON: {raw[:200]}") from None
        reply.tool_calls.append(ToolUse(id=str(block.get("id")), name=str(block.get("name")),
                                        input=args if isinstance(args, dict) else {}))
    return None


def _stream_error(error: dict[str, Any], runtime: str) -> ApiFailure:
    message = f"{runtime}: {error.get('type', 'error')} during the answer: " \
              f"{error.get('message', 'no message')}"
    signal = classify(message, structured={"error": {"type": error.get("type"),
                                                     "message": error.get("message")}},
                      provider=runtime, now=utcnow(), tz=UTC)
    return ApiFailure(signal, message)


def _tokens(usage: dict[str, Any]) -> Tokens | None:
    if not usage:
        return None
    return Tokens(input=int(usage.get("input_tokens") or 0),
                  output=int(usage.get("output_tokens") or 0),
                  cache_read=int(usage.get("cache_read_input_tokens") or 0),
                  cache_write=int(usage.get("cache_creation_input_tokens") or 0))


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages → Messages API turns (tool results grouped into one user turn)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "user":
            text = {"type": "text", "text": m.text}
            if out and out[-1]["role"] == "user":  # a steered message after tool results
                out[-1]["content"].append(text)
            else:
                out.append({"role": "user", "content": [text]})
        elif m.role == "assistant":
            content: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}
                        for c in m.tool_calls]
            out.append({"role": "assistant", "content": content or
                        [{"type": "text", "text": "(no answer)"}]})
        else:
            result = {"type": "tool_result", "tool_use_id": m.call_id, "content": m.text,
                      "is_error": m.is_error}
            if out and out[-1]["role"] == "user" and out[-1]["content"] and \
                    out[-1]["content"][0]["type"] == "tool_result":
                out[-1]["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
    return out
