"""Helpers for the transcript tests: writable copies of the recorded captures, synthetic lines."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

CopyTree = Callable[[Path, Path], Path]


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy ``src`` (a file or folder) to ``dst`` without its read-only modes; ``dst``."""
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        return dst
    for item in sorted(src.rglob("*")):
        target = dst / item.relative_to(src)
        if item.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(item, target)
    return dst


@pytest.fixture
def captures(fixtures_dir: Path) -> Callable[[str, str], Path]:
    """``captures("claude", "b_write_tool")`` → that capture's folder (read-only)."""

    def folder(runtime: str, scenario: str) -> Path:
        path = fixtures_dir / runtime / "captures" / scenario
        assert path.is_dir(), path
        return path

    return folder


def only(pattern: str, folder: Path) -> Path:
    """The one file under ``folder`` matching ``pattern``."""
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def claude_line(msg_id: str | None, request_id: str | None, ts: str, *, output: int = 10,
                input_tokens: int = 100, model: str = "claude-opus-4-8", session: str = "s1",
                cwd: str = "/work/p", **extra: Any) -> bytes:
    """One Claude Code assistant transcript line (as the recorded ones, fewer fields)."""
    message: dict[str, Any] = {
        "model": model, "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "usage": {"input_tokens": input_tokens, "output_tokens": output,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
    if msg_id is not None:
        message["id"] = msg_id
    obj: dict[str, Any] = {"type": "assistant", "message": message, "timestamp": ts,
                           "sessionId": session, "cwd": cwd, **extra}
    if request_id is not None:
        obj["requestId"] = request_id
    return orjson.dumps(obj) + b"\n"


def user_line(text: str = "tool output " * 20) -> bytes:
    """A ``type:"user"`` tool-result line (no usage)."""
    return orjson.dumps({"type": "user", "message": {"role": "user", "content": text},
                         "timestamp": "2026-11-30T10:00:00.000Z"}) + b"\n"
