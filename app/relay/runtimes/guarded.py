"""The guard where Relay itself decides a tool call: what a verdict becomes in a run's stream.

A run's :class:`~relay.runtimes.base.RunRequest` may carry a
:class:`~relay.core.guard.Guard` (the engine gives one per session: the project's
environments and the session's worktree). Three places ask it before a tool call goes on —
the HTTP tool loop (``where="http"``, every call), an ACP agent's permission request
(``"acp"``) and Claude's permission bridge (``"claude_bridge"``). Each verdict is a
:class:`~relay.core.events.GuardDecision` in the session's stream (audited with it), and:

* ``deny`` → the call is refused with the reason: a
  :class:`~relay.core.events.PermissionDenied` and the refusal the runtime sends back;
* ``ask`` → the call becomes a permission question (a
  :class:`~relay.core.events.NeedsInput` that says why and counts as not read-only, so no
  approval policy lets it through by itself);
* ``warn`` → a warning :class:`~relay.core.events.Notice`; the call goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from relay.core.events import AgentEvent, GuardDecision, NeedsInput, Notice, PermissionDenied
from relay.core.guard import Guard, Verdict, call_summary

log = logging.getLogger(__name__)

Where = Literal["http", "acp", "claude_bridge"]


@dataclass(frozen=True)
class Guarded:
    """A verdict and the events it adds to the run's stream (in order)."""

    verdict: Verdict
    events: list[AgentEvent]

    @property
    def refusal(self) -> str:
        """What the agent is told when the call is refused."""
        return f"Relay's guard refused this call: {self.verdict.reason}"


def check_call(guard: Guard | None, *, runtime: str, where: Where, tool: str,
               tool_input: Mapping[str, Any], cwd: str | None, call_id: str | None = None,
               agent_session_id: str | None = None,
               denial_event: bool = True) -> Guarded | None:
    """The guard's verdict on one call and its events (None: no guard, or nothing to say).

    ``denial_event=False``: the runtime reports the refused call itself (Claude lists it in
    its result's ``permission_denials``), so no second ``PermissionDenied`` is added.
    A guard that fails is a warning notice, not a failed run: the call goes on as it would
    without a guard, and the user reads why."""
    if guard is None:
        return None
    try:
        verdict = guard.check(tool, tool_input, cwd)
    except Exception as exc:  # the guard is pure code: a bug there must not stop the agent
        log.exception("the guard failed on a %s call", tool)
        why = f"the guard could not judge this {tool} call ({exc!r})"
        return Guarded(Verdict("warn", why, "guard.error"), [Notice(
            runtime=runtime, category="warning", message=f"Relay's guard: {why}.")])
    if verdict is None:
        return None
    events: list[AgentEvent] = [GuardDecision(
        runtime=runtime, decision=verdict.decision, reason=verdict.reason, rule=verdict.rule,
        environment=verdict.environment, tool=tool, summary=call_summary(tool, tool_input),
        where=where, agent_session_id=agent_session_id)]
    guarded = Guarded(verdict, events)
    if verdict.decision == "deny" and denial_event:
        events.append(PermissionDenied(runtime=runtime, tool=tool, call_id=call_id,
                                       detail=guarded.refusal))
    elif verdict.decision == "warn":
        events.append(Notice(runtime=runtime, category="warning",
                             message=f"Relay's guard: {verdict.reason}"))
    return guarded


def as_question(event: NeedsInput, verdict: Verdict) -> NeedsInput:
    """A permission question the guard wants a person (or the deny policy) to answer."""
    return event.model_copy(update={
        "prompt": f"Relay's guard asks: {verdict.reason} {event.prompt}",
        "read_only": False})
