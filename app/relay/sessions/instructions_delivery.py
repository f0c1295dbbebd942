"""Passing project instruction files on to a runtime that does not read them itself.

:func:`pass_on_instructions` is called by ``build_request`` for every run, the receiver of
a handoff included. What the runtime reads natively (:mod:`relay.sessions.instructions`)
is never sent again; the rest — scrubbed, at most :data:`PASS_ON_LIMIT` bytes of file
text per run, a cut said where it happens — goes in as one delimited block:

* through the handoff brief's channel where the runtime has one
  (``RuntimeAdapter.brief_injection``: Claude's appended system prompt, Codex's developer
  instructions of a new thread): a file holding the block, followed by the continuation
  brief when there is one, becomes the request's ``brief_file``;
* otherwise as a preface to the prompt.

A resumed conversation without such a channel (a Codex thread, an API conversation) got
the block with its first run, so nothing is added. The pipeline planner's runs get
nothing: its prompt is Relay's own request for a JSON plan; the steps it plans get them.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from relay.core.errors import RelayError
from relay.core.events import AgentEvent, Notice
from relay.core.fsutil import private_dir, write_atomic
from relay.runtimes.base import RunRequest
from relay.runtimes.registry import adapter_class
from relay.sessions.instructions import Found, Placement, discover, placements

#: the most file text passed on to one run (bytes; Codex's own default budget)
PASS_ON_LIMIT = 32 * 1024
#: how many files one summary line names before "and N more"
SUMMARY_FILES = 6
OPEN, CLOSE = "<project-instructions>", "</project-instructions>"
SEPARATOR = "\n\n---\n\n"


@dataclass(frozen=True)
class Block:
    """The block passed on, and what was cut or left out of it (one sentence each)."""

    text: str
    cuts: tuple[str, ...] = ()


def block(placed: Sequence[Placement], limit: int = PASS_ON_LIMIT) -> Block:
    """The delimited block of the files placed ``passed_on`` ("" when there are none)."""
    passed = [p.file for p in placed if p.how == "passed_on"]
    if not passed:
        return Block("")
    parts = [OPEN, "This repository has instruction files your runtime does not read by "
             "itself; Relay passes them on. Follow them as the project's instructions."]
    cuts: list[str] = []
    left_out: list[str] = []
    budget = limit
    for file in passed:
        if budget <= 0:
            left_out.append(file.path)
            continue
        data = file.text.encode("utf-8")
        kept = _cut(data, budget)
        budget = budget - len(kept.encode("utf-8")) if len(kept) == len(file.text) else 0
        scope = f' applies-to="{file.folder}/"' if file.folder else ""
        parts += ["", f'<file path="{file.path}"{scope}>', kept.rstrip("\n"), "</file>"]
        if len(kept) < len(file.text) or not file.complete:
            sentence = (f"Relay passed on the first {len(kept.encode('utf-8')):,} bytes of "
                        f"{file.path} ({file.size:,} bytes); read the file for the rest.")
            parts.append(f"[{sentence}]")
            cuts.append(sentence)
    if left_out:
        sentence = (f"Not passed on (over Relay's limit of {limit:,} bytes of instruction "
                    f"files a run): {', '.join(left_out)}; read them in the repository.")
        parts += ["", sentence]
        cuts.append(sentence)
    return Block("\n".join([*parts, CLOSE]), tuple(cuts))


def _cut(data: bytes, budget: int) -> str:
    """At most ``budget`` bytes of ``data``, ending at a line end where one is near."""
    if len(data) <= budget:
        return data.decode("utf-8")
    head = data[:budget].decode("utf-8", errors="ignore")
    line_end = head.rfind("\n")
    return head[:line_end + 1] if line_end > len(head) // 2 else head


def summary(found: Found, runtime: str) -> str | None:
    """``AGENTS.md (read by codex), CLAUDE.md (passed on)``; None when nothing was found."""
    placed = placements(runtime, found)
    if not placed:
        return None
    how = {"native": f"read by {runtime}", "passed_on": "passed on",
           "duplicate": "same as another, not passed on"}
    named = [f"{p.file.path} ({how[p.how]})" for p in placed[:SUMMARY_FILES]]
    more = len(placed) - SUMMARY_FILES
    return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def cli_line(repo: Path, runtime: str) -> str | None:
    """The one line ``relay-cli run`` prints at the start (None: no instruction files)."""
    text = summary(discover(repo), runtime)
    return f"instructions: {text}" if text else None


def dialog_found(repo: str) -> Found | None:
    """A quick look at the root of the repository typed in the dialog (subfolders' files
    are found when the session starts); None when it is not a folder."""
    path = Path(repo).expanduser() if repo.strip() else None
    if path is None or not path.is_dir():
        return None
    return discover(path, deep=False)


def dialog_summary(found: Found | None, runtime: str) -> str:
    """What the new-session dialog shows for what :func:`dialog_found` found."""
    if found is None:
        return ""
    text = summary(found, runtime)
    return (f"Instructions: {text}." if text else
            "No instruction files (AGENTS.md, CLAUDE.md, GEMINI.md, …) at the repository's root.")


def dialog_text(repo: str, runtime: str) -> str:
    """What the new-session dialog shows for the chosen repository and runtime."""
    return dialog_summary(dialog_found(repo), runtime)


# --- the run's request ------------------------------------------------------------------

async def pass_on_instructions(request: RunRequest, runtime: str, home: Path,
                               emit: Callable[[AgentEvent], Awaitable[None]]) -> RunRequest:
    """``request`` with the instruction files ``runtime`` does not read itself passed on."""
    if request.options.get("purpose") == "plan":
        return request
    channel = adapter_class(runtime).brief_injection(resuming=request.resume_id is not None)
    if request.resume_id is not None and channel is None:
        return request  # the conversation got them with its first run
    found = await asyncio.to_thread(discover, Path(request.cwd))
    for sentence in found.skipped:
        await emit(Notice(category="warning", message=f"Instructions: {sentence}"))
    placed = placements(runtime, found)
    passed = block(placed)
    if not passed.text:
        return request
    for sentence in passed.cuts:
        await emit(Notice(category="warning", message=f"Instructions for {runtime}: {sentence}"))
    names = ", ".join(p.file.path for p in placed if p.how == "passed_on")
    if channel is None:
        await emit(Notice(message=f"Instructions passed on to {runtime} in the prompt: {names}."))
        return replace(request, prompt=passed.text + SEPARATOR + request.prompt)
    path = await asyncio.to_thread(_write_brief, request, runtime, home, passed.text)
    if path is None:
        return request
    await emit(Notice(message=f"Instructions passed on to {runtime} with its instructions "
                              f"({channel}): {names}."))
    return replace(request, brief_file=path)


def _write_brief(request: RunRequest, runtime: str, home: Path, text: str) -> Path | None:
    """The block (and the continuation brief after it) in a file of Relay's own.

    None when the brief cannot be read: the adapter's own check reports that."""
    if request.brief_file is not None:
        brief = Path(request.cwd) / request.brief_file
        try:
            text = f"{text}\n\n{brief.read_text(encoding='utf-8')}"
        except OSError:
            return None
        target = brief.with_name(f"{brief.stem}+instructions.md")
    else:
        where = hashlib.sha256(str(request.cwd).encode()).hexdigest()[:16]
        target = home / "instructions" / where / f"{runtime}.md"
    try:
        private_dir(target.parent)
        write_atomic(target, text.encode("utf-8"), 0o600)
    except OSError as exc:
        raise RelayError(f"Cannot write the instructions for {runtime} in {target.parent}: "
                         f"{exc.strerror or exc}.", "Check the data folder's free space and "
                         "permissions.") from exc
    return target
