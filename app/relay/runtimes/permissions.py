"""Where a runtime falls short of what a permission policy promises, in words.

:class:`~relay.runtimes.base.PermissionPolicy` promises the same for every runtime:
``read_only`` — read, and run read-only commands, no edits; ``workspace`` — edit files and
run commands in the worktree; ``full`` — no restrictions. docs/architecture.md has the
whole table (permission × runtime → what the agent may do, each cell with its test). A
cell a runtime cannot honour has a :data:`SHORTFALLS` entry here, and the runner says it
at the start of every run of that runtime under that policy (a warning notice), so the
user reads it before the agent works — not afterwards in the docs.

What the runtimes do not *confine* (a command may ``cd`` out of the worktree under Claude,
Gemini, Pi and the HTTP runtimes; only Codex has a sandbox) is in the docs' table, not
here: the commands still run in the worktree as promised.
"""

from __future__ import annotations

from collections.abc import Mapping

from relay.core.models import PermissionPolicy

_RO, _WS = PermissionPolicy.READ_ONLY, PermissionPolicy.WORKSPACE

_HTTP_READ_ONLY = ("{runtime} runs no commands under read_only: Relay's tool loop offers it "
                   "only read_file and list_files.")

#: (runtime, policy) → what that runtime cannot do of the policy's promise
SHORTFALLS: Mapping[tuple[str, PermissionPolicy], str] = {
    ("gemini", _RO): "Gemini CLI runs no commands under read_only: its headless default "
                     "mode offers only the reading and search tools.",
    ("gemini-acp", _RO): "Gemini CLI runs no commands under read_only: its plan mode offers "
                         "only the reading and search tools.",
    ("pi", _RO): "Pi runs no commands under read_only: its tools are read, grep, find and ls.",
    ("pi", _WS): "Pi has no sandbox: under workspace its tools can also read and write files "
                 "outside the worktree.",
    ("claude-acp", _WS): "claude-acp asks before running a command (an ACP permission "
                         "request): with --approvals deny its commands are refused; answer "
                         "them (--approvals ask) or use the claude runtime.",
    **{(name, _RO): _HTTP_READ_ONLY.format(runtime=name)
       for name in ("anthropic", "openai", "openai-chat", "ollama")},
}


def shortfall(runtime: str, policy: PermissionPolicy) -> str | None:
    """What ``runtime`` cannot honour of ``policy`` (None: it does what the policy says)."""
    return SHORTFALLS.get((runtime, policy))
