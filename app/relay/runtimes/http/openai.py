"""OpenAI-compatible APIs: Responses (``POST {base}/responses``) and Chat Completions
(``POST {base}/chat/completions``), both streamed as SSE.

The base URL (``OPENAI_BASE_URL``, default ``https://api.openai.com/v1``) ends in ``/v1``
as OpenAI's SDKs expect, so any compatible server works. Key: ``OPENAI_API_KEY`` as a
Bearer token (a local server without one may take any).

Responses events read: ``response.output_item.done`` (a message's text, a reasoning
summary, a ``function_call`` with its ``call_id`` and JSON ``arguments``),
``response.completed`` (usage: ``input_tokens`` includes ``cached_tokens``, split here),
``response.failed`` / ``error`` (classified like an HTTP error).

Chat Completions: ``choices[0].delta.content`` / ``reasoning_content`` pieces, ``delta.tool_calls``
pieces merged by ``index`` (the first carries id and name, later ones argument text), the
``finish_reason`` chunk, and — asked for with ``stream_options.include_usage`` — the usage
chunk (``prompt_tokens`` includes ``cached_tokens``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC
from typing import Any

from relay.core import jsonvalue
from relay.core.events import AgentEvent, AssistantText, utcnow
from relay.core.signals import classify
from relay.runtimes.http.conversation import Message, ToolUse
from relay.runtimes.http.provider import Provider, Reply, TurnContext
from relay.runtimes.http.tools import function_tools
from relay.runtimes.http.transport import ApiFailure, MalformedStream, sse_events
from relay.wallet.model import Tokens


class _OpenAIBase(Provider):
    key_env = "OPENAI_API_KEY"
    base_env = "OPENAI_BASE_URL"
    default_base = "https://api.openai.com/v1"
    model_env = "OPENAI_MODEL"
    default_model = "gpt-5.5"
    account_provider = "openai"

    def headers(self, ctx: TurnContext) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if ctx.key:
            headers["authorization"] = f"Bearer {ctx.key}"
        return headers


class ResponsesProvider(_OpenAIBase):
    runtime = "openai"

    def body(self, ctx: TurnContext) -> dict[str, Any]:
        body: dict[str, Any] = {"model": ctx.model, "instructions": ctx.system, "stream": True,
                                "store": False, "input": responses_input(ctx.conv.messages)}
        if ctx.tools:
            body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                              "parameters": t.parameters, "strict": False} for t in ctx.tools]
        return body

    async def turn(self, ctx: TurnContext) -> AsyncIterator[AgentEvent | Reply]:
        call = self.call(ctx, "/responses", self.headers(ctx), self.body(ctx))
        async for event in call.send():
            yield event
        assert call.response is not None
        reply, completed = Reply(model=ctx.model), False
        try:
            async for name, data in sse_events(call.response):
                if not isinstance(data, dict):
                    raise MalformedStream(f"an SSE {name} event without a JSON object")
                kind = data.get("type", name)
                if kind == "response.output_item.done":
                    shown = _item(data.get("item") or {}, reply, self.runtime)
                    if shown is not None:
                        yield shown
                elif kind == "response.completed":
                    response = data.get("response") or {}
                    reply.model = response.get("model") or reply.model
                    reply.tokens = _tokens(response.get("usage"), "input_tokens", "output_tokens",
                                           "input_tokens_details", "output_tokens_details")
                    reply.stop_reason, completed = response.get("status"), True
                elif kind in ("response.failed", "error"):
                    err = (data.get("response") or {}).get("error") if kind != "error" else data
                    raise _failure(err or {}, self.runtime)
        finally:
            await call.response.aclose()
        if not completed:
            raise MalformedStream("the stream ended before response.completed")
        yield reply


def _item(item: dict[str, Any], reply: Reply, runtime: str) -> AgentEvent | None:
    kind = item.get("type")
    if kind == "message":
        text = "".join(str(c.get("text", "")) for c in item.get("content") or []
                       if c.get("type") == "output_text")
        if text:
            reply.text += text
            return AssistantText(runtime=runtime, text=text, message_id=item.get("id"))
    elif kind == "reasoning":
        text = "".join(str(s.get("text", "")) for s in item.get("summary") or [])
        if text:
            return AssistantText(runtime=runtime, text=text, reasoning=True)
    elif kind == "function_call":
        reply.tool_calls.append(ToolUse(id=str(item.get("call_id")), name=str(item.get("name")),
                                        input=_arguments(item.get("arguments"))))
    return None


class ChatProvider(_OpenAIBase):
    runtime = "openai-chat"

    def body(self, ctx: TurnContext) -> dict[str, Any]:
        body: dict[str, Any] = {"model": ctx.model, "stream": True,
                                "stream_options": {"include_usage": True},
                                "messages": chat_messages(ctx.system, ctx.conv.messages)}
        if ctx.tools:
            body["tools"] = function_tools(ctx.tools)
        return body

    async def turn(self, ctx: TurnContext) -> AsyncIterator[AgentEvent | Reply]:
        call = self.call(ctx, "/chat/completions", self.headers(ctx), self.body(ctx))
        async for event in call.send():
            yield event
        assert call.response is not None
        reply, text, reasoning = Reply(model=ctx.model), [], []
        calls: dict[int, dict[str, str]] = {}
        try:
            async for _name, data in sse_events(call.response):
                if not isinstance(data, dict):
                    raise MalformedStream("a chunk that is not a JSON object")
                if data.get("error"):
                    raise _failure(data["error"], self.runtime)
                reply.model = data.get("model") or reply.model
                if data.get("usage"):
                    reply.tokens = _tokens(data["usage"], "prompt_tokens", "completion_tokens",
                                           "prompt_tokens_details", "completion_tokens_details")
                for choice in data.get("choices") or []:
                    delta = choice.get("delta") or {}
                    text.append(str(delta.get("content") or ""))
                    reasoning.append(str(delta.get("reasoning_content") or ""))
                    for piece in delta.get("tool_calls") or []:
                        slot = calls.setdefault(int(piece.get("index", 0)),
                                                {"id": "", "name": "", "args": ""})
                        fn = piece.get("function") or {}
                        slot["id"] = piece.get("id") or slot["id"]
                        slot["name"] = fn.get("name") or slot["name"]
                        slot["args"] += str(fn.get("arguments") or "")
                    reply.stop_reason = choice.get("finish_reason") or reply.stop_reason
        finally:
            await call.response.aclose()
        if reply.stop_reason is None:
            raise MalformedStream("the stream ended without a finish_reason")
        if "".join(reasoning):
            yield AssistantText(runtime=self.runtime, text="".join(reasoning), reasoning=True)
        reply.text = "".join(text)
        if reply.text:
            yield AssistantText(runtime=self.runtime, text=reply.text)
        reply.tool_calls = [ToolUse(id=c["id"], name=c["name"], input=_arguments(c["args"]))
                            for _, c in sorted(calls.items())]
        yield reply


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        args = jsonvalue.loads(raw or "{}")
    except (TypeError, ValueError):
        raise MalformedStream(f"function arguments are not JSON: {str(raw)[:200]}") from None
    return args if isinstance(args, dict) else {}


def _failure(error: dict[str, Any], runtime: str) -> ApiFailure:
    message = f"{runtime}: the answer failed: {error.get('message') or error.get('code')}"
    signal = classify(message, structured={"error": error}, provider=runtime, now=utcnow(),
                      tz=UTC)
    return ApiFailure(signal, message)


def _tokens(usage: Any, inp: str, out: str, in_details: str, out_details: str) -> Tokens | None:
    if not isinstance(usage, dict):
        return None
    cached = int((usage.get(in_details) or {}).get("cached_tokens") or 0)
    return Tokens(input=max(int(usage.get(inp) or 0) - cached, 0),
                  output=int(usage.get(out) or 0), cache_read=cached,
                  reasoning=int((usage.get(out_details) or {}).get("reasoning_tokens") or 0))


def responses_input(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "user":
            out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            if m.text:
                out.append({"role": "assistant", "content": m.text})
            out += [{"type": "function_call", "call_id": c.id, "name": c.name,
                     "arguments": json.dumps(c.input)} for c in m.tool_calls]
        else:
            out.append({"type": "function_call_output", "call_id": m.call_id, "output": m.text})
    return out


def chat_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for m in messages:
        if m.role == "user":
            out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                msg["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": json.dumps(c.input)}} for c in m.tool_calls]
            out.append(msg)
        else:
            out.append({"role": "tool", "tool_call_id": m.call_id, "content": m.text})
    return out
