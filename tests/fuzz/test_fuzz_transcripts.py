"""The agents' own session files, generated: each store's reader takes any JSONL lines or
bytes (a damaged, truncated, hostile or half-written transcript) without raising; what it
cannot read is a problem it reports."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay.detect.stores.base import StoreItem
from relay.detect.stores.claude import ClaudeStore
from relay.detect.stores.codex import CodexStore
from relay.detect.stores.gemini import GeminiStore
from relay.detect.stores.pi import PiStore
from tests.fuzz.strategies import FUZZ, bytes_lines

KEYS = ["type", "message", "content", "text", "role", "id", "name", "input", "tool_use_id",
        "usage", "input_tokens", "output_tokens", "sessionId", "session_id", "cwd", "timestamp",
        "payload", "model", "parentUuid", "uuid", "isSidechain", "toolUseResult", "messages",
        "projectHash", "startTime", "lastUpdated", "toolCalls", "tokens", "stopReason",
        "customType", "data", "provider", "summary", "leafUuid", "event_msg", "response_item"]

STORES: dict[str, Callable[[], object]] = {
    "claude": ClaudeStore, "codex": CodexStore, "gemini": GeminiStore, "pi": PiStore,
}
NAMES = {"claude": "0b7c-session.jsonl", "codex": "rollout-2026-01-01T00-00-00-0b7c.jsonl",
         "gemini": "session-2026-01-01T00-00-0b7c.jsonl", "pi": "2026-01-01_0b7c.jsonl"}


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


@pytest.mark.parametrize("runtime", sorted(STORES))
@FUZZ
@given(body=st.lists(bytes_lines(KEYS), max_size=10), end=st.sampled_from([b"\n", b"", b"\r\n"]))
def test_a_store_reads_any_transcript_without_raising(
        runtime: str, folder: Path, body: list[bytes], end: bytes) -> None:
    path = folder / runtime / NAMES[runtime]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\n".join(body) + end)
    info = path.stat()
    item = StoreItem(runtime, "0b7c", runtime, path, info.st_size, info.st_mtime_ns)
    read = STORES[runtime]().read(item)  # type: ignore[attr-defined]
    assert read.item == item
    assert all(isinstance(p, str) for p in read.problems)
