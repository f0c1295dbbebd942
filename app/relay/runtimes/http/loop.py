"""The agent loop that makes a plain model API an agent, as a :class:`RuntimeAdapter`.

One run: ``SessionStarted`` (the conversation id is the agent session id), then turns —
one streamed model call (:class:`~relay.runtimes.http.provider.Provider`), its
``AssistantText``, each tool call it asked for run in the worktree (``ToolCall`` /
``ToolResult`` with the model's call ids; a refused call is also a ``PermissionDenied``),
``TurnCompleted`` with that call's usage and estimated cost — until the model answers
without calling a tool, or ``options["max_turns"]`` (default 40) is reached; then exactly
one ``SessionEnded``. The conversation is saved after every turn (``--resume`` continues
it). ``stop()`` is honoured between turns; mid-answer it closes the stream and kills any
running command (the calls still to run are refused, so every call has its result). Between
turns is the safe point.

Talking to it (issue 22): Relay runs the loop, so :meth:`HttpAdapter.steer` is exact (STEER
yes) — the message joins the conversation as a user message just before the next model
request (after the tool results of the current one; an answer that would have ended the run
is followed by one more request that sees it). :meth:`HttpAdapter.interrupt` is a stop that
ends the run ``interrupted``: the request in flight is abandoned and its partial answer lost
(INTERRUPT partial), the conversation up to there is saved and the next message resumes it.

Keys: the provider's variable (``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``) is read from the
request's ``extra_env`` (a registered ``api_key`` account puts it there from the vault),
else from the user's environment unless ``drop_env`` removes it. It reaches only the HTTP
client's headers: never argv, an event, the conversation file or a command's environment.

Costs: tokens priced with the wallet's table (:mod:`relay.wallet.pricing`); an unknown model
costs ``None``, never 0. Ollama overrides :meth:`HttpAdapter.cost` (local models cost no money).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import ClassVar

from relay.core.capabilities import Cap
from relay.core.config import default_home
from relay.core.errors import AccountError, ConversationError, RelayError
from relay.core.events import (
    AgentError,
    AgentEvent,
    InputOption,
    InputWithdrawn,
    NeedsInput,
    Outcome,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
    Usage,
)
from relay.core.models import PermissionPolicy
from relay.core.signals import failure_events
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest, RuntimeAdapter, RuntimeInfo
from relay.runtimes.guarded import check_call
from relay.runtimes.http import conversation as convs
from relay.runtimes.http import structured
from relay.runtimes.http.conversation import Conversation, Message
from relay.runtimes.http.provider import Provider, Reply, TurnContext
from relay.runtimes.http.tools import Toolbox, ToolRefused, offered
from relay.runtimes.http.transport import ApiFailure, MalformedStream, QuotaTracker, RetryPolicy
from relay.runtimes.probe import http_info, key_hint
from relay.wallet.model import Tokens
from relay.wallet.pricing import PRICES_FILE, Pricing, shipped_table

DEFAULT_MAX_TURNS = 40
#: the options of a guard's question (:meth:`HttpAdapter.answer_input`)
GUARD_ALLOW, GUARD_REJECT = "allow", "reject"
CONNECT_TIMEOUT = 10.0
#: credentials never passed to a command the agent runs
SECRET_ENV = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY",
                        "CODEX_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                        "CLAUDE_CODE_OAUTH_TOKEN", "OLLAMA_API_KEY"})

_POLICY_TEXT = {
    PermissionPolicy.READ_ONLY: "You may only read: do not try to change anything.",
    PermissionPolicy.WORKSPACE: "You may read, write and edit files inside the worktree and "
                                "run commands there.",
    PermissionPolicy.FULL: "You may read, write and edit files and run commands.",
}


class HttpAdapter(RuntimeAdapter):
    """A model API driven by Relay's own agent loop (subclasses name the provider)."""

    provider_class: ClassVar[type[Provider]]

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self._stopping = asyncio.Event()
        self._between_turns = asyncio.Event()
        self._between_turns.set()
        self._ctx: TurnContext | None = None
        self._toolbox: Toolbox | None = None
        self._request: RunRequest | None = None
        #: the guard's open questions: their answer (an option id; None: rejected)
        self._asked: dict[str, asyncio.Future[str | None]] = {}
        #: messages steered in, for the next model request (:meth:`steer`)
        self._steered: list[str] = []
        self._running = False
        self._interrupted = False

    # -- contract ------------------------------------------------------------------------

    def info(self) -> RuntimeInfo:
        p = self.provider_class
        return http_info(self.name, p.base_from(self.env), p.key_env, missing_key_hint(p),
                         self.env)

    def preflight(self, request: RunRequest) -> None:
        p = self.provider_class
        if p.key_env and not self.key(request):
            raise AccountError(f"No API key for {self.name}: {p.key_env} is not set and the "
                               "chain entry names no api_key account.", missing_key_hint(p))

    def key(self, request: RunRequest) -> str | None:
        var = self.provider_class.key_env
        if var is None:
            return None
        if request.extra_env.get(var):
            return request.extra_env[var]
        return None if var in request.drop_env else self.env.get(var) or None

    async def answer_input(self, request_id: str, option_id: str | None = None, *,
                           text: str | None = None) -> None:
        """Answer a question the guard asked about a tool call (allow once or reject)."""
        asked = self._asked.get(request_id)
        if asked is None or asked.done():
            raise RelayError(f"{self.name} is not waiting for an answer to {request_id}.",
                             "It may have been answered, withdrawn or the run may have ended.")
        if option_id not in (GUARD_ALLOW, GUARD_REJECT, None) or text is not None:
            raise RelayError(f"{option_id or text!r} is not an answer to the guard's question.",
                             f"Answer with {GUARD_ALLOW} or {GUARD_REJECT}.")
        asked.set_result(option_id)

    async def stop(self, grace: float = 5.0) -> None:
        self._stopping.set()
        for asked in self._asked.values():  # a question left open is a refusal
            if not asked.done():
                asked.set_result(None)
        if self._toolbox is not None:
            await self._toolbox.kill_all()
        call = self._ctx.current if self._ctx is not None else None
        if call is not None and call.response is not None:
            with contextlib.suppress(Exception):
                await call.response.aclose()

    async def steer(self, text: str) -> None:
        """Give the model ``text`` as a user message before its next request (this turn's
        tool results first); a run that was about to end makes one more request."""
        self.capabilities.require(Cap.STEER)
        if not self._running or self._stopping.is_set():
            raise RelayError(f"No {self.name} turn is running to steer.",
                             "Send the message as a follow-up instead.")
        self._steered.append(text)

    async def interrupt(self) -> None:
        """Abandon the model request in flight (and any running command); the run ends
        ``interrupted`` with the conversation saved up to there."""
        self.capabilities.require(Cap.INTERRUPT)
        self._interrupted = True
        await self.stop()

    async def wait_safe_point(self) -> None:
        await super().wait_safe_point()
        await self._between_turns.wait()

    # -- the loop ------------------------------------------------------------------------

    def model_for(self, request: RunRequest) -> str | None:
        p = self.provider_class
        return request.model or self.env.get(p.model_env) or p.default_model

    async def resolve_model(self, ctx: TurnContext) -> list[AgentEvent]:
        """Hook: find a model when none was named (Ollama asks its server); its notices."""
        return []

    def home(self, request: RunRequest) -> Path:
        data = request.options.get("data_dir")
        return Path(str(data)) if data else default_home(self.env)

    def cost(self, tokens: Tokens, model: str | None, pricing: Pricing) -> float | None:
        price = pricing.price(model)
        return None if price is None else round(price.cost_usd(tokens), 6)

    def _stopped(self) -> SessionEnded:
        """The end of a run Relay stopped: ``interrupted`` if it was an interrupt."""
        if self._interrupted:
            return self._ended("interrupted", INTERRUPTED_REASON)
        return self._ended("cancelled", "stopped by Relay")

    def _take_steered(self, conv: Conversation) -> bool:
        """Move the steered messages into the conversation; whether there were any."""
        taken, self._steered = self._steered, []
        for text in taken:
            conv.add(Message(role="user", text=text))
        return bool(taken)

    def _ended(self, outcome: Outcome, reason: str | None = None,
               result: str | None = None) -> SessionEnded:
        return SessionEnded(runtime=self.name, outcome=outcome,
                            reason=reason, result_text=result,
                            exit_code=0 if outcome == "completed" else None)

    async def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        self.preflight(request)
        self._request = request
        home = self.home(request)
        try:
            conv = (await asyncio.to_thread(convs.load, home, self.name, request.resume_id)
                    if request.resume_id else Conversation(runtime=self.name))
        except ConversationError as exc:
            yield AgentError(runtime=self.name, category="resume", message=str(exc))
            yield self._ended("failed", exc.message)
            return
        import httpx  # only for a real run: doctor and the parser never load it

        timeout = httpx.Timeout(request.inactivity_timeout, connect=CONNECT_TIMEOUT)
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            model = self.model_for(request) or ""
            ctx = TurnContext(client=client, conv=conv, tools=offered(request.permission),
                              system=self.system_prompt(request), model=model,
                              key=self.key(request), retry=self.retry_policy(request),
                              quota=QuotaTracker(self.name), stopping=self._stopping)
            self._ctx = ctx
            self._running = True
            try:
                async for event in self._conversation(ctx, request, home):
                    yield event
            finally:
                self._running = False

    def retry_policy(self, request: RunRequest) -> RetryPolicy:
        opts = request.options
        return RetryPolicy(attempts=int(str(opts.get("http_attempts", 3))),
                           max_delay=float(str(opts.get("retry_max_delay", 60.0))))

    def system_prompt(self, request: RunRequest) -> str:
        return (f"You are a coding agent working in a git worktree ({request.cwd}). Use the "
                "tools to look at, change and check the code; paths are relative to the "
                f"worktree. {_POLICY_TEXT[request.permission]} When the task is done, answer "
                "with a short summary of what you did, without calling a tool.")

    async def _conversation(self, ctx: TurnContext, request: RunRequest,
                            home: Path) -> AsyncGenerator[AgentEvent, None]:
        import httpx

        env = {k: v for k, v in self.env.items()
               if k not in request.drop_env and k not in SECRET_ENV}
        self._toolbox = toolbox = Toolbox(request.cwd, request.permission, env)
        pricing = await asyncio.to_thread(Pricing.from_tables, shipped_table(),
                                          override_path=home / PRICES_FILE)
        schema = structured.output_model(request.options)
        max_turns = int(str(request.options.get("max_turns", DEFAULT_MAX_TURNS)))
        repaired = False
        try:
            for event in await self.resolve_model(ctx):
                yield event
            ctx.conv.model = ctx.model
            yield SessionStarted(runtime=self.name, agent_session_id=ctx.conv.id,
                                 model=ctx.model, cwd=str(request.cwd),
                                 tools=[t.name for t in ctx.tools],
                                 permission_mode=request.permission.value, version="http")
            ctx.conv.add(Message(role="user", text=request.prompt))
            await asyncio.to_thread(convs.save, home, ctx.conv)
            provider = self.provider(request)
            for turn in range(1, max_turns + 1):
                if self._stopping.is_set():
                    yield self._stopped()
                    return
                self._take_steered(ctx.conv)
                self._between_turns.clear()
                reply = Reply()
                async for item in provider.turn(ctx):
                    if isinstance(item, Reply):
                        reply = item
                    else:
                        yield item
                ctx.current = None
                ctx.conv.add(Message(role="assistant", text=reply.text,
                                     tool_calls=reply.tool_calls))
                for call in reply.tool_calls:
                    async for event in self._tool(toolbox, ctx, call.id, call.name, call.input):
                        yield event
                await asyncio.to_thread(convs.save, home, ctx.conv)
                yield TurnCompleted(runtime=self.name, usage=self._usage(reply, pricing),
                                    model=reply.model or ctx.model, num_turns=turn,
                                    result_text=None if reply.tool_calls else reply.text)
                self._between_turns.set()
                if reply.tool_calls or (self._steered and not self._stopping.is_set()):
                    continue
                found = structured.problems(reply.text, schema) if schema else []
                if found and not repaired and not self._stopping.is_set():
                    repaired = True
                    ctx.conv.add(Message(role="user", text=structured.repair_prompt(found)))
                    continue
                if found:
                    yield AgentError(runtime=self.name, category="malformed", fatal=False,
                                     message="The answer is still not valid after one repair: "
                                             + "; ".join(found[:5]))
                yield self._ended("completed", result=reply.text)
                return
            yield AgentError(runtime=self.name, category="max_turns",
                             message=f"Stopped after {max_turns} turns without a final answer.")
            yield self._ended("failed", f"turn cap of {max_turns} reached")
        except ApiFailure as exc:
            for event in self._failure(exc):
                yield event
        except MalformedStream as exc:
            if self._stopping.is_set():  # the stream Relay closed mid-answer
                yield self._stopped()
                return
            yield AgentError(runtime=self.name, category="malformed",
                             message=f"{self.name} sent a malformed stream: {exc}")
            yield self._ended("failed", "malformed stream")
        except (httpx.HTTPError, RuntimeError) as exc:
            if self._stopping.is_set():
                yield self._stopped()
            else:
                yield AgentError(runtime=self.name, category="network",
                                 message=f"{self.name}: the answer broke off: {exc}")
                yield self._ended("failed", "the connection broke off")
        finally:
            self._between_turns.set()
            await toolbox.kill_all()
            with contextlib.suppress(OSError, ConversationError):
                await asyncio.to_thread(convs.save, home, ctx.conv)

    def provider(self, request: RunRequest) -> Provider:
        """The provider for this run; the base URL may come with the account's variables."""
        return self.provider_class(self.provider_class.base_from(
            {**self.env, **request.extra_env}))

    async def _tool(self, toolbox: Toolbox, ctx: TurnContext, call_id: str, name: str,
                    args: dict[str, object]) -> AsyncGenerator[AgentEvent, None]:
        yield ToolCall(runtime=self.name, call_id=call_id, name=name, input=args)
        refused: str | None = "Relay stopped the turn before it ran" \
            if self._stopping.is_set() else None
        request = self._request
        guarded = None if refused is not None else check_call(
            request.guard if request else None, runtime=self.name, where="http", tool=name,
            tool_input=args, cwd=str(toolbox.root), call_id=call_id, agent_session_id=ctx.conv.id)
        if guarded is not None:
            for event in guarded.events:
                yield event
            if guarded.verdict.decision == "deny":
                refused = guarded.refusal
            elif guarded.verdict.decision == "ask":
                async for event in self._ask(call_id, name, args, guarded.verdict.reason):
                    if isinstance(event, PermissionDenied):  # not allowed: refused
                        refused = event.detail
                    yield event
        try:
            if refused is not None:
                text, is_error, code = f"Refused: {refused}", True, None
            else:
                outcome = await toolbox.call(name, args)
                text, is_error, code = outcome.output, outcome.is_error, outcome.exit_code
        except ToolRefused as exc:
            yield PermissionDenied(runtime=self.name, tool=name, call_id=call_id, detail=str(exc))
            text, is_error, code = f"Refused: {exc}", True, None
        yield ToolResult(runtime=self.name, call_id=call_id, output=text, is_error=is_error,
                         exit_code=code)
        ctx.conv.add(Message(role="tool", call_id=call_id, tool_name=name, text=text,
                             is_error=is_error))

    async def _ask(self, call_id: str, name: str, args: dict[str, object],
                   reason: str) -> AsyncGenerator[AgentEvent, None]:
        """The guard's question about one call and, unless the answer is "allow", the
        :class:`PermissionDenied` that refuses it."""
        request_id = f"guard-{call_id}"
        asked = self._asked[request_id] = asyncio.get_running_loop().create_future()
        try:
            yield NeedsInput(runtime=self.name, request_id=request_id, about="permission",
                             tool=name, read_only=False,
                             prompt=f"Relay's guard asks: {reason} Allow {name}?",
                             options=[InputOption(id=GUARD_ALLOW, label="Allow once",
                                                  kind="allow_once"),
                                      InputOption(id=GUARD_REJECT, label="Reject",
                                                  kind="reject_once")])
            answer = await asked if not self._stopping.is_set() else None
        finally:
            self._asked.pop(request_id, None)
        if answer == GUARD_ALLOW:
            return
        if self._stopping.is_set():
            yield InputWithdrawn(runtime=self.name, request_id=request_id,
                                 reason="stopped by Relay")
        yield PermissionDenied(runtime=self.name, tool=name, call_id=call_id,
                               detail=f"the owner did not allow it ({reason})")

    def _usage(self, reply: Reply, pricing: Pricing) -> Usage:
        t = reply.tokens
        if t is None:
            return Usage()
        return Usage(input_tokens=t.input, output_tokens=t.output, cache_read_tokens=t.cache_read,
                     cache_write_tokens=t.cache_write, reasoning_tokens=t.reasoning or None,
                     cost_usd=self.cost(t, reply.model, pricing))

    def _failure(self, exc: ApiFailure) -> list[AgentEvent]:
        if self._stopping.is_set():
            return [self._stopped()]
        return [*failure_events(exc.signal, exc.message, runtime=self.name),
                self._ended("failed", exc.message)]


def missing_key_hint(p: type[Provider]) -> str:
    return key_hint(p.runtime, p.account_provider, p.key_env)
