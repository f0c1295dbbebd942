"""Each pipeline node runs as a full Relay session.

Its chain is the node's provider (with its account) followed by its fallbacks, so a
limit hands off exactly as a single session does, and so does any other failure
(``fallback_on_failure``); its verify commands gate acceptance through the session's
verifier. The session starts from its dependencies' results (:mod:`git_ops`); when it
completes, its worktree is committed and that commit, the files changed, the final
answer and the cost become the step's saved outputs.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from relay.core.errors import RelayError
from relay.core.events import AssistantText, SessionEnded
from relay.core.models import SessionSpec
from relay.pipelines import git_ops
from relay.pipelines.ledger import RunInfo
from relay.pipelines.scheduler import StepFailure, StepWork
from relay.pipelines.templates import StepOutputs

if TYPE_CHECKING:
    from relay.sessions.port import SessionControl

#: the saved answer of a step is cut to this many characters
OUTPUT_LIMIT = 64 * 1024


def conflict_note(paths: tuple[str, ...]) -> str:
    listed = "\n".join(f"- {p}" for p in paths)
    return ("Before the task: this step starts from the merged results of the steps it "
            "depends on, and these files hold conflict markers (<<<<<<< ======= >>>>>>>) "
            f"where two of them changed the same lines. Resolve them first:\n{listed}\n\n")


async def final_answer(engine: SessionControl, session_id: str) -> str:
    """A session's final answer: its last assistant message (not reasoning, not a
    subagent's), else the CLI's result text."""
    result = ""
    for record in reversed(await engine.session_events(session_id)):
        event = record.event
        if isinstance(event, AssistantText) and not event.reasoning \
                and event.parent_call_id is None and event.text.strip():
            return event.text
        if isinstance(event, SessionEnded) and event.result_text and not result:
            result = event.result_text
    return result


class SessionExecutor:
    """Runs a step as a Relay session of ``engine``."""

    def __init__(self, engine: SessionControl) -> None:
        self.engine = engine
        #: the engine is closing: its sessions end interrupted (the engine sees to that)
        #: and the step is taken up again by the next engine, so nothing is cancelled
        self.closing = False

    async def execute(self, work: StepWork) -> tuple[StepOutputs, float | None]:
        run, node = work.run, work.node
        repo = Path(run.repo)
        assert run.base_commit is not None
        results = [(d, work.inputs[d].commit) for d in node.depends_on
                   if work.inputs.get(d) and work.inputs[d].commit]
        try:
            base = await asyncio.to_thread(git_ops.base_for, repo, run.base_commit,
                                           [(d, c) for d, c in results if c])
        except RelayError as exc:
            raise StepFailure(exc.message, retryable=False) from exc
        if work.claim.takeover and work.previous_session:  # its Relay died mid-step
            await self.engine.reap_session(work.previous_session)
        prompt = (conflict_note(base.conflicts) if base.conflicts else "") + work.prompt
        spec = SessionSpec(repo=repo, task=prompt, runtime=node.provider.partition(":")[0],
                           model=node.model, chain=node.chain, verify=node.verify_argv(),
                           permission=node.permission, base_commit=base.commit,
                           fallback_on_failure=True, pipeline_step=f"{run.id}/{node.id}")
        try:
            session_id = await self.engine.start_session(spec)
        except RelayError as exc:
            raise StepFailure(exc.message, retryable=False) from exc
        if not await work.attach(session_id):  # another engine owns the step now
            with contextlib.suppress(RelayError):
                await self.engine.cancel_session(session_id)
            raise StepFailure("the step's lease moved to another engine", retryable=False)
        try:
            row = await self.engine.wait_session(session_id)
        except asyncio.CancelledError:  # timeout, lost lease, cancelled run, closing engine
            if not self.closing:
                with contextlib.suppress(RelayError):
                    await asyncio.shield(self.engine.cancel_session(session_id))
            raise
        cost = await self.engine.session_cost(session_id)
        if row.state != "completed":
            raise StepFailure(f"session {session_id} {row.state}: {row.reason or 'no reason given'}",
                              cost_usd=cost)
        if row.workdir is None:
            raise StepFailure(f"session {session_id} has no worktree", retryable=False)
        try:
            commit = await asyncio.to_thread(git_ops.commit_result, Path(row.workdir),
                                             session_id, run.id, node.id)
            files = await asyncio.to_thread(git_ops.changed_files, repo, base.commit, commit)
        except RelayError as exc:
            raise StepFailure(exc.message) from exc
        output = (await final_answer(self.engine, session_id))[:OUTPUT_LIMIT]
        return StepOutputs(output, files, commit, row.branch, session_id), cost

    async def finish_run(self, run: RunInfo, sinks: dict[str, StepOutputs]) -> str | None:
        """A finished run's branch at the merge of its final steps' results."""
        if run.base_commit is None:
            return None
        results = [(n, o.commit) for n, o in sinks.items() if o.commit]
        try:
            return await asyncio.to_thread(git_ops.result_branch, Path(run.repo), run.id,
                                           run.base_commit, [(n, c) for n, c in results if c])
        except RelayError:
            return None
