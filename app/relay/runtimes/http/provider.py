"""What a model API module provides to the agent loop: one streamed model call per turn.

A :class:`Provider` turns the neutral :class:`~relay.runtimes.http.conversation.Conversation`
and the offered tools into its wire format, streams the answer and yields, in order,
``AssistantText`` events as blocks complete, ``Notice`` / ``QuotaUpdate`` events from the
transport, and finally one :class:`Reply` (the answer's text, tool calls and token usage).
It raises :class:`~relay.runtimes.http.transport.ApiFailure` or
:class:`~relay.runtimes.http.transport.MalformedStream`; everything else is the loop's.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from relay.core.events import AgentEvent
from relay.runtimes.http.conversation import Conversation, ToolUse
from relay.runtimes.http.tools import ToolSpec
from relay.runtimes.http.transport import ApiCall, QuotaTracker, RetryPolicy
from relay.wallet.model import Tokens

if TYPE_CHECKING:
    import httpx


@dataclass
class Reply:
    """One model call's answer; ``tokens`` are disjoint (input excludes cache reads)."""

    text: str = ""
    tool_calls: list[ToolUse] = field(default_factory=list)
    tokens: Tokens | None = None
    model: str | None = None
    stop_reason: str | None = None


@dataclass
class TurnContext:
    """What one model call needs; ``key`` reaches only the request headers."""

    client: httpx.AsyncClient
    conv: Conversation
    tools: list[ToolSpec]
    system: str
    model: str
    key: str | None = field(repr=False, default=None)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    quota: QuotaTracker = field(default_factory=lambda: QuotaTracker(""))
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    #: the call in flight (``stop()`` closes its response)
    current: ApiCall | None = None
    notes: dict[str, Any] = field(default_factory=dict)


class Provider(ABC):
    """One model API. Subclasses name their runtime, key and base-URL variables."""

    runtime: ClassVar[str]
    #: the variable the API key is read from (None: no key needed)
    key_env: ClassVar[str | None]
    base_env: ClassVar[str]
    default_base: ClassVar[str]
    model_env: ClassVar[str]
    default_model: ClassVar[str | None]
    #: what the user is told to run when the key is missing
    account_provider: ClassVar[str]

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    @classmethod
    def base_from(cls, env: Mapping[str, str]) -> str:
        return env.get(cls.base_env) or cls.default_base

    def call(self, ctx: TurnContext, path: str, headers: Mapping[str, str],
             body: Mapping[str, Any]) -> ApiCall:
        call = ApiCall(ctx.client, self.runtime, self.base_url + path, headers, body,
                       retry=ctx.retry, quota=ctx.quota, stopping=ctx.stopping)
        ctx.current = call
        return call

    @abstractmethod
    def turn(self, ctx: TurnContext) -> AsyncIterator[AgentEvent | Reply]:
        """Stream one model call: events as they come, then one Reply."""
