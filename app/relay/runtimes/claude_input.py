"""Talking to a running Claude Code: its ``--input-format stream-json`` stdin, and the
transcript point a fork is cut at.

Measured on the real 2.1.197 against the loopback mock (``docs/claude-talk.md``):

* every stdin line ``{"type":"user","message":{"role":"user","content":…}}`` is a user
  message; each gives its own ``system/init`` … ``result``; the process exits 0 at EOF,
  after the messages it already read;
* a user line written while a turn works is delivered at the turn's next API request:
  during a tool call it reaches the model *inside the turn* (a ``role:"system"`` message
  "The user sent a new message while you were working: …"); when the turn makes no further
  request it becomes the next turn, after that turn's ``result`` — never lost;
* ``{"type":"control_request","request_id":…,"request":{"subtype":"interrupt"}}`` is
  answered with a ``control_response`` (``success``), a ``user`` line
  "[Request interrupted by user]" and a ``result`` (``error_during_execution``,
  ``terminal_reason:"aborted_…"``); the process then takes the next user line, and the
  conversation keeps the interrupted prompt;
* ``--resume S --fork-session --resume-session-at U`` copies the conversation up to and
  including the transcript entry ``U``: the last entry of turn N (the ``parentUuid`` of
  turn N+1's prompt) cuts after turn N (:func:`fork_anchor`);
* ``--resume S`` finds ``S`` only among the transcripts of its own cwd ("No conversation
  found" otherwise): a fork in a new worktree first gets the parent's transcript copied
  into its project folder (:func:`bring_transcript`).
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relay.core.agent_homes import claude_home

INTERRUPTED_MARK = "[Request interrupted by user]"
_request_ids = itertools.count(1)


def user_line(text: str) -> bytes:
    """One stdin line carrying a user message."""
    message = {"type": "user", "message": {"role": "user", "content": text}}
    return (json.dumps(message, ensure_ascii=False) + "\n").encode()


def interrupt_line() -> bytes:
    """The control request that stops the current turn (the process stays)."""
    request = {"type": "control_request", "request_id": f"relay-interrupt-{next(_request_ids)}",
               "request": {"subtype": "interrupt"}}
    return (json.dumps(request) + "\n").encode()


def bring_transcript(agent_session_id: str, cwd: Path, env: Mapping[str, str]) -> None:
    """Copy session ``agent_session_id``'s transcript from another project folder into
    ``cwd``'s, where ``--resume`` looks (nothing when it is there, or nowhere)."""
    target = claude_home(env).transcript(cwd, agent_session_id)
    found = _transcript(agent_session_id, cwd, env)
    if found != target and found.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found, target)


def _transcript(agent_session_id: str, cwd: Path, env: Mapping[str, str]) -> Path:
    """The session's transcript: ``cwd``'s, else the one in another project folder."""
    home = claude_home(env)
    path = home.transcript(cwd, agent_session_id)
    if path.exists() or not home.projects.is_dir():
        return path
    return next(iter(sorted(home.projects.glob(f"*/{agent_session_id}.jsonl"))), path)


def fork_anchor(agent_session_id: str, turns: int, cwd: Path,
                env: Mapping[str, str]) -> str | None:
    """The transcript uuid that ends the first ``turns`` user turns of a session, or None
    when the session has no more turns than that (a fork then keeps all of it) or its
    transcript cannot be read. An interrupted prompt is no turn of its own (its result
    carries no text, so Relay's stream does not count it either): it stays with the turn
    before it."""
    path = _transcript(agent_session_id, cwd, env)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    prompts: list[dict[str, Any]] = []  # the turns' opening entries, interrupted ones dropped
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if _is_prompt(entry):
            prompts.append(entry)
        elif prompts and _is_interruption(entry):
            prompts.pop()
    if len(prompts) <= turns:
        return None
    parent = prompts[turns].get("parentUuid")
    return parent if isinstance(parent, str) else None


def _is_interruption(entry: dict[str, Any]) -> bool:
    content = (entry.get("message") or {}).get("content")
    if entry.get("type") != "user" or entry.get("isSidechain"):
        return False
    if isinstance(content, list):
        return [b.get("text") for b in content if isinstance(b, dict)] == [INTERRUPTED_MARK]
    return content == INTERRUPTED_MARK


def _is_prompt(entry: dict[str, Any]) -> bool:
    """A user's own message (not a tool result, an interruption mark, a subagent's)."""
    if entry.get("type") != "user" or entry.get("isSidechain") or entry.get("isMeta") \
            or "toolUseResult" in entry:
        return False
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, list):
        if {b.get("type") for b in content if isinstance(b, dict)} <= {"tool_result"}:
            return False
    elif not isinstance(content, str):
        return False
    return not _is_interruption(entry)
