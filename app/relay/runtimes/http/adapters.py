"""The HTTP runtimes Relay registers: ``anthropic``, ``openai`` (Responses), ``openai-chat``
(Chat Completions, for any OpenAI-compatible server) and ``ollama``.

``openai`` speaks Chat Completions instead when ``OPENAI_API=chat`` is set (in the user's
environment or an account's), so an ``openai:<label>`` account can drive a server that has
no Responses endpoint.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from relay.core.events import AgentEvent, Notice
from relay.core.signals import Signal
from relay.runtimes.base import RunRequest, RuntimeInfo
from relay.runtimes.http.anthropic import AnthropicProvider
from relay.runtimes.http.loop import HttpAdapter
from relay.runtimes.http.ollama import OllamaProvider, host_url, list_models
from relay.runtimes.http.openai import ChatProvider, ResponsesProvider
from relay.runtimes.http.provider import Provider, TurnContext
from relay.runtimes.http.transport import ApiFailure
from relay.runtimes.probe import ollama_info
from relay.wallet.model import Tokens
from relay.wallet.pricing import Pricing


class AnthropicAdapter(HttpAdapter):
    name = "anthropic"
    provider_class = AnthropicProvider


class OpenAIAdapter(HttpAdapter):
    name = "openai"
    provider_class = ResponsesProvider

    def provider(self, request: RunRequest) -> Provider:
        env = {**self.env, **request.extra_env}
        cls = ChatProvider if env.get("OPENAI_API", "").lower() == "chat" else ResponsesProvider
        return cls(cls.base_from(env))


class OpenAIChatAdapter(HttpAdapter):
    name = "openai-chat"
    provider_class = ChatProvider


class OllamaAdapter(HttpAdapter):
    """Local models: no key; a model the price table does not know costs 0 on this machine
    (electricity is not counted) and ``None`` (unknown) on a remote server."""

    name = "ollama"
    provider_class = OllamaProvider

    def info(self) -> RuntimeInfo:
        return ollama_info(self.name, self.env)

    async def resolve_model(self, ctx: TurnContext) -> list[AgentEvent]:
        import httpx

        if ctx.model:
            return []
        base = host_url(self.env)
        try:
            names = await list_models(ctx.client, base)
        except (httpx.HTTPError, ValueError) as exc:
            raise ApiFailure(Signal(kind="network", provider=self.name),
                             f"ollama: cannot list the models at {base}: {exc}") from exc
        if not names:
            raise ApiFailure(Signal(kind="invalid_request", provider=self.name),
                             f"ollama: the server at {base} has no model (ollama pull <model>)")
        ctx.model = names[0]
        return [Notice(runtime=self.name, message=f"No model named: using {names[0]}, the "
                                                  f"first of {len(names)} on {base}.")]

    def cost(self, tokens: Tokens, model: str | None, pricing: Pricing) -> float | None:
        known = super().cost(tokens, model, pricing)
        if known is not None:
            return known
        return 0.0 if _is_local(host_url(self.env)) else None


def _is_local(base: str) -> bool:
    host = urlsplit(base).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
