"""One streaming HTTP request to a model API: retries, limits, rate-limit readings, framing.

:class:`ApiCall` POSTs a JSON body and opens the streamed answer. A failed attempt is
classified with :func:`relay.core.signals.classify` (status, error body, headers):

* a rate limit, an overload, a 5xx or a dropped connection is retried — after the
  provider's ``retry-after`` / ``retry-after-ms`` (else 1, 2, 4 … s), at most
  ``attempts`` times in all and never for a wait above ``max_delay`` (a long wait is the
  handoff engine's decision, not ours); each retry is a ``Notice(category="retry")``;
* anything else, or the last failure, raises :class:`ApiFailure` carrying the signal — the
  loop turns it into ``LimitHit`` (for limits) + ``AgentError`` + a failed ``SessionEnded``.

Every response's rate-limit headers (success or not) become ``QuotaUpdate`` events through
:func:`relay.wallet.limits.from_headers` (Anthropic's unified and Codex's headers), each
reading once while it does not change.

:func:`sse_events` and :func:`ndjson_objects` frame the body; a line that is not JSON
raises :class:`MalformedStream`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from relay.core import jsonvalue
from relay.core.events import AgentEvent, Notice, QuotaUpdate, utcnow
from relay.core.reset_times import from_epoch
from relay.core.signals import Signal, classify
from relay.core.store.db import now_ms
from relay.wallet.limits import from_headers

if TYPE_CHECKING:  # httpx (and its CLI extras) loads only for a real request
    import httpx

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
RETRY_KINDS = frozenset({"rate_limit", "overloaded", "network", "timeout", "unknown"})


class MalformedStream(Exception):
    """The answer's framing or JSON is broken."""


class ApiFailure(Exception):
    """The request failed for good; ``signal`` says what it means."""

    def __init__(self, signal: Signal, message: str) -> None:
        super().__init__(message)
        self.signal = signal
        self.message = message


@dataclass
class RetryPolicy:
    attempts: int = 3
    max_delay: float = 60.0
    backoff: float = 1.0


@dataclass
class QuotaTracker:
    """Turns rate-limit headers into QuotaUpdate events, each new reading once."""

    runtime: str
    _last: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def read(self, headers: Mapping[str, str]) -> list[QuotaUpdate]:
        out = []
        for snap in from_headers("", headers, now_ms()):
            key = (snap.used_percent, snap.resets_at_ms, snap.status)
            if self._last.get(snap.window) == key:
                continue
            self._last[snap.window] = key
            out.append(QuotaUpdate(
                runtime=self.runtime, window=snap.window, status=snap.status,
                used_percent=snap.used_percent, window_minutes=snap.window_minutes,
                resets_at=from_epoch(snap.resets_at_ms) if snap.resets_at_ms else None,
                origin=snap.origin))
        return out


class ApiCall:
    """``async for event in call.send(): …`` then read ``call.response`` (streamed)."""

    def __init__(self, client: httpx.AsyncClient, runtime: str, url: str,
                 headers: Mapping[str, str], body: Mapping[str, Any], *, retry: RetryPolicy,
                 quota: QuotaTracker, stopping: asyncio.Event) -> None:
        self.client, self.runtime, self.url = client, runtime, url
        self.headers, self.body = dict(headers), dict(body)
        self.retry, self.quota, self.stopping = retry, quota, stopping
        self.response: httpx.Response | None = None

    async def send(self) -> AsyncIterator[AgentEvent]:
        for attempt in range(1, self.retry.attempts + 1):
            failure = await self._attempt()
            for reading in self._readings:
                yield reading
            if failure is None:
                return
            signal, message = failure
            delay = self._delay(signal, attempt)
            if delay is None or attempt == self.retry.attempts:
                raise ApiFailure(signal, message)
            yield Notice(runtime=self.runtime, category="retry", message=(
                f"{message} — retrying in {delay:g} s (attempt {attempt + 1} of "
                f"{self.retry.attempts})."))
            try:  # a stop ends the wait at once
                await asyncio.wait_for(self.stopping.wait(), delay)
            except TimeoutError:
                continue
            raise ApiFailure(signal, "stopped by Relay while waiting to retry")

    async def _send_unless_stopped(self, request: httpx.Request) -> httpx.Response:
        """Send; a stop (or an interrupt) while the server has not answered yet abandons
        the request at once (raises :class:`ApiFailure`) instead of waiting for it."""
        sending = asyncio.ensure_future(self.client.send(request, stream=True))
        stopped = asyncio.ensure_future(self.stopping.wait())
        try:
            await asyncio.wait({sending, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not sending.done():
            sending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sending
            raise ApiFailure(Signal(kind="network", provider=self.runtime),
                             "stopped by Relay before the answer came")
        return sending.result()

    async def _attempt(self) -> tuple[Signal, str] | None:
        import httpx

        self._readings: list[AgentEvent] = []
        request = self.client.build_request("POST", self.url, json=self.body, headers=self.headers)
        try:
            response = await self._send_unless_stopped(request)
        except httpx.TimeoutException as exc:
            return self._signal(f"{self.runtime}: the request timed out ({type(exc).__name__})",
                                None, None, kind="timeout")
        except httpx.TransportError as exc:
            return self._signal(f"{self.runtime}: cannot reach {self._origin()}: {exc}",
                                None, None, kind="network")
        self._readings.extend(self.quota.read(response.headers))
        if response.status_code < 400:
            self.response = response
            return None
        try:
            raw = await response.aread()
        except httpx.HTTPError:
            raw = b""
        finally:
            await response.aclose()
        text = raw.decode("utf-8", errors="replace").strip()
        try:
            body: Any = jsonvalue.loads(text) if text else None
        except ValueError:
            body = None
        detail = _error_text(body) or text[:300] or response.reason_phrase
        return self._signal(f"{self.runtime}: HTTP {response.status_code} from {self._origin()}: "
                            f"{detail}", response.status_code,
                            {"error": _inner(body), "headers": dict(response.headers)})

    def _signal(self, message: str, status: int | None, structured: Mapping[str, Any] | None,
                kind: str | None = None) -> tuple[Signal, str]:
        signal = classify(message, http_status=status, structured=structured,
                          provider=self.runtime, now=utcnow(), tz=UTC)
        if kind is not None and signal.kind == "unknown":
            signal = Signal(kind=kind, provider=self.runtime, text=message)  # type: ignore[arg-type]
        return signal, message

    def _delay(self, signal: Signal, attempt: int) -> float | None:
        retryable = signal.kind in RETRY_KINDS and (
            signal.http_status is None or signal.http_status in RETRY_STATUSES)
        if not retryable:
            return None
        if signal.retry_after is not None:
            delay = signal.retry_after
        elif signal.resets_at is not None:
            delay = max((signal.resets_at - datetime.now(UTC)).total_seconds(), 0.0)
        else:
            delay = self.retry.backoff * 2 ** (attempt - 1)
        return delay if delay <= self.retry.max_delay else None

    def _origin(self) -> str:
        import httpx

        url = httpx.URL(self.url)
        return f"{url.scheme}://{url.host}:{url.port}" if url.port else f"{url.scheme}://{url.host}"


def _inner(body: Any) -> Any:
    """The error object of an error body (``{"error": {...}}`` → ``{...}``)."""
    if isinstance(body, dict) and isinstance(body.get("error"), (dict, str)):
        return body["error"]
    return body


def _error_text(body: Any) -> str | None:
    """The message of an Anthropic / OpenAI / Ollama error body."""
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if isinstance(err, dict):
        msg = err.get("message")
        return str(msg) if msg else None
    if isinstance(err, str):
        return err
    return None


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, Any]]:
    """``(event name, decoded data)`` per SSE event; ``[DONE]`` ends the stream."""
    name: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith(":"):
            continue
        if line:
            field_name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field_name == "event":
                name = value
            elif field_name == "data":
                data.append(value)
            continue
        if data:
            payload = "\n".join(data)
            if payload.strip() == "[DONE]":
                return
            yield name, _decode(payload)
        name, data = None, []
    if data and "\n".join(data).strip() != "[DONE]":
        yield name, _decode("\n".join(data))


async def ndjson_objects(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.strip():
            obj = _decode(line)
            if not isinstance(obj, dict):
                raise MalformedStream(f"expected a JSON object per line, got: {line[:200]}")
            yield obj


def _decode(text: str) -> Any:
    try:
        return jsonvalue.loads(text)
    except ValueError:
        shown = text if len(text) <= 200 else text[:200] + "…"
        raise MalformedStream(f"not JSON: {shown}") from None
