"""The tools an HTTP runtime's agent loop offers the model, and how they run.

Five tools, described once in a neutral form (name, description, JSON schema) that each
provider module turns into its wire format:

* ``read_file`` and ``list_files`` only read;
* ``write_file``, ``edit_file`` (replace one unique string) and ``run_command`` change
  things.

The permission policy decides what is offered and where paths may point:

* ``read_only`` — only the reading tools are offered (a call to another is refused);
* ``workspace`` — every tool; every path must resolve (symlinks followed) inside the
  worktree;
* ``full`` — every tool, and absolute paths anywhere are allowed (like Claude's bypass
  mode). Relative paths are always taken from the worktree.

``run_command`` splits its ``command`` string with :func:`shlex.split` (or takes an
argument array) and runs it **without a shell** in the worktree, in its own process
group, with stdin closed, a timeout (the whole group is killed) and its output capped.
Its environment is the user's minus every credential Relay knows of: the API key that
reaches the HTTP client never reaches a command. Confinement does not extend into what
a command does — ``workspace`` trusts commands as Claude's and Codex's workspace modes do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay.core.jsonvalue import as_number
from relay.core.models import PermissionPolicy

MAX_READ = 100_000          # characters returned by read_file
MAX_OUTPUT = 16_000         # characters of command output kept (head and tail)
MAX_ENTRIES = 500           # list_files entries
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool


def function_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The tools in the Chat Completions shape (OpenAI-compatible servers and Ollama)."""
    return [{"type": "function", "function": {
        "name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools]


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


_STR = {"type": "string"}
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("read_file", "Read a text file of the repository (path relative to its root).",
             _obj({"path": _STR}, ["path"]), read_only=True),
    ToolSpec("list_files", "List the files under a folder of the repository (recursively, "
             "without .git).", _obj({"path": _STR}, []), read_only=True),
    ToolSpec("write_file", "Create or overwrite a file with the given content.",
             _obj({"path": _STR, "content": _STR}, ["path", "content"]), read_only=False),
    ToolSpec("edit_file", "Replace one occurrence of old_text (which must occur exactly once) "
             "with new_text.", _obj({"path": _STR, "old_text": _STR, "new_text": _STR},
                                    ["path", "old_text", "new_text"]), read_only=False),
    ToolSpec("run_command", "Run a command in the repository without a shell (no pipes, "
             "redirections or globs); returns its exit code and output.",
             _obj({"command": _STR, "timeout_s": {"type": "number"}}, ["command"]),
             read_only=False),
)
BY_NAME = {t.name: t for t in TOOLS}


def offered(policy: PermissionPolicy) -> list[ToolSpec]:
    """The tools the model is told about under ``policy``."""
    if policy == PermissionPolicy.READ_ONLY:
        return [t for t in TOOLS if t.read_only]
    return list(TOOLS)


class ToolRefused(Exception):
    """The policy refuses this call (becomes a PermissionDenied and an error result)."""


class ToolFailed(Exception):
    """The call was allowed but did not work (becomes an error result)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    output: str
    is_error: bool = False
    exit_code: int | None = None


class Toolbox:
    """Runs tool calls in one worktree under one policy."""

    def __init__(self, root: Path, policy: PermissionPolicy, env: Mapping[str, str]) -> None:
        self.root = root.resolve()
        self.policy = policy
        self.env = dict(env)
        self._procs: set[asyncio.subprocess.Process] = set()

    async def call(self, name: str, args: Mapping[str, Any]) -> Outcome:
        """Run one call. Raises :class:`ToolRefused` when the policy forbids it."""
        spec = BY_NAME.get(name)
        if spec is None:
            return Outcome(f"Unknown tool {name!r}. Available: "
                           f"{', '.join(t.name for t in offered(self.policy))}.", is_error=True)
        if spec not in offered(self.policy):
            raise ToolRefused(f"{name} is not allowed under the {self.policy.value} policy.")
        try:
            if name == "run_command":
                return await self._run(args)
            return await asyncio.to_thread(self._file_tool, name, args)
        except ToolFailed as exc:
            return Outcome(str(exc), is_error=True)

    # -- files ---------------------------------------------------------------------------

    def path(self, raw: object, *, default: str | None = None) -> Path:
        """``raw`` resolved from the worktree; outside it only under ``full``."""
        if raw is None and default is not None:
            raw = default
        if not isinstance(raw, str) or not raw.strip():
            raise ToolFailed("A non-empty 'path' string is required.")
        target = (self.root / raw).resolve()
        if self.policy != PermissionPolicy.FULL and not target.is_relative_to(self.root):
            raise ToolRefused(f"{raw} is outside the worktree; only {self.policy.value} paths "
                              "inside it are allowed.")
        return target

    def _file_tool(self, name: str, args: Mapping[str, Any]) -> Outcome:
        try:
            if name == "read_file":
                return self._read(self.path(args.get("path")))
            if name == "list_files":
                return self._list(self.path(args.get("path"), default="."))
            target = self.path(args.get("path"))
            if target.is_relative_to(self.root) and ".git" in target.relative_to(self.root).parts:
                raise ToolRefused("Relay does not let the agent write inside .git.")
            if name == "write_file":
                return self._write(target, args.get("content"))
            return self._edit(target, args.get("old_text"), args.get("new_text"))
        except OSError as exc:
            raise ToolFailed(f"{exc.strerror or exc}: {args.get('path')}") from exc

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)

    def _read(self, path: Path) -> Outcome:
        if not path.is_file():
            raise ToolFailed(f"{self._shown(path)} is not a file.")
        text = path.read_text(encoding="utf-8", errors="replace")
        if len(text) > MAX_READ:
            text = text[:MAX_READ] + f"\n… (truncated: {len(text)} characters in all)"
        return Outcome(text)

    def _list(self, folder: Path) -> Outcome:
        if not folder.is_dir():
            raise ToolFailed(f"{self._shown(folder)} is not a folder.")
        names: list[str] = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            base = Path(dirpath)
            # in a worktree .git is a file pointing at the repository: never listed either
            names.extend(self._shown(base / f) for f in sorted(filenames) if f != ".git")
            if len(names) > MAX_ENTRIES:
                return Outcome("\n".join(names[:MAX_ENTRIES]) + f"\n… (more than {MAX_ENTRIES})")
        return Outcome("\n".join(names) or "(no files)")

    def _write(self, path: Path, content: object) -> Outcome:
        if not isinstance(content, str):
            raise ToolFailed("'content' must be a string.")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return Outcome(f"Wrote {len(content.encode())} bytes to {self._shown(path)}.")

    def _edit(self, path: Path, old: object, new: object) -> Outcome:
        if not isinstance(old, str) or not old or not isinstance(new, str):
            raise ToolFailed("'old_text' (non-empty) and 'new_text' must be strings.")
        if not path.is_file():
            raise ToolFailed(f"{self._shown(path)} is not a file.")
        text = path.read_text(encoding="utf-8")
        count = text.count(old)
        if count != 1:
            raise ToolFailed(f"old_text occurs {count} times in {self._shown(path)}; it must "
                             "occur exactly once (quote more context).")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        return Outcome(f"Edited {self._shown(path)}.")

    # -- commands ------------------------------------------------------------------------

    async def _run(self, args: Mapping[str, Any]) -> Outcome:
        argv = _argv(args.get("command"))
        asked = as_number(args.get("timeout_s"))  # the model's: nan, -1 or "x" is the default
        timeout = min(asked if asked is not None and asked > 0 else DEFAULT_TIMEOUT, MAX_TIMEOUT)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=self.root, env=self.env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True)
        except OSError as exc:
            raise ToolFailed(f"Cannot run {argv[0]}: {exc.strerror or exc}.") from exc
        except ValueError as exc:  # a NUL byte in an argument
            raise ToolFailed(f"Cannot run {argv[0]!r}: {exc}.") from exc
        self._procs.add(proc)
        try:
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), timeout)
            except TimeoutError:
                await _kill_group(proc)
                return Outcome(f"{shlex.join(argv)} did not finish within {timeout:g} s and was "
                               "killed.", is_error=True)
        finally:
            self._procs.discard(proc)
        text = _cap(out.decode("utf-8", errors="replace"))
        code = proc.returncode
        return Outcome(f"exit code {code}\n{text}".rstrip(), is_error=code != 0, exit_code=code)

    async def kill_all(self) -> None:
        """Kill every command still running (their whole process groups)."""
        for proc in list(self._procs):
            await _kill_group(proc)


def _argv(command: object) -> list[str]:
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        return list(command)
    if not isinstance(command, str) or not command.strip():
        raise ToolFailed("'command' must be a non-empty command line.")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ToolFailed(f"Cannot split the command line: {exc}.") from exc
    if not argv:
        raise ToolFailed("'command' is empty.")
    return argv


def _cap(text: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    half = MAX_OUTPUT // 2
    return f"{text[:half]}\n… ({len(text) - MAX_OUTPUT} characters cut) …\n{text[-half:]}"


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()
