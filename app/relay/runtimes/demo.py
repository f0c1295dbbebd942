"""The scripted demo runtime — a simulation, labelled as one in every event.

It lets a newcomer see Relay work with no agent installed: it inspects the
worktree, writes and edits real files there, reports realistic usage and
cost, and can be told to hit a simulated usage limit after N turns
(``options["limit_after"]``; it resets ``options["reset_after"]`` seconds later, five
hours unless told; a turn earlier it warns that the limit is close). With
``options["ask"]`` it asks permission before it writes (a NeedsInput with allow/reject
options, answered through :meth:`DemoAdapter.answer_input`); rejected, it writes nothing.
With :data:`HOLD_ENV` in its environment naming a pipeline step, the agent of that step
stops after its first turn and waits there until Relay stops it (the crash demo's engine A
is killed mid-step that way, however busy the machine). Every event it emits has
``simulated=True``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from datetime import timedelta
from pathlib import Path

from relay.core.errors import RelayError
from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    InputOption,
    LimitHit,
    NeedsInput,
    PermissionDenied,
    QuotaUpdate,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
    Usage,
    utcnow,
)
from relay.core.present import clip
from relay.runtimes.base import RunRequest, RuntimeAdapter, RuntimeInfo

DEMO_MODEL = "relay-demo-scripted"
NOTES_FILE = "RELAY_DEMO_NOTES.md"
_PRICE_IN, _PRICE_OUT = 3.0 / 1e6, 15.0 / 1e6

Step = Callable[[RunRequest, str], list[AgentEvent]]

#: in the agent's environment: a pipeline step (node id) whose agent holds after its first
#: turn until it is stopped, or for :data:`HOLD_MAX_S` at most (then it goes on)
HOLD_ENV = "RELAY_DEMO_HOLD"
HOLD_MAX_S = 600.0
#: how the agent's message says it holds
HOLD_TEXT = "(simulated) Holding here, mid-step"


class DemoAdapter(RuntimeAdapter):
    """A scripted agent that really edits files in its worktree."""

    name = "demo"
    simulated = True

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self._stop = asyncio.Event()
        self._between_turns = asyncio.Event()
        self._between_turns.set()
        #: questions waiting for answer_input: request id → the option picked
        self._asked: dict[str, asyncio.Future[str | None]] = {}
        #: messages steered in mid-turn, not yet acknowledged in the stream
        self._steered: list[str] = []
        self._running = False
        #: the turn was interrupted (stop ends it as "interrupted", the conversation stays)
        self._interrupted = False

    async def steer(self, text: str) -> None:
        """The message shows in the simulated stream before the next step."""
        if not self._running:
            raise RelayError("The demo agent has no turn running.", "Send the message queued.")
        self._steered.append(text)

    async def interrupt(self) -> None:
        """Ends the current turn at once; the conversation resumes with the next message."""
        if not self._running:
            raise RelayError("The demo agent has no turn running.", "Send a message instead.")
        self._interrupted = True
        self._stop.set()

    def _ended(self) -> AgentEvent:
        """How the run ends when stopped: interrupted (resumable) or cancelled."""
        if self._interrupted:
            return self._ev(SessionEnded(outcome="interrupted",
                                         reason="(simulated) the turn was interrupted"))
        return self._ev(SessionEnded(outcome="cancelled", reason="stopped by Relay"))

    def _acknowledged(self) -> list[AgentEvent]:
        said, self._steered = self._steered, []
        return [self._ev(AssistantText(text=f"(simulated) Noted mid-turn: “{clip(text, 200)}”"
                                            " — taking it into account.")) for text in said]

    async def answer_input(self, request_id: str, option_id: str | None = None, *,
                           text: str | None = None) -> None:
        waiting = self._asked.get(request_id)
        if waiting is None or waiting.done():
            raise RelayError(f"The demo is not waiting for an answer to {request_id}.",
                             "It may have been answered already.")
        waiting.set_result(option_id)

    async def _ask(self, waiting: asyncio.Future[str | None]) -> str | None:
        """Wait for the answer to the write permission (None: stopped)."""
        stopped = asyncio.ensure_future(self._stop.wait())

        def unblock(_: object) -> None:
            if not waiting.done():
                waiting.set_result(None)

        stopped.add_done_callback(unblock)
        try:
            return await waiting
        finally:
            stopped.cancel()

    def info(self) -> RuntimeInfo:
        return RuntimeInfo(runtime=self.name, executable="(built in)", version="scripted demo")

    async def stop(self, grace: float = 5.0) -> None:
        self._stop.set()

    async def wait_safe_point(self) -> None:
        await super().wait_safe_point()
        await self._between_turns.wait()

    def _holds(self, request: RunRequest) -> str:
        """The pipeline step this agent holds in (:data:`HOLD_ENV`), or ""."""
        node = self.env.get(HOLD_ENV, "")
        step = str(request.options.get("pipeline_step") or "")  # "run/node"
        return node if node and step.rpartition("/")[2] == node else ""

    def _ev(self, event: AgentEvent) -> AgentEvent:
        return event.model_copy(update={"runtime": self.name, "simulated": True})

    async def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        self._running = True
        try:
            async with contextlib.aclosing(self._run(request)) as events:
                async for event in events:
                    yield event
        finally:
            self._running = False

    async def _run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        delay = float(str(request.options.get("step_delay", 0.3)))
        limit_after = request.options.get("limit_after")
        sid = request.resume_id or request.agent_session_id or str(uuid.uuid4())
        yield self._ev(SessionStarted(agent_session_id=sid, model=request.model or DEMO_MODEL,
                                      cwd=str(request.cwd), tools=["list_files", "write_file", "edit_file"],
                                      permission_mode=request.permission.value, version="demo"))
        if request.options.get("purpose") == "plan":
            for event in _plan(request):
                yield self._ev(event)
                await _pause(delay, self._stop)
            return
        # A resumed conversation, or a task handed over with a continuation contract,
        # picks up where the work stopped instead of starting over.
        taken_over = "Continuation contract" in request.prompt
        steps = _steps(resumed=request.resume_id is not None or taken_over)
        hold = self._holds(request)
        for turn, step in enumerate(steps, start=1):
            self._between_turns.clear()
            if step is _write_notes and request.options.get("ask"):
                # listening before asking: a policy may answer as soon as it sees the question
                waiting = self._asked[f"{sid}-ask"] = asyncio.get_running_loop().create_future()
                yield self._ev(_permission(sid))
                answer = await self._ask(waiting)
                if self._stop.is_set():
                    yield self._ended()
                    return
                if answer != "allow":
                    for event in _refused(sid):
                        yield self._ev(event)
                    return
            for event in step(request, sid):
                if self._stop.is_set():
                    yield self._ended()
                    return
                for said in self._acknowledged():
                    yield said
                yield self._ev(event)
                await _pause(delay, self._stop)
            self._between_turns.set()
            if hold and turn == 1:
                yield self._ev(AssistantText(text=f"{HOLD_TEXT} ({HOLD_ENV}={hold}), until "
                                                  "Relay stops me."))
                await _pause(HOLD_MAX_S, self._stop)
                if self._stop.is_set():
                    yield self._ended()
                    return
            reset_after = float(str(request.options.get("reset_after", 5 * 3600)))
            reading = _reading(request.options.get("quota"), turn, reset_after)
            if reading is not None:
                yield self._ev(reading)
            if isinstance(limit_after, int) and turn == limit_after - 1:
                for event in _warning(reset_after):  # the provider warns a turn ahead
                    yield self._ev(event)
            if isinstance(limit_after, int) and turn >= limit_after and turn < len(steps):
                for event in _limit_events(reset_after):
                    yield self._ev(event)
                return
        yield self._ev(SessionEnded(outcome="completed", exit_code=0,
                                    result_text="(simulated) Demo task finished."))


def _permission(sid: str) -> NeedsInput:
    return NeedsInput(request_id=f"{sid}-ask", about="permission", tool="write_file",
                      read_only=False,
                      prompt=f"(simulated) Allow write_file to create {NOTES_FILE}?",
                      options=[InputOption(id="allow", label="Allow once", kind="allow_once"),
                               InputOption(id="reject", label="Reject", kind="reject_once")])


def _refused(sid: str) -> list[AgentEvent]:
    return [PermissionDenied(tool="write_file", call_id=f"{sid}-2",
                             detail="(simulated) the user did not allow the write"),
            AssistantText(text=f"(simulated) Understood: I left {NOTES_FILE} unwritten."),
            TurnCompleted(usage=_usage(900, 30, 0), model=DEMO_MODEL),
            SessionEnded(outcome="completed", exit_code=0,
                         result_text="(simulated) Nothing written: the write was not allowed.")]


async def _pause(delay: float, stop: asyncio.Event) -> None:
    if delay > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)


def _usage(inp: int, out: int, cached: int = 0) -> Usage:
    return Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=cached,
                 cache_write_tokens=0, cost_usd=round(inp * _PRICE_IN + out * _PRICE_OUT, 6))


def _reading(quota: object, turn: int, reset_after: float) -> QuotaUpdate | None:
    """The official-looking reading of ``options["quota"]`` for this turn, if any."""
    if not isinstance(quota, list) or turn > len(quota):
        return None
    return QuotaUpdate(window="five_hour", status="allowed", used_percent=float(quota[turn - 1]),
                       resets_at=utcnow() + timedelta(seconds=reset_after), window_minutes=300,
                       origin="demo (simulated)")


def _warning(reset_after: float) -> list[AgentEvent]:
    """Like Claude Code: a reading (status only, no percentage) and a non-blocking warning."""
    resets = utcnow() + timedelta(seconds=reset_after)
    return [QuotaUpdate(window="five_hour", status="allowed_warning", resets_at=resets,
                        origin="demo (simulated)"),
            LimitHit(limit="usage_limit", blocking=False, scope="five_hour", resets_at=resets,
                     message=f"(simulated) Close to the five_hour limit; resets {resets:%H:%M} UTC.")]


def _limit_events(reset_after: float) -> list[AgentEvent]:
    resets = utcnow() + timedelta(seconds=reset_after)
    msg = f"(simulated) You've hit your session limit — resets at {resets:%H:%M:%S} UTC."
    return [QuotaUpdate(window="five_hour", status="rejected", used_percent=100.0,
                        resets_at=resets, origin="demo (simulated)"),
            LimitHit(limit="usage_limit", message=msg, resets_at=resets, scope="five_hour"),
            AgentError(category="usage_limit", message=msg, http_status=429),
            SessionEnded(outcome="failed", reason="simulated usage limit", exit_code=1)]


def demo_plan(goal: str) -> dict[str, object]:
    """The demo planner's scripted graph for ``goal``: plan → implement → review."""
    words = re.findall(r"[a-z0-9]+", goal.lower())[:5]
    return {"name": "-".join(words) or "demo-plan", "nodes": [
        {"id": "plan", "provider": "demo", "task": f"Write a short plan for: {goal}"},
        {"id": "implement", "provider": "demo", "dependsOn": ["plan"],
         "task": f"Implement: {goal}\n\nFollow the plan:\n{{{{plan.output}}}}"},
        {"id": "review", "provider": "demo", "dependsOn": ["implement"],
         "task": f"Review the change ({{{{implement.files}}}}) made for: {goal}"}]}


def _plan(req: RunRequest) -> list[AgentEvent]:
    goal = next((line.partition("Goal: ")[2] for line in req.prompt.splitlines()
                 if line.startswith("Goal: ")), req.prompt[:200])
    answer = "```json\n" + json.dumps(demo_plan(goal), indent=2) + "\n```"
    return [AssistantText(text="(simulated) Planning: plan, implement, then review.",
                          reasoning=True),
            AssistantText(text=answer),
            TurnCompleted(usage=_usage(1500, 220, 0), model=DEMO_MODEL),
            SessionEnded(outcome="completed", exit_code=0, result_text=answer)]


def _steps(resumed: bool) -> list[Step]:
    return [_look_around, _write_notes, _edit_notes, _summarise] if not resumed \
        else [_resume_note, _edit_notes, _summarise]


def _look_around(req: RunRequest, sid: str) -> list[AgentEvent]:
    files = sorted(p.name + ("/" if p.is_dir() else "") for p in Path(req.cwd).iterdir()
                   if p.name != ".git")
    return [
        AssistantText(text="(simulated) Let me look at the repository first.", reasoning=True),
        ToolCall(call_id=f"{sid}-1", name="list_files", input={"path": "."}),
        ToolResult(call_id=f"{sid}-1", output="\n".join(files) or "(empty)", is_error=False),
        TurnCompleted(usage=_usage(1800, 60, 0), model=DEMO_MODEL),
    ]


def _write_notes(req: RunRequest, sid: str) -> list[AgentEvent]:
    # the simulation writes what it stores: the task scrubbed (a key pasted into the task never
    # lands in the worktree, which is in the data folder)
    from relay.core.redact import scrub

    text = f"# Relay demo notes\n\nTask: {scrub(req.prompt)}\n\n- [x] looked at the repository\n"
    (Path(req.cwd) / NOTES_FILE).write_text(text, encoding="utf-8")
    return [
        AssistantText(text=f"(simulated) I'll record a plan for the task in {NOTES_FILE}."),
        ToolCall(call_id=f"{sid}-2", name="write_file", input={"path": NOTES_FILE, "content": text}),
        ToolResult(call_id=f"{sid}-2", output=f"Wrote {len(text)} bytes to {NOTES_FILE}", is_error=False),
        TurnCompleted(usage=_usage(2400, 180, 1800), model=DEMO_MODEL),
    ]


def _edit_notes(req: RunRequest, sid: str) -> list[AgentEvent]:
    path = Path(req.cwd) / NOTES_FILE
    addition = "- [x] made the change (simulated)\n- [ ] review the diff\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(addition)
    return [
        AssistantText(text="(simulated) Now I'll make the change and note what is left."),
        ToolCall(call_id=f"{sid}-3", name="edit_file", input={"path": NOTES_FILE, "append": addition}),
        ToolResult(call_id=f"{sid}-3", output=f"Appended 2 lines to {NOTES_FILE}", is_error=False),
        TurnCompleted(usage=_usage(2900, 140, 2400), model=DEMO_MODEL),
    ]


def _resume_note(req: RunRequest, sid: str) -> list[AgentEvent]:
    said = "" if "Continuation contract" in req.prompt else \
        f" You said: “{clip(' '.join(req.prompt.split()), 1200)}”"
    return [AssistantText(text=f"(simulated) Resuming where the previous run stopped.{said}"),
            TurnCompleted(usage=_usage(2100, 40, 0), model=DEMO_MODEL)]


def _summarise(req: RunRequest, sid: str) -> list[AgentEvent]:
    return [AssistantText(text=f"(simulated) Done. See {NOTES_FILE} in the worktree for what changed."),
            TurnCompleted(usage=_usage(3100, 90, 2900), model=DEMO_MODEL,
                          result_text="(simulated) Demo task finished.")]
