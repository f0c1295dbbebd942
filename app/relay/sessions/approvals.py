"""Needs input: the questions an agent asks mid-run, answered by a policy or by the user.

A runtime that asks (an ACP ``session/request_permission``, the demo's simulated write
permission…) emits a :class:`~relay.core.events.NeedsInput` with typed options and
answers through its adapter's ``answer_input``; the runner hands every such event to
the run's :class:`InputGate`, which knows none of the runtimes' vocabularies:

* policy ``deny`` answers every permission with its reject option;
* policy ``read_only`` answers a permission whose action only reads with its allow
  option, and asks the user about the rest;
* policy ``ask`` (the default) asks the user about everything.

While a question waits for the user the session's state is ``needs_input`` (the window,
the tray and the CLI show it with its options); the answer — from this process
(:meth:`InputGate.answer`, in the host that runs the session; front ends ask it over its
API) — reaches the
adapter, an :class:`~relay.core.events.InputWithdrawn` ("answered: Allow once") clears
the question everywhere, and the state returns to ``running``. A question the runtime
withdraws itself, or one still open when the run ends, is withdrawn the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from relay.core.errors import RelayError
from relay.core.events import AgentEvent, InputOption, InputWithdrawn, NeedsInput, Notice
from relay.core.models import ApprovalPolicy
from relay.core.states import SessionState
from relay.runtimes.base import RuntimeAdapter

Emit = Callable[[AgentEvent], Awaitable[None]]
SetState = Callable[[SessionState, str | None], Awaitable[None]]

_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")


def _first(options: list[InputOption], kinds: tuple[str, ...]) -> InputOption | None:
    for kind in kinds:  # the narrowest first: "once" before "always"
        for option in options:
            if option.kind == kind:
                return option
    return None


def policy_choice(policy: ApprovalPolicy, event: NeedsInput) -> InputOption | None:
    """The option ``policy`` picks by itself for ``event`` (None: ask the user)."""
    if event.about != "permission":
        return None  # a question needs a person (or a reject when there is one)
    if policy == "deny":
        return _first(event.options, _REJECT)
    if policy == "read_only" and event.read_only:
        return _first(event.options, _ALLOW)
    return None


class InputGate:
    """The open questions of one session's runs."""

    #: the only kinds of event :meth:`seen` acts on
    KINDS: ClassVar[frozenset[str]] = frozenset({"needs_input", "input_withdrawn"})

    def __init__(self, policy: ApprovalPolicy, emit: Emit, set_state: SetState) -> None:
        self.policy = policy
        self._emit, self._set_state = emit, set_state
        self.pending: dict[str, NeedsInput] = {}
        self._adapter: RuntimeAdapter | None = None

    async def seen(self, event: AgentEvent, adapter: RuntimeAdapter) -> None:
        """An event the runner just stored: a question to answer or one withdrawn."""
        if event.replay:
            return
        if isinstance(event, InputWithdrawn):
            if self.pending.pop(event.request_id, None) is not None and not self.pending:
                await self._set_state("running", None)
            return
        if not isinstance(event, NeedsInput):
            return
        self._adapter = adapter
        choice = policy_choice(self.policy, event)
        if choice is not None:
            await adapter.answer_input(event.request_id, choice.id)
            await self._emit(InputWithdrawn(request_id=event.request_id,
                                            reason=f"answered by the {self.policy} policy: "
                                                   f"{choice.label}"))
            await self._emit(Notice(message=f"{choice.label}: {event.tool or event.prompt} "
                                            f"(approval policy {self.policy})"))
            return
        self.pending[event.request_id] = event
        await self._set_state("needs_input", event.prompt)

    async def answer(self, request_id: str, option_id: str | None = None,
                     text: str | None = None) -> str:
        """Answer an open question (an option id, or free text); returns what was done."""
        event = self.pending.get(request_id)
        if event is None or self._adapter is None:
            open_ids = ", ".join(self.pending) or "none"
            raise RelayError(f"No open question {request_id!r} (open: {open_ids}).",
                             "It may have been answered or withdrawn already.")
        option = next((o for o in event.options if o.id == option_id), None)
        if option_id is not None and option is None:
            ids = ", ".join(o.id for o in event.options)
            raise RelayError(f"{option_id!r} is not an answer to this question.",
                             f"Pick one of: {ids}.")
        if option is None and text is None:
            raise RelayError("An answer needs an option or text.",
                             f"Options: {', '.join(o.id for o in event.options) or '(free text)'}")
        await self._adapter.answer_input(request_id, option_id, text=text)
        said = option.label if option is not None else f"“{(text or '')[:60]}”"
        del self.pending[request_id]
        await self._emit(InputWithdrawn(request_id=request_id, reason=f"answered: {said}"))
        if not self.pending:
            await self._set_state("running", None)
        return f"Answered {request_id}: {said}"

    async def close(self, why: str = "the run ended") -> None:
        """Withdraw every question still open (the run is over)."""
        for request_id in list(self.pending):
            del self.pending[request_id]
            await self._emit(InputWithdrawn(request_id=request_id, reason=why))
        self._adapter = None
