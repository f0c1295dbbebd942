"""What a session works in, and what one agent run is given: prompt, folder, options and its
account's environment."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from relay.core.config import Config
from relay.core.errors import RelayError
from relay.core.events import AgentEvent, Notice
from relay.core.guard import Guard
from relay.core.models import SessionSpec, entry_runtime
from relay.core.store.sessions_repo import SessionsRepo
from relay.core.store.writer import EventWriter, WriteOp
from relay.runtimes.base import RunRequest
from relay.runtimes.registry import adapter_class
from relay.sessions.instructions_delivery import pass_on_instructions
from relay.sessions.run_types import Continuation, Services, Step
from relay.sessions.snapshot import snapshot_run_end
from relay.sessions.worktree import (
    Workspace,
    carry_uncommitted,
    create_worktree,
    in_place,
    run_setup,
)


async def build_request(spec: SessionSpec, config: Config, continuation: Continuation | None,
                        services: Services, ws: Workspace, step: Step,
                        emit: Callable[[AgentEvent], Awaitable[None]]) -> RunRequest:
    """The request for ``step``: a registered account brings its folder and key, and no
    other credential in the user's environment overrides them; the project's instruction
    files the runtime does not read itself are passed on."""
    options: dict[str, object] = {"step_delay": config.demo_step_delay,
                                  "reset_after": config.demo_reset_after,
                                  "purpose": spec.purpose,
                                  # who answers the agent's permission prompts (Claude asks only then)
                                  "approvals": spec.approvals}
    first_of_task = step.handoff is None and not step.resume_id
    if spec.demo_limit_after is not None and first_of_task:
        options["limit_after"] = spec.demo_limit_after
    if spec.demo_quota and first_of_task:
        options["quota"] = spec.demo_quota
    if spec.demo_ask and first_of_task:
        options["ask"] = True
    if continuation is not None:
        options["previous_total"] = continuation.previous_total
    if spec.pipeline_step:  # "run/node": the demo agent may hold in one (the crash demo)
        options["pipeline_step"] = spec.pipeline_step
    env: dict[str, str] = {}
    drop: frozenset[str] = frozenset()
    account = await services.accounts.for_entry(step.entry)
    if account is not None:
        env = await services.accounts.agent_env(account)
        drop = account.drop_env()
    elif ":" in step.entry and not adapter_class(entry_runtime(step.entry)).simulated:
        await emit(Notice(message=(
            f"{step.entry} is not a registered account, so it runs with the CLI's own "
            "login. Register it with `relay-cli accounts add`.")))
    fork = spec.fork_of  # a fork's first run resumes a copy of its parent's conversation
    forking = (continuation is None and fork is not None and fork.how == "conversation"
               and step.resume_id is not None and step.resume_id == fork.agent_session_id)
    request = RunRequest(prompt=step.prompt, cwd=ws.path, model=step.model,
                         permission=spec.permission, resume_id=step.resume_id,
                         fork=forking, resume_at=fork.resume_at if forking and fork else None,
                         inactivity_timeout=config.inactivity_timeout, options=options,
                         extra_env=env, drop_env=drop, brief_file=step.brief_file,
                         guard=await session_guard(spec, services, ws, emit))
    return await pass_on_instructions(request, entry_runtime(step.entry), config.home, emit)


async def session_guard(spec: SessionSpec, services: Services, ws: Workspace,
                        emit: Callable[[AgentEvent], Awaitable[None]]) -> Guard | None:
    """The guard on this run's tool calls; a guard that cannot be had is a warning and the
    run goes on unguarded (the user reads why)."""
    if services.guard_for is None:
        return None
    try:
        return await services.guard_for(spec, ws.path)
    except RelayError as exc:
        await emit(Notice(category="warning", message=(
            f"Relay's guard is off for this run: {exc.message}")))
        return None


async def prepare_workspace(spec: SessionSpec, config: Config, session_id: str,
                            writer: EventWriter,
                            emit: Callable[[AgentEvent], Awaitable[None]]) -> Workspace:
    """The session's worktree (or the repository itself), recorded on its row; an adopted
    session's worktree gets the user's uncommitted state; the setup command runs there."""
    if spec.worktree:
        ws = await create_worktree(spec.repo, config.worktrees_dir, session_id, spec.base_commit)
        if spec.carry_uncommitted:  # an adopted session goes on from the user's state
            carried = await carry_uncommitted(spec.repo, ws.path)
            await emit(Notice(category="warning" if carried.skipped else "info",
                              message=carried.summary(spec.repo)))
    else:
        ws = await in_place(spec.repo)
    await writer.write(WriteOp(session_id, statements=[SessionsRepo.workspace(
        session_id, str(ws.path), ws.branch, ws.base_sha, ws.base_branch)]))
    if ws.is_worktree and spec.setup_command:
        await run_setup(spec.setup_command, ws.path)
    return ws


async def snapshot_run(ws: Workspace, session_id: str, run_id: str, entry: str, outcome: str,
                       emit: Callable[[AgentEvent], Awaitable[None]]) -> None:
    """Commit what a run left in the session's worktree (never on the user's branch); a
    failure is a warning, never the session's end."""
    if not ws.is_worktree or ws.branch is None:
        return
    try:
        await asyncio.to_thread(snapshot_run_end, ws.path, session_id, run_id, entry, outcome)
    except RelayError as exc:
        await emit(Notice(category="warning", message=f"The run's snapshot was not taken: "
                                                      f"{exc.message}"))
