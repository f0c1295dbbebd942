"""Runtime name → adapter class, imported lazily so a missing optional runtime costs nothing."""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from relay.core.errors import UnknownRuntimeError
from relay.runtimes.base import RuntimeAdapter

_ADAPTERS: dict[str, str] = {
    "claude": "relay.runtimes.claude:ClaudeAdapter",
    "codex": "relay.runtimes.codex:CodexAdapter",
    "gemini": "relay.runtimes.gemini:GeminiAdapter",
    "demo": "relay.runtimes.demo:DemoAdapter",
    "pi": "relay.runtimes.pi:PiAdapter",
    "anthropic": "relay.runtimes.http.adapters:AnthropicAdapter",
    "openai": "relay.runtimes.http.adapters:OpenAIAdapter",
    "openai-chat": "relay.runtimes.http.adapters:OpenAIChatAdapter",
    "ollama": "relay.runtimes.http.adapters:OllamaAdapter",
    "gemini-acp": "relay.runtimes.acp_agents:GeminiAcpAdapter",
    "claude-acp": "relay.runtimes.acp_agents:ClaudeAcpAdapter",
    "codex-acp": "relay.runtimes.acp_agents:CodexAcpAdapter",
}


def available_runtimes() -> list[str]:
    """Names of the runtimes this build can drive."""
    return list(_ADAPTERS)


def adapter_class(name: str) -> type[RuntimeAdapter]:
    try:
        target = _ADAPTERS[name]
    except KeyError as exc:
        raise UnknownRuntimeError(
            f"Unknown runtime {name!r}.",
            f"Choose one of: {', '.join(_ADAPTERS)}.",
        ) from exc
    module_name, _, attr = target.partition(":")
    cls: type[RuntimeAdapter] = getattr(importlib.import_module(module_name), attr)
    return cls



def make_adapter(name: str, env: Mapping[str, str] | None = None) -> RuntimeAdapter:
    """A fresh adapter for one run."""
    return adapter_class(name)(env)
