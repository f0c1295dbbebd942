"""How the receiving agent of a handoff is started: its brief, and its conversation.

* The verified contract reaches the receiver the way its runtime supports best
  (``RuntimeAdapter.brief_injection``): Claude Code appends it to the system
  prompt from a file, Codex takes it as developer instructions for a new thread;
  elsewhere (and for a resumed Codex thread) the contract *is* the prompt.
* Between two accounts of the **same** provider the native conversation is
  carried into the receiving account's folder (:mod:`relay.sessions.carryover`)
  and resumed there, so the receiver keeps the whole context; the contract comes
  along all the same. When the carry-over is not possible the reason is told to
  the user and the contract alone carries the work.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from relay.core.accounts import CONFIG_ENV, AccountBook
from relay.core.models import entry_runtime
from relay.runtimes.registry import adapter_class
from relay.sessions.briefing import continuation_prompt
from relay.sessions.carryover import carry_conversation
from relay.sessions.coordinator import Brief

#: the prompt of a receiver whose brief went into its instructions
TAKEOVER_PROMPT = ("You are taking over this task from another agent. The continuation contract in "
                   "your instructions says what was done and what is left: check the worktree, "
                   "then continue the work from its next action.")


@dataclass(frozen=True)
class Receiver:
    prompt: str
    brief_file: Path | None = None
    #: the agent conversation to resume (a native carry-over)
    resume_id: str | None = None
    #: what happened to the conversation, for the user (None: nothing to say)
    note: str | None = None


async def prepare_receiver(brief: Brief, *, from_entry: str, to_entry: str,
                           agent_session_id: str | None, cwd: Path,
                           accounts: AccountBook | None) -> Receiver:
    """The receiver's prompt, brief file and (when carried over) conversation to resume."""
    runtime = entry_runtime(to_entry)
    resume_id: str | None = None
    note: str | None = None
    if (agent_session_id and accounts is not None and runtime in CONFIG_ENV
            and entry_runtime(from_entry) == runtime and from_entry != to_entry):
        source, target = await accounts.for_entry(from_entry), await accounts.for_entry(to_entry)
        source_env = {**os.environ, **(source.env() if source else {})}
        target_env = {**os.environ, **(target.env() if target else {})}
        carried = await asyncio.to_thread(carry_conversation, runtime, agent_session_id, cwd,
                                          source_env, target_env)
        if carried.possible:
            resume_id = agent_session_id
            note = (f"The {runtime} conversation goes on natively under {to_entry} "
                    f"({carried.reason}).")
        else:
            note = (f"The {runtime} conversation could not be carried to {to_entry} "
                    f"({carried.reason}); the continuation contract carries the work.")
    if adapter_class(runtime).brief_injection(resuming=resume_id is not None) is not None:
        return Receiver(TAKEOVER_PROMPT, brief.path, resume_id, note)
    return Receiver(continuation_prompt(brief.markdown), None, resume_id, note)
