"""relay.core.signals over every wording variant, with a fixed clock (part 3).

The wordings come from the fixtures and the public trackers; how a reset time is read
out of them at the edges is in test_signals_reset_times.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

import pytest

from relay.core.signals import classify
from tests.core.signal_helpers import NOW, at

NEW_YORK = ZoneInfo("America/New_York")


@dataclass(frozen=True)
class Wording:
    text: str
    kind: str
    resets_at: datetime | None = None
    retry_after: float | None = None
    scope: str | None = None
    tz: tzinfo | None = UTC
    http_status: int | None = None


WORDINGS = [
    # Claude Code 2.1.x, from the captures and the public tracker
    Wording("You've hit your session limit · resets 12:05pm (UTC)", "usage_limit",
            at(2026, 11, 30, 12, 5), scope="five_hour"),
    Wording("You’ve hit your session limit · resets 12:05pm (UTC)", "usage_limit",
            at(2026, 11, 30, 12, 5), scope="five_hour"),
    Wording("You've hit your session limit · resets 8:50am (UTC)", "usage_limit",
            at(2026, 12, 1, 8, 50), scope="five_hour"),  # already past today: tomorrow
    Wording("You've hit your weekly limit · resets Dec 3, 10:05am (UTC)", "usage_limit",
            at(2026, 12, 3, 10, 5), scope="seven_day"),
    Wording("You've hit your weekly limit · resets Sep 18 at 3am (America/Los_Angeles)",
            "usage_limit", at(2027, 9, 18, 10, 0), scope="seven_day"),
    Wording("weekly limit · resets Sep 18 at 3am (America/Los_Angeles)", "usage_limit",
            at(2027, 9, 18, 10, 0), scope="seven_day"),
    Wording("You've hit your 5-hour limit · resets 4:50am (Europe/Rome)", "usage_limit",
            at(2026, 12, 1, 3, 50), scope="five_hour"),
    Wording("You've hit your limit · resets 4:50am (Europe/Rome)", "usage_limit",
            at(2026, 12, 1, 3, 50)),
    Wording("You've hit your Opus limit · resets 9pm (Asia/Tokyo)", "usage_limit",
            at(2026, 11, 30, 12, 0), scope="seven_day_opus"),
    Wording("You've hit your session limit · resets 5:20am (America/Denver)\n"
            "     /usage-credits to finish what you’re working on.", "usage_limit",
            at(2026, 11, 30, 12, 20), scope="five_hour"),
    Wording("You've reached your Fable limit.", "usage_limit", scope="fable"),
    # A named zone wins over the process zone.
    Wording("You've hit your session limit · resets 12:05pm (UTC)", "usage_limit",
            at(2026, 11, 30, 12, 5), scope="five_hour", tz=NEW_YORK),
    # Claude Code 1.x
    Wording("Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).",
            "usage_limit", at(2026, 11, 30, 16, 0)),
    Wording("Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).",
            "usage_limit", at(2026, 11, 30, 18, 0)),
    Wording("Claude AI usage limit reached|1760000400", "usage_limit", at(2025, 10, 9, 9, 0)),
    Wording("5-hour limit reached ∙ resets 3pm", "usage_limit", at(2026, 11, 30, 20, 0),
            scope="five_hour", tz=NEW_YORK),
    Wording("Session limit reached ∙ resets 9:30pm", "usage_limit", at(2026, 11, 30, 20, 30),
            scope="five_hour", tz=ZoneInfo("Europe/Berlin")),
    Wording("Opus weekly limit reached ∙ resets Oct 31, 9am", "usage_limit",
            at(2027, 10, 31, 9, 0), scope="seven_day_opus"),
    Wording("5-hour limit reached · resets 2am (America/Toronto) · /upgrade to Max 20x or "
            "turn on /extra-usage", "usage_limit", at(2026, 12, 1, 7, 0), scope="five_hour"),
    Wording("You’ve hit your limit for Claude messages. Limits will reset at 9:30 AM.",
            "usage_limit", at(2026, 12, 1, 9, 30)),
    # Claude Code failures
    Wording("API Error: Repeated 529 Overloaded errors. The API is at capacity — this is "
            "usually temporary. Try again in a moment.", "overloaded"),
    Wording("API Error: 529 Overloaded. This is a server-side issue, usually temporary — try "
            "again in a moment.", "overloaded", http_status=529),
    Wording("API Error: Request rejected (429) · This request would exceed the rate limit for "
            "your organization (mock-org) of 50 requests per minute.", "rate_limit"),
    Wording("API Error: Server is temporarily limiting requests (not your usage limit) · Error",
            "rate_limit", http_status=429),
    Wording("API Error: 400 messages.0.content: mock invalid request (field required)",
            "invalid_request"),
    Wording("Invalid API key · Fix external API key", "auth"),
    Wording("Your credit balance is too low to access the Anthropic API.", "quota",
            http_status=400),
    Wording("API Error: Unable to connect to API (ConnectionRefused)", "network"),
    Wording("API Error: Connection refused — a firewall or proxy may be blocking it "
            "(ECONNREFUSED)", "network"),
    Wording("Request timed out", "timeout"),
    Wording("Request timed out. If the API is slow to answer, or a proxy or gateway holds "
            "responses, set API_TIMEOUT_MS above 3000.", "timeout"),
    Wording("API Error: Claude Code is unable to respond to this request, which appears to "
            "violate our Usage Policy (https://www.anthropic.com/legal/aup). Please double "
            "press esc to edit your last message.", "refusal"),
    # Codex CLI (the process zone formats the time; a bare time is today)
    Wording("You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase "
            "more credits or try again at 1:08 PM.", "usage_limit", at(2026, 11, 30, 13, 8)),
    Wording("You've hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase "
            "more credits or try again at 1:08 PM.", "usage_limit", at(2026, 11, 30, 18, 8),
            tz=NEW_YORK),
    Wording("You’ve hit your usage limit. To get more access now, send a request to your admin "
            "or try again at 9:38 AM.", "usage_limit", at(2026, 11, 30, 9, 38)),  # today
    Wording("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), "
            "visit https://chatgpt.com/settings/usage to purchase more credits or try again at "
            "Dec 3rd, 2026 10:08 AM.", "usage_limit", at(2026, 12, 3, 10, 8)),
    Wording("You've hit your usage limit. Upgrade to Plus to continue using Codex "
            "(https://chatgpt.com/explore/plus), or try again at May 11th, 2027 1:36 PM.",
            "usage_limit", at(2027, 5, 11, 11, 36), tz=ZoneInfo("Europe/Paris")),
    Wording("You have reached the usage limit. Upgrade or add credits to continue, or try "
            "again after September 6, 2026, 11:15.", "usage_limit", at(2026, 9, 6, 11, 15)),
    Wording("You’ve hit your usage limit. Try again later.", "usage_limit"),
    Wording("■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) "
            "or try again in 5 days 22 hours 11\nminutes.", "usage_limit",
            NOW + timedelta(days=5, hours=22, minutes=11), 511860.0),
    Wording("🖐  You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) "
            "or try again in 3 hours 2 minutes.", "usage_limit",
            NOW + timedelta(hours=3, minutes=2), 10920.0),
    Wording("🖐 You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing), "
            "or wait for limits to reset (every 5h and every week.).", "usage_limit"),
    # Not understood, not guessed: the kind is known, the time is not.
    Wording("You've hit your usage limit. Upgrade your plan to continue, or try again at "
            "10 de jul. de 2026, 11:52.", "usage_limit"),
    Wording("stream disconnected before completion: The usage limit has been reached",
            "usage_limit"),
    Wording("Quota exceeded. Check your plan and billing details.", "quota"),
    Wording("rate limit exceeded: Rate limit reached for gpt-5.5 on tokens per min (TPM). "
            "Please try again in 1.5s.", "rate_limit", NOW + timedelta(seconds=1.5), 1.5),
    Wording("Rate limit reached. Please try again in 3s.", "rate_limit",
            NOW + timedelta(seconds=3), 3.0),
    Wording("Rate limit reached for gpt-5.5. Please try again in 1m30s.", "rate_limit",
            NOW + timedelta(seconds=90), 90.0),
    Wording("Rate limit reached for gpt-5.5. Please try again in 250ms.", "rate_limit",
            NOW + timedelta(milliseconds=250), 0.25),
    Wording("exceeded retry limit, last status: 429 Too Many Requests, request id: r1",
            "rate_limit"),
    Wording("Selected model is at capacity. Please try a different model.", "overloaded"),
    Wording("We’re currently experiencing high demand, which may cause temporary errors.",
            "overloaded"),
    Wording("We're currently experiencing high demand, which may cause temporary errors.",
            "overloaded"),
    Wording("unexpected status 503 Service Unavailable: upstream connect error", "overloaded"),
    Wording("unexpected status 401 Unauthorized: bad key", "auth"),
    Wording("stream disconnected before completion: idle timeout waiting for SSE", "network"),
    # Gemini CLI
    Wording("[API Error: You exceeded your current quota, please check your plan and billing "
            "details. For more information on this error, head to: https://ai.google.dev/"
            "gemini-api/docs/rate-limits.\nSuggested retry after 2s.]\nPlease wait and try again "
            "later. To increase your limits, request a quota increase through AI Studio, or "
            "switch to another /auth method", "rate_limit", NOW + timedelta(seconds=2), 2.0),
    Wording("[API Error: You have exhausted your daily quota on this model.]\nPlease wait and "
            "try again later.", "quota", scope="daily"),
    Wording("You have reached your daily gemini-2.5-pro quota limit.", "quota", scope="daily"),
    Wording("[API Error: No capacity available for model gemini-2.5-pro on the server]\nPlease "
            "wait and try again later. To increase your limits, request a quota increase "
            "through AI Studio", "overloaded"),
    Wording("[API Error: The model is overloaded. Please try again later.]", "overloaded"),
    Wording("Resource has been exhausted (e.g. check quota).", "rate_limit", http_status=429),
    Wording("You have exhausted your capacity on this model. Your quota will reset after "
            "2h10m46s.", "usage_limit", NOW + timedelta(seconds=7846), 7846.0),
    # "Retrying after 6173ms" is the CLI's own backoff, not the server's.
    Wording("Attempt 1 failed: You have exhausted your capacity on this model. Your quota will "
            "reset after 0s.. Retrying after 6173ms...", "usage_limit", NOW, 0.0),
    Wording("Attempt 2 failed: The model is overloaded. Please try again later.. Retrying after "
            "5829ms...", "overloaded"),
    Wording("When using Gemini API, you must specify the GEMINI_API_KEY environment variable.",
            "auth"),
    Wording("Please set an Auth method in your /home/me/.gemini/settings.json or specify one of "
            "the following environment variables before running: GEMINI_API_KEY, "
            "GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA", "auth"),
    Wording("Invalid auth method selected.", "auth"),
    # the Gemini API's google.rpc messages, as Gemini CLI passes them on
    Wording("[API Error: An internal error has occurred.]", "overloaded"),
    Wording("[API Error: The service is currently unavailable.]", "overloaded"),
    Wording("[API Error: Deadline expired before operation could complete.]", "timeout"),
    Wording("[API Error: API key expired. Please renew the API key.]", "auth"),
    Wording("[API Error: The caller does not have permission]", "auth"),
    # pi: "<status> <message>"
    Wording("429 Rate limit reached for requests. Please try again in 1s.", "rate_limit",
            NOW + timedelta(seconds=1), 1.0),
    Wording("429 The usage limit has been reached", "usage_limit"),
    Wording("429 You exceeded your current quota, please check your plan and billing details.",
            "quota"),
    Wording("503 The server is overloaded. Please try again later.", "overloaded"),
    Wording("500 The server had an error while processing your request.", "overloaded"),
    # Relay's own watchdog, and crashes
    Wording("The agent printed nothing for 300 s.", "inactivity"),
    Wording("thread 'main' panicked at core/src/codex.rs:12:5:\nindex out of bounds", "crash"),
    Wording("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
            "crash"),
]


@pytest.mark.parametrize("wording", WORDINGS, ids=[w.text[:60] for w in WORDINGS])
def test_wording(wording: Wording) -> None:
    signal = classify(wording.text, http_status=wording.http_status, provider="any", now=NOW,
                      tz=wording.tz)
    assert signal.kind == wording.kind
    assert signal.resets_at == wording.resets_at
    assert signal.retry_after == wording.retry_after
    assert signal.scope == wording.scope
    assert signal.text == wording.text
    assert signal.source in (("text", "http_status") if wording.http_status else ("text",))
    assert signal.reset_source == ("none" if wording.resets_at is None else "text")


def test_http_status_is_read_from_the_wording() -> None:
    def status(text: str) -> int | None:
        return classify(text, provider="x", now=NOW, tz=UTC).http_status

    assert status("exceeded retry limit, last status: 429 Too Many Requests") == 429
    assert status("unexpected status 503 Service Unavailable: upstream") == 503
    assert status("API Error: 500 Internal server error.") == 500
    assert status("API Error: Request rejected (429) · Error") == 429
    assert status("Attempt 1 failed with status 503") == 503
    assert status("503 The server is overloaded.") == 503
    assert status("Request timed out") is None
    given = classify("503 x", http_status=500, provider="x", now=NOW, tz=UTC)
    assert (given.http_status, given.source) == (500, "http_status")


def test_usage_limit_wording_needs_a_429_or_no_status() -> None:
    """Like Claude Code: a usage-limit text with a 5xx status is an overload."""
    text = "You've hit your session limit · resets 12:05pm (UTC)"
    assert classify(text, http_status=429, provider="claude", now=NOW, tz=UTC).kind \
        == "usage_limit"
    signal = classify(text, http_status=500, provider="claude", now=NOW, tz=UTC)
    assert (signal.kind, signal.source) == ("overloaded", "http_status")
    assert signal.resets_at == at(2026, 11, 30, 12, 5)  # the time is still what it says
