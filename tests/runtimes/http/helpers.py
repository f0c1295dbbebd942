"""Shared by the HTTP runtime tests: a Relay engine, a repository, and event helpers."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from relay.core.events import AgentEvent, SessionEnded
from relay.core.models import PermissionPolicy
from relay.engine.engine import Engine
from relay.runtimes.base import RunRequest
from relay.runtimes.registry import make_adapter

KEY = "sk-test-SECRET-0123456789abcdef"
FILES = {"README.md": "# demo\n", "notes.txt": "alpha\nbeta\n"}

#: a task that reads a file, writes one and runs a command, in three tool turns
TOOL_TURNS = [
    ("read_file", {"path": "notes.txt"}),
    ("write_file", {"path": "out/hello.txt", "content": "hello from the model\n"}),
    ("run_command", {"command": "git status --porcelain"}),
]


async def run_adapter(runtime: str, env: dict[str, str], cwd: Path, prompt: str = "do it",
                      **kw: object) -> list[AgentEvent]:
    """Every event of one adapter run (asserting exactly one SessionEnded, at the end)."""
    adapter = make_adapter(runtime, env)
    request = RunRequest(prompt=prompt, cwd=cwd, **kw)  # type: ignore[arg-type]
    events = [e async for e in adapter.run(request)]
    ended = [e for e in events if e.kind == "session_ended"]
    assert len(ended) == 1, [e.kind for e in events]
    assert events[-1] is ended[0], [e.kind for e in events]
    return events


E = TypeVar("E")


def of(events: list[AgentEvent], cls: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, cls)]


def ended(events: list[AgentEvent]) -> SessionEnded:
    last = events[-1]
    assert isinstance(last, SessionEnded)
    return last


async def session_texts(engine: Engine, session_id: str) -> str:
    """Every stored event of a session as JSON text (for secret checks)."""
    return "\n".join(r.event.model_dump_json() for r in await engine.session_events(session_id))


READ_ONLY = PermissionPolicy.READ_ONLY
FULL = PermissionPolicy.FULL
