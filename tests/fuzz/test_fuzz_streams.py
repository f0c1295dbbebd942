"""Each runtime's stream parser over generated lines: malformed output is reported as an
event, never raised (StreamParser.feed_text's contract), and finish() still ends the run."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay.core.events import SessionEnded
from relay.core.procs import ProcessResult
from relay.runtimes.acp_map import AcpEventMapper
from relay.runtimes.base import StreamParser
from relay.runtimes.claude_stream import ClaudeStreamParser
from relay.runtimes.codex_stream import CodexStreamParser
from relay.runtimes.gemini_stream import GeminiStreamParser
from relay.runtimes.pi_stream import PiStreamParser
from tests.fuzz.strategies import FUZZ, json_values, lines

#: the fields the four formats use, so generated objects reach the parsers' branches
KEYS = ["type", "subtype", "message", "content", "text", "id", "name", "input", "tool_use_id",
        "is_error", "result", "usage", "input_tokens", "output_tokens", "session_id", "model",
        "msg", "item", "event", "delta", "role", "status", "error", "stats", "tool_calls",
        "thread_id", "turn", "command", "exit_code", "aggregated_output", "timestamp",
        "cache_read_input_tokens", "total_cost_usd", "num_turns", "rate_limit_info", "resetsAt",
        "details", "toolCallId", "args", "assistantMessageEvent", "stopReason", "cwd"]

PARSERS: dict[str, Callable[[], StreamParser]] = {
    "claude": ClaudeStreamParser, "codex": CodexStreamParser,
    "gemini": GeminiStreamParser, "pi": PiStreamParser,
}


@pytest.mark.parametrize("runtime", sorted(PARSERS))
@FUZZ
@given(stream=st.lists(lines(KEYS), max_size=12), code=st.sampled_from([0, 1, None]))
def test_a_stream_parser_never_raises_on_what_an_agent_prints(
        runtime: str, stream: list[str], code: int | None) -> None:
    parser = PARSERS[runtime]()
    for line in stream:
        parser.feed_text(line)
    ended = parser.finish(ProcessResult(exit_code=code, signal=None if code is not None else 9,
                                        stderr_tail=""))
    assert [type(e) for e in ended].count(SessionEnded) == 1
    assert isinstance(ended[-1], SessionEnded)


ACP_KEYS = ["sessionUpdate", "content", "type", "text", "toolCallId", "title", "kind", "status",
            "rawInput", "rawOutput", "locations", "path", "entries", "priority", "plan",
            "agent_message_chunk", "tool_call", "tool_call_update", "update"]


@FUZZ
@given(updates=st.lists(st.dictionaries(st.sampled_from(ACP_KEYS), json_values(ACP_KEYS),
                                        max_size=6), max_size=10))
def test_the_acp_mapper_never_raises_on_session_updates(updates: list[dict[str, object]]) -> None:
    mapper = AcpEventMapper("gemini")
    for update in updates:
        mapper.update({"sessionId": "s", "update": update})
        mapper.update(update)
    mapper.flush()
