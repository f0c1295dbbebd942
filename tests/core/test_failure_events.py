"""Failure → events is one rule (relay.core.signals.failure_events), and every runtime and
session store follows it. The copies used to disagree on "overloaded": blocking in some
paths, non-blocking in the editor stores, no limit at all in the transcript store. The
decided answer: an overload that ended the turn is a blocking LimitHit (the handoff
decision retries the same account with a back-off before it hands off); one the agent
survived is a non-blocking one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from relay.core.events import AgentError, AgentEvent, LimitHit
from relay.core.signals import classify, failure_events, named_by_format
from relay.detect.stores import editor_common, transcript
from tests.runtimes.test_claude_stream import capture as claude_capture
from tests.runtimes.test_claude_stream import replay as claude_replay
from tests.runtimes.test_codex_stream import replay as codex_replay
from tests.runtimes.test_gemini_stream import replay as gemini_replay
from tests.runtimes.test_pi_stream import parse as pi_parse

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

#: each path's own recorded (or written) overload failure
OVERLOADS: dict[str, Callable[[], list[AgentEvent]]] = {
    "claude (tests/fixtures/claude: e1_529_overloaded)":
        lambda: claude_replay(claude_capture("e1_529_overloaded/run1")),
    "codex (tests/fixtures/codex: e2_http503_server_is_overloaded)":
        lambda: codex_replay("e2_http503_server_is_overloaded"),
    "gemini (tests/fixtures/gemini: e_503_overloaded)": lambda: gemini_replay("e_503_overloaded"),
    "pi (tests/fixtures/pi: e_503_overloaded)": lambda: pi_parse("e_503_overloaded"),
    "an editor's session store": lambda: editor_common.failure_events(
        "503 The server is overloaded. Please try again later.", runtime="copilot", ts=NOW,
        http_status=503),
    "a CLI transcript store": lambda: transcript.failure_events(
        "claude", 'API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
        '"message":"Overloaded"}}', at=NOW),
}


@pytest.mark.parametrize("path", OVERLOADS)
def test_an_overload_that_ended_the_turn_is_a_blocking_limit_everywhere(path: str) -> None:
    events = OVERLOADS[path]()
    limits = [e for e in events if isinstance(e, LimitHit)]
    errors = [e for e in events if isinstance(e, AgentError) and e.fatal]
    assert [(e.limit, e.blocking) for e in limits] == [("overloaded", True)]
    assert [e.category for e in errors] == ["overloaded"]
    assert events.index(limits[0]) < events.index(errors[0])  # the limit comes first


def test_an_overload_the_agent_survived_is_a_warning_not_a_stop() -> None:
    signal = classify("Overloaded", http_status=529, provider="claude", now=NOW, tz=UTC)
    limit, error = failure_events(signal, "Overloaded", runtime="claude", fatal=False)
    assert isinstance(limit, LimitHit)
    assert (limit.limit, limit.blocking) == ("overloaded", False)
    assert isinstance(error, AgentError)
    assert not error.fatal


def test_a_quota_stays_a_quota_and_a_stated_category_without_a_limit_drops_it() -> None:
    signal = classify("You exceeded your current quota", http_status=429, provider="openai",
                      now=NOW, tz=UTC)
    limit, error = failure_events(signal, "quota", runtime="openai")
    assert isinstance(limit, LimitHit)
    assert limit.limit == "quota"
    assert isinstance(error, AgentError)
    assert error.category == "usage_limit"
    (only,) = failure_events(signal, "quota", runtime="codex", category="config")
    assert isinstance(only, AgentError)
    assert only.category == "config"


def test_a_limit_reported_already_is_not_reported_twice() -> None:
    signal = classify("Rate limit reached", http_status=429, provider="claude", now=NOW, tz=UTC)
    (only,) = failure_events(signal, "Rate limit", runtime="claude", report_limit=False)
    assert isinstance(only, AgentError)
    assert only.category == "rate_limit"


def test_a_formats_flag_names_the_failure_but_never_turns_a_worded_limit_into_another() -> None:
    worded = classify("You exceeded your current quota", provider="copilot", now=NOW, tz=UTC)
    assert named_by_format(worded, "rate_limit", over=False).kind == "quota"
    plain = classify("Something failed", provider="copilot", now=NOW, tz=UTC)
    assert named_by_format(plain, "rate_limit", over=False).kind == "rate_limit"
    assert named_by_format(worded, "quota").kind == "quota"
    assert named_by_format(plain, None) is plain
