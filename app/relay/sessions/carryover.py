"""Native conversation carry-over between two accounts of the same provider.

An *account* is an isolated state folder of one agent CLI: ``CLAUDE_CONFIG_DIR`` for
Claude Code, ``CODEX_HOME`` for Codex. When one account hits its usage limit, the
conversation can continue *natively* (``claude --resume <id>``, ``codex exec resume
<id>``) under the next account of the same provider, provided the next account's
folder holds the session's files. :func:`carry_conversation` copies them there.

What is carried, and what the real CLIs were seen to need (verified by running the
pinned CLIs against the loopback mocks, ``tests/integration/test_carryover_real.py``):

Claude Code 2.1.197
    ``projects/<encoded cwd>/<id>.jsonl`` — the transcript — is **all** that
    ``claude -p … --resume <id>`` needs: with only that file in a fresh
    ``CLAUDE_CONFIG_DIR`` it re-sends the whole earlier conversation under the same
    session id and appends to the file. There is no session index to update (the
    ``sessions/`` folder holds running processes, ``.claude.json`` no per-session
    state). The CLI's own per-session cleanup list names the other per-session
    state, which is carried along when present so the continuation is faithful:
    ``projects/<encoded cwd>/<id>/`` (subagent transcripts, persisted large tool
    results the transcript points at), ``tasks/<id>/`` (the task list; lock files
    are skipped) and ``file-history/<id>/`` (edit checkpoints). Not carried:
    ``debug/<id>.txt``, ``session-env/<id>`` (hook environments may hold secrets),
    the project's ``memory/`` folder (it belongs to the account, not the session),
    ``.claude.json``.

Codex 0.171.0
    The rollout ``sessions/YYYY/MM/DD/rollout-<ts>-<thread id>.jsonl`` is all that
    ``codex exec resume <id>`` needs, copied to the same relative path. Codex finds a
    rollout its SQLite state (``state_5.sqlite`` ``threads``) does not know by scanning
    ``sessions/`` — in a fresh ``CODEX_HOME`` and in one whose state database already
    has other threads — and then records the thread itself; resume reads the history
    from the rollout, not from ``thread_history_1.sqlite``, so a rollout brought up to
    date (a round trip A → B → A) resumes with the turns added in B. The databases are
    therefore never touched. There is no ``session_index.jsonl`` in this version.

Limits of that verification: the accounts were API-key accounts (the loopback mocks
cannot stand in for a claude.ai / ChatGPT sign-in). Nothing in a Claude transcript names
the account (``metadata.user_id`` is built per request from the current login). A Codex
rollout's ``session_meta`` carries ``account_scoped: true`` and, under a ChatGPT sign-in,
may carry ``creator_user_id`` / ``creator_account_id``; a rollout with foreign values
planted there still resumed under an API key, and the 0.171.0 binary's only related
message is "ignoring conflicting thread ownership" — but resuming under a *different
ChatGPT account* was not exercised.

Rules:

* the source folder is only read; credentials (``.credentials.json``, ``auth.json``)
  are never copied, nor symbolic links, lock files or anything outside the session's
  own files;
* the target only gains files: a file already there is left alone when identical,
  and replaced only when it is this session's own file and the target's transcript
  is an older state of the same conversation (a strict prefix of the source's, e.g.
  after a round trip). A target whose transcript differs otherwise (it was continued
  there, or is another conversation under the same id) is a conflict: nothing is
  written. A target transcript that already *extends* the source's is newer: nothing
  is written and resuming there is possible;
* every file is written atomically (a temporary file in the same folder, then a
  rename; a new file is linked into place so a file that appeared meanwhile is never
  overwritten); the transcript is written last, so the resumable state appears only
  when everything it refers to is in place;
* the transcript is validated before anything is written: every line a JSON object,
  the last line complete, and the content belongs to this session;
* expected problems (unknown runtime, malformed id, no transcript, corrupt or
  truncated transcript, a conflict, an OS error while writing) come back as a
  :class:`CarryResult` with ``possible=False`` and a sentence saying why; nothing is
  raised for them.

Blocking file I/O: call it through ``asyncio.to_thread`` from async code.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from relay.core import jsonvalue
from relay.core.agent_homes import CLAUDE_CREDENTIALS, CODEX_AUTH, ClaudeHome, claude_home, codex_home
from relay.core.fsutil import create_atomic, write_atomic
from relay.runtimes.codex import find_rollout

#: Runtimes whose conversations can be carried between accounts.
CARRIABLE_RUNTIMES = ("claude", "codex")

#: File names never copied, wherever they appear.
CREDENTIAL_NAMES = frozenset({CLAUDE_CREDENTIALS, CODEX_AUTH})

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_THREAD_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,127}")
_FILE_MODE = 0o600


@dataclass(frozen=True)
class CarryResult:
    """What :func:`carry_conversation` did and whether the target can resume natively.

    Attributes:
        runtime: The runtime asked for.
        agent_session_id: The agent's own session (Claude) / thread (Codex) id.
        possible: The target account can now resume this conversation natively.
        reason: One sentence: why not (``possible=False``), else what was done.
        source: The transcript / rollout in the source account, when found.
        target: Where it is (now) in the target account, when known.
        copied: Files created in the target account.
        replaced: Older copies of this session's own files in the target brought up to date.
        skipped: Source files deliberately left out (credentials, links, locks).
    """

    runtime: str
    agent_session_id: str
    possible: bool
    reason: str
    source: Path | None = None
    target: Path | None = None
    copied: tuple[Path, ...] = ()
    replaced: tuple[Path, ...] = ()
    skipped: tuple[Path, ...] = ()


class _NotPossible(Exception):
    """An expected reason why the carry cannot happen (turned into a CarryResult)."""

    def __init__(self, reason: str, source: Path | None = None, target: Path | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.source = source
        self.target = target


class _Appeared(Exception):
    """A file that was absent when planned exists when it is written (never overwritten)."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


@dataclass(frozen=True)
class _Write:
    destination: Path
    data: bytes
    replace: bool  # True: an older copy is there; False: a new file


@dataclass
class _Plan:
    source: Path
    target: Path
    main: _Write | None = None                       # None: the target already has it (or newer)
    extras: list[_Write] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    target_newer: bool = False
    same_folder: bool = False                         # source and target are one account folder


def carry_conversation(runtime: str, agent_session_id: str, cwd: Path,
                       source_env: Mapping[str, str], target_env: Mapping[str, str]) -> CarryResult:
    """Copy one conversation's files from the source account's folder into the target's.

    Args:
        runtime: ``"claude"`` or ``"codex"`` (anything else: not possible).
        agent_session_id: Claude's session id (a UUID) or Codex's thread id.
        cwd: The directory the agent ran in (Claude files transcripts by it).
        source_env: The source account's environment (``CLAUDE_CONFIG_DIR`` /
            ``CODEX_HOME``; unset means the CLI's default folder).
        target_env: The target account's environment, likewise.

    Returns:
        A :class:`CarryResult`; ``possible`` says whether ``--resume`` /
        ``exec resume`` with the target environment will find the conversation.
    """
    planner = _PLANNERS.get(runtime)
    if planner is None:
        known = ", ".join(CARRIABLE_RUNTIMES)
        return CarryResult(runtime, agent_session_id, False,
                           f"Runtime {runtime!r} has no native carry-over (only {known}); "
                           "the conversation continues from the continuation contract.")
    try:
        plan = planner(agent_session_id, Path(cwd), source_env, target_env)
        return _execute(runtime, agent_session_id, plan)
    except _NotPossible as exc:
        return CarryResult(runtime, agent_session_id, False, exc.reason,
                           source=exc.source, target=exc.target)


# ---------------------------------------------------------------------------- Claude


def _plan_claude(session_id: str, cwd: Path, source_env: Mapping[str, str],
                 target_env: Mapping[str, str]) -> _Plan:
    if not _UUID.fullmatch(session_id):
        raise _NotPossible(f"{session_id!r} is not a Claude Code session id (a UUID).")
    src, dst = claude_home(source_env), claude_home(target_env)
    source, target = src.transcript(cwd, session_id), dst.transcript(cwd, session_id)
    data = _read_transcript(source, lambda: _claude_elsewhere(src, session_id, cwd))
    _check_claude(data, source, session_id)
    if _same_folder(src.root, dst.root):
        return _Plan(source, source, same_folder=True)
    plan = _Plan(source, target)
    _plan_main(plan, data)
    if not plan.target_newer:
        # The session's own state, as the CLI's per-session cleanup lists it.
        for src_dir, dst_dir in ((source.with_suffix(""), target.with_suffix("")),
                                 (src.tasks(session_id), dst.tasks(session_id)),
                                 (src.file_history(session_id), dst.file_history(session_id))):
            _plan_tree(plan, src_dir, dst_dir)
    return plan


def _claude_elsewhere(home: ClaudeHome, session_id: str, cwd: Path) -> str:
    projects = home.projects
    found = sorted(projects.glob(f"*/{session_id}.jsonl")) if projects.is_dir() else []
    if found:
        return (f" It exists under another project folder ({found[0].parent.name}): the session "
                f"ran in a different directory than {cwd}.")
    return ""


def _check_claude(data: bytes, source: Path, session_id: str) -> None:
    if not any(entry.get("type") in ("user", "assistant") and entry.get("sessionId") == session_id
               for _, entry in _entries(data, source)):
        raise _NotPossible(f"{source} holds no message of session {session_id}: there is no "
                           "conversation to resume.", source=source)


# ---------------------------------------------------------------------------- Codex


def _plan_codex(thread_id: str, cwd: Path, source_env: Mapping[str, str],
                target_env: Mapping[str, str]) -> _Plan:
    if not _THREAD_ID.fullmatch(thread_id):
        raise _NotPossible(f"{thread_id!r} is not a Codex thread id.")
    src_home, dst_home = codex_home(source_env).root, codex_home(target_env).root
    source = find_rollout(src_home, thread_id)
    if source is None:
        raise _NotPossible(f"No rollout of Codex thread {thread_id} under {src_home / 'sessions'} "
                           "in the source account.")
    data = _read_transcript(source, lambda: "")
    _check_codex(data, source, thread_id)
    if _same_folder(src_home, dst_home):
        return _Plan(source, source, same_folder=True)
    target = dst_home / source.relative_to(src_home)
    existing = find_rollout(dst_home, thread_id)
    if existing is not None and existing != target:
        raise _NotPossible(f"The target account already has a rollout of thread {thread_id} at "
                           f"{existing}; a second one would be ambiguous, nothing was copied.",
                           source=source, target=existing)
    plan = _Plan(source, target)
    _plan_main(plan, data)
    return plan


def _check_codex(data: bytes, source: Path, thread_id: str) -> None:
    for number, entry in _entries(data, source):
        if number > 1:
            continue
        payload = entry.get("payload")
        ids = ({payload.get("id"), payload.get("session_id")} if isinstance(payload, dict)
               else set())
        if entry.get("type") != "session_meta" or thread_id not in ids:
            raise _NotPossible(f"{source} does not start with the session_meta of thread "
                               f"{thread_id}: not a rollout of this thread.", source=source)


_PLANNERS: dict[str, Callable[[str, Path, Mapping[str, str], Mapping[str, str]], _Plan]] = {
    "claude": _plan_claude,
    "codex": _plan_codex,
}


# ---------------------------------------------------------------------------- shared


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _read_transcript(path: Path, hint: Callable[[], str]) -> bytes:
    """The source transcript's bytes (one read: what is validated is what is copied)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise _NotPossible(f"No transcript at {path} in the source account.{hint()}") from None
    except OSError as exc:
        raise _NotPossible(f"Cannot read {path}: {exc.strerror or exc}.", source=path) from None
    if not stat.S_ISREG(info.st_mode):
        raise _NotPossible(f"{path} is not a regular file (a link or a folder); not copied.",
                           source=path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _NotPossible(f"Cannot read {path}: {exc.strerror or exc}.", source=path) from None
    if not data.strip():
        raise _NotPossible(f"{path} is empty: there is no conversation to resume.", source=path)
    if not data.endswith(b"\n"):
        raise _NotPossible(f"{path} is truncated: its last line is incomplete (the agent may "
                           "still be writing it, or was killed mid-write).", source=path)
    return data


def _entries(data: bytes, source: Path) -> list[tuple[int, dict[str, object]]]:
    """(line number, object) of every non-blank line; a line that is not a JSON object
    makes the transcript corrupt."""
    found: list[tuple[int, dict[str, object]]] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            value = jsonvalue.loads(line, fast=True)
        except ValueError:
            raise _NotPossible(f"{source} is corrupt: line {number} is not valid JSON.",
                               source=source) from None
        if not isinstance(value, dict):
            raise _NotPossible(f"{source} is corrupt: line {number} is not a JSON object.",
                               source=source)
        found.append((number, value))
    return found


def _existing(path: Path) -> bytes | None:
    """The target file's bytes, ``None`` if absent; a link or folder there is a conflict."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _NotPossible(f"Cannot inspect {path} in the target account: {exc.strerror or exc}.",
                           target=path) from None
    if not stat.S_ISREG(info.st_mode):
        raise _NotPossible(f"{path} in the target account is not a regular file; nothing was "
                           "copied.", target=path)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _NotPossible(f"Cannot read {path} in the target account: {exc.strerror or exc}.",
                           target=path) from None


def _plan_main(plan: _Plan, data: bytes) -> None:
    """Decide about the transcript: create, bring up to date, leave, or conflict."""
    current = _existing(plan.target)
    if current is None:
        plan.main = _Write(plan.target, data, replace=False)
    elif current == data:
        plan.main = None
    elif data.startswith(current):
        plan.main = _Write(plan.target, data, replace=True)   # an older state of this conversation
    elif current.startswith(data):
        plan.target_newer = True                              # continued in the target already
    else:
        raise _NotPossible(f"The target account already has a different transcript at "
                           f"{plan.target} (not an earlier or later state of the source's); it was "
                           "left as it is and nothing was copied.",
                           source=plan.source, target=plan.target)


def _plan_tree(plan: _Plan, src_dir: Path, dst_dir: Path) -> None:
    """Plan copies of the regular files under ``src_dir`` (links never followed)."""
    if not src_dir.is_dir() or src_dir.is_symlink():
        return
    for folder, dirs, files in os.walk(src_dir, followlinks=False):
        base = Path(folder)
        for name in sorted(dirs):
            if (base / name).is_symlink():
                plan.skipped.append(base / name)
        for name in sorted(files):
            path = base / name
            if name in CREDENTIAL_NAMES or name.endswith(".lock"):
                plan.skipped.append(path)
                continue
            try:
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode):
                    plan.skipped.append(path)
                    continue
                data = path.read_bytes()
            except OSError as exc:
                raise _NotPossible(f"Cannot read {path}: {exc.strerror or exc}.",
                                   source=plan.source) from None
            destination = dst_dir / path.relative_to(src_dir)
            current = _existing(destination)
            if current != data:
                plan.extras.append(_Write(destination, data, replace=current is not None))


def _execute(runtime: str, session_id: str, plan: _Plan) -> CarryResult:
    copied: list[Path] = []
    replaced: list[Path] = []
    writes = [*plan.extras, *([plan.main] if plan.main else [])]   # the transcript last
    try:
        for write in writes:
            if write.replace:
                write_atomic(write.destination, write.data, _FILE_MODE)
                replaced.append(write.destination)
            else:
                _create_atomic(write.destination, write.data)
                copied.append(write.destination)
    except _Appeared as exc:
        return CarryResult(runtime, session_id, False,
                           f"{exc.path} appeared in the target account while copying; it was "
                           "not overwritten.", plan.source, plan.target, tuple(copied),
                           tuple(replaced), tuple(plan.skipped))
    except OSError as exc:
        where = exc.filename or plan.target
        return CarryResult(runtime, session_id, False,
                           f"Cannot write {where} in the target account: {exc.strerror or exc}.",
                           plan.source, plan.target, tuple(copied), tuple(replaced),
                           tuple(plan.skipped))
    if plan.same_folder:
        reason = "Source and target use the same folder: nothing to copy."
    elif plan.target_newer:
        reason = "The target account already has this conversation, continued further; left as is."
    elif not writes:
        reason = "The target account already has this conversation."
    else:
        reason = f"Copied {len(copied)} and updated {len(replaced)} file(s) into the target account."
    return CarryResult(runtime, session_id, True, reason, plan.source, plan.target,
                       tuple(copied), tuple(replaced), tuple(plan.skipped))


def _create_atomic(path: Path, data: bytes) -> None:
    """Write a new file atomically; raises :class:`_Appeared` rather than replace one."""
    try:
        create_atomic(path, data, _FILE_MODE)
    except FileExistsError:
        raise _Appeared(path) from None
