"""Runtime name → its static facts and its adapter class (imported lazily).

The adapters are named by ``module:Class``; the facts (:class:`RuntimeFacts`: the
executable, how its version is probed, how to install it, an HTTP runtime's key and base URL)
are kept apart from the adapter classes so that
:func:`runtime_info` answers ``relay-cli doctor`` for every runtime without importing any
adapter (docs/performance.md "relay-cli start-up"); the capability row is
:meth:`relay.core.capabilities.Capabilities.for_runtime`. The adapters hold the same facts
as class attributes and answer :meth:`~relay.runtimes.base.RuntimeAdapter.info` with the same
probes (:mod:`relay.runtimes.probe`); tests/runtimes/test_registry_facts.py checks they agree.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from relay.core.errors import UnknownRuntimeError
from relay.runtimes import probe

if TYPE_CHECKING:
    from relay.runtimes.base import RuntimeAdapter
    from relay.runtimes.probe import RuntimeInfo

GEMINI_HINT = "Install Gemini CLI: npm install -g @google/gemini-cli@0.61.0"


#: runtime name → ``module:Class`` of its adapter
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


@dataclass(frozen=True)
class RuntimeFacts:
    """What Relay knows of a runtime without loading its adapter."""

    #: how ``doctor`` looks at it: a CLI's ``--version``, an npm bridge's package.json, a
    #: model API's key, Ollama's server, or built in (the demo)
    probe: Literal["cli", "npm", "http", "ollama", "builtin"]
    #: the executable's default name (``RELAY_<NAME>_BIN`` overrides it)
    binary: str = ""
    install_hint: str = ""
    #: an npm bridge's package (whose package.json names the version)
    package: str = ""
    #: a model API: the key's and the base URL's variables, the default URL, whose
    #: accounts hold its key
    key_env: str | None = None
    base_env: str = ""
    default_base: str = ""
    account_provider: str = ""


def _npm(binary: str, package: str, version: str) -> RuntimeFacts:
    return RuntimeFacts("npm", binary=binary, package=package,
                        install_hint=f"Install it: npm install -g {package}@{version}")


def _api(key_env: str, base_env: str, default_base: str, account_provider: str
         ) -> RuntimeFacts:
    return RuntimeFacts("http", key_env=key_env, base_env=base_env,
                        default_base=default_base, account_provider=account_provider)


#: runtime name → what doctor needs to know of it (the same names as ``_ADAPTERS``)
_FACTS: dict[str, RuntimeFacts] = {
    "claude": RuntimeFacts("cli", binary="claude", install_hint="Install Claude Code: npm "
                           "install -g @anthropic-ai/claude-code"),
    "codex": RuntimeFacts("cli", binary="codex",
                          install_hint="Install Codex: npm install -g @openai/codex"),
    "gemini": RuntimeFacts("cli", binary="gemini", install_hint=GEMINI_HINT),
    "demo": RuntimeFacts("builtin"),
    "pi": RuntimeFacts("cli", binary="pi", install_hint="Install Pi: npm install -g "
                       "@mariozechner/pi-coding-agent@0.73.1"),
    "anthropic": _api("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com",
                      "anthropic"),
    "openai": _api("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1", "openai"),
    "openai-chat": _api("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1",
                        "openai"),
    "ollama": RuntimeFacts("ollama"),
    "gemini-acp": RuntimeFacts("cli", binary="gemini", install_hint=GEMINI_HINT),
    "claude-acp": _npm("claude-code-acp", "@zed-industries/claude-code-acp", "0.16.2"),
    "codex-acp": _npm("codex-acp", "@zed-industries/codex-acp", "0.16.0"),
}


def available_runtimes() -> list[str]:
    """Names of the runtimes this build can drive."""
    return list(_ADAPTERS)


def _known(name: str) -> str:
    """The adapter's ``module:Class``; UnknownRuntimeError for a name this build lacks."""
    try:
        return _ADAPTERS[name]
    except KeyError as exc:
        raise UnknownRuntimeError(
            f"Unknown runtime {name!r}.",
            f"Choose one of: {', '.join(_ADAPTERS)}.",
        ) from exc


def facts(name: str) -> RuntimeFacts:
    _known(name)
    return _FACTS[name]


def adapter_class(name: str) -> type[RuntimeAdapter]:
    module_name, _, attr = _known(name).partition(":")
    cls: type[RuntimeAdapter] = getattr(importlib.import_module(module_name), attr)
    return cls


def make_adapter(name: str, env: Mapping[str, str] | None = None) -> RuntimeAdapter:
    """A fresh adapter for one run."""
    return adapter_class(name)(env)


def runtime_info(name: str, env: Mapping[str, str] | None = None) -> RuntimeInfo:
    """What ``doctor`` reports for the runtime ``name`` (its adapter's ``info()``), from
    its facts alone: no adapter is imported. Never raises for a known runtime."""
    fact = facts(name)
    env = dict(os.environ if env is None else env)
    match fact.probe:
        case "cli":
            return probe.cli_info(name, fact.binary, fact.install_hint, env)
        case "npm":
            return probe.npm_info(name, fact.binary, fact.install_hint, fact.package, env)
        case "http":
            return probe.http_info(name, env.get(fact.base_env) or fact.default_base,
                                   fact.key_env, probe.key_hint(
                                       name, fact.account_provider, fact.key_env), env)
        case "ollama":
            return probe.ollama_info(name, env)
    return probe.RuntimeInfo(name, "(built in)", "scripted demo")
