"""A client of a Relay host: the API's routes as methods returning the engine's own models.

Every front end that does not host — ``relay-cli`` commands, a second window, ``relay-cli
mcp`` — holds a :class:`RelayClient`. Its methods carry the engine's names
(``list_sessions``, ``start_session``, ``cancel_session``…) and return the same pydantic
models, so a front end reads the same whether it talks to the host here or across an SSH
tunnel. A refusal comes back as the same :class:`~relay.core.errors.RelayError` class the
host raised (``code`` → class); a host that does not answer is a :class:`HostError` saying so.

:meth:`RelayClient.follow` is the sync protocol's client: it reads the live stream from a
cursor and, when the connection drops, the host closes or the host drops it as too slow,
reconnects with the last id it saw — to the next host too (``host.json`` is read again) — so
the caller sees every event once, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import orjson
from pydantic import BaseModel, TypeAdapter

from relay.api.client_features import FeatureClients
from relay.core.errors import HostError, HostGoneError, RelayError, error_from_code
from relay.core.hostfile import TOKEN_ENV, host_lock, read_host, read_token
from relay.core.models import RunRow, SessionRow, SessionSpec

if TYPE_CHECKING:
    from relay.api.schemas import HostStatus, VaultState
    from relay.core.events import EventRecord, NeedsInput
    from relay.sessions.handoff import HandoffRecord

# What one call needs beyond the sessions' rows (the host's status, the event models, the
# handoff records, SSE) is imported by that call: a `relay-cli sessions --json` loads none of
# it (docs/performance.md "relay-cli beside a running host").

M = TypeVar("M")

#: how long :meth:`RelayClient.follow` keeps trying to reach a host that went away
RECONNECT_S = 30.0
#: how long a request that reached no host looks for the host's lock to be let go of
GONE_WAIT_S = 2.0
#: the first and the longest pause between two tries
RETRY_FIRST_S, RETRY_MAX_S = 0.05, 1.0
#: how long one request may take (a live stream has no read timeout)
REQUEST_TIMEOUT_S = 60.0
API = "/api/v1"


class RelayClient(FeatureClients):
    """The API of the host at ``url``, authenticated by ``token``; ``client.history``,
    ``client.pipelines``… are the engine's feature services (:mod:`relay.api.client_features`).

    ``resolve`` (given by :meth:`for_home`) says where the host is now: a client that loses
    its host asks it again, so it follows a host that restarted on another port.
    """

    def __init__(self, url: str, token: str, *,
                 resolve: Callable[[], tuple[str, str] | None] | None = None,
                 verify: bool | str = True, home: Path | None = None) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._resolve = resolve
        #: the data folder whose host this is (``for_home``): lets :meth:`follow` tell a
        #: host that is restarting from one that is gone
        self._home = home
        self._verify = verify
        self._http = self._new_http()

    def __repr__(self) -> str:
        return f"RelayClient({self.url!r})"  # never the token

    @property
    def home(self) -> Path | None:
        """The data folder whose host this is (:meth:`for_home`); ``None``: a host reached
        by its URL (``--connect``), which this process never hosts."""
        return self._home

    @property
    def token(self) -> str:
        """The token this client sends (relay-cli mcp's adapter sends it to ``/mcp`` too)."""
        return self._token

    def _new_http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, verify=self._verify,
                                 headers={"Authorization": f"Bearer {self._token}"},
                                 timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=5.0),
                                 trust_env=False)  # a loopback host is never behind a proxy

    @classmethod
    def for_home(cls, home: Path) -> RelayClient | None:
        """A client of ``home``'s live host; ``None`` when no host runs for it."""
        found = _where(home)
        if found is None:
            return None
        url, token = found
        return cls(url, token, resolve=lambda: _where(home), home=home)

    @classmethod
    def connect(cls, url: str, token: str | None, home: Path | None = None) -> RelayClient:
        """A client of a host elsewhere (``--connect URL``): the token is ``token``,
        ``RELAY_TOKEN`` or, for a host of this machine, its data folder's api-token."""
        import os

        token = token or os.environ.get(TOKEN_ENV) or (read_token(home) if home else None)
        if not token:
            raise HostError(f"No API token for {url}.",
                            f"Pass --token (or set {TOKEN_ENV}); on the host, `relay-cli token` "
                            "prints it.")
        return cls(url, token)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> RelayClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    # -- plumbing ---------------------------------------------------------------------

    async def call(self, method: str, path: str, *, body: Any = None,
                   params: dict[str, Any] | None = None) -> Any:
        """One API call; the JSON answer, or the host's refusal raised as its RelayError."""
        content = None
        headers = {}
        if body is not None:
            content = (body.model_dump_json().encode() if isinstance(body, BaseModel)
                       else orjson.dumps(body))
            headers["Content-Type"] = "application/json"
        try:
            response = await self._http.request(
                method, API + path, content=content, headers=headers,
                params={k: v for k, v in (params or {}).items() if v is not None})
        except httpx.TransportError as exc:
            raise await self._failed(exc) from exc
        return self._answer(response)

    async def _failed(self, exc: Exception) -> HostError:
        """What a request that reached no host means. A host killed this instant closes its
        sockets before the kernel lets go of its lock (the order is the kernel's), so the
        lock is looked at again for up to :data:`GONE_WAIT_S` before the host is said not to
        answer — a client that would take over (``pipeline resume``) must see it gone."""
        deadline = time.monotonic() + GONE_WAIT_S
        while self._home is not None and time.monotonic() < deadline:
            if await asyncio.to_thread(self.gone):
                return self._gone_error()
            await asyncio.sleep(0.05)
        return self._unreachable(exc)

    def _answer(self, response: httpx.Response) -> Any:
        if response.status_code == 401 and self.gone():  # its port is another process's now
            raise self._gone_error()
        return _answer(response)

    def _unreachable(self, exc: Exception) -> HostError:
        if self.gone():
            return self._gone_error()
        return HostError(f"Relay's host at {self.url} does not answer ({type(exc).__name__}).",
                         "Is it running? `relay-cli status` says; `relay-cli serve` starts one.")

    def gone(self) -> bool:
        """Whether this data folder's host stopped and no process hosts it now (a host
        that is restarting holds the lock already)."""
        return self._home is not None and not host_lock(self._home).held_elsewhere()

    def _gone_error(self) -> HostGoneError:
        return HostGoneError(f"Relay's host of {self._home} has stopped.",
                             "What its sessions did is in the store: `relay-cli show ID`.")

    async def _get(self, path: str, model: type[M] | Any, **params: Any) -> M:
        adapter: TypeAdapter[M] = TypeAdapter(model)
        return adapter.validate_python(await self.call("GET", path, params=params))

    # -- the host ---------------------------------------------------------------------

    async def status(self) -> HostStatus:
        from relay.api.schemas import HostStatus

        return HostStatus.model_validate(await self.call("GET", "/status"))

    # -- the vault ---------------------------------------------------------------------

    async def vault_state(self) -> VaultState:
        from relay.api.schemas import VaultState

        return VaultState.model_validate(await self.call("GET", "/vault"))

    async def unlock_vault(self, passphrase: str) -> None:
        """Give the host the vault file's passphrase (a wrong one: VaultError)."""
        await self.call("POST", "/vault/unlock", body={"passphrase": passphrase})

    # -- sessions ---------------------------------------------------------------------

    async def list_sessions(self, limit: int = 200, archived: bool = False) -> list[SessionRow]:
        return await self.sessions.recent(limit, archived)

    async def get_session(self, session_id: str) -> SessionRow:
        return await self._get(f"/sessions/{_seg(session_id)}", SessionRow)

    async def session_spec(self, session_id: str) -> SessionSpec:
        return await self._get(f"/sessions/{_seg(session_id)}/spec", SessionSpec)

    async def runs(self, session_id: str) -> list[RunRow]:
        return await self._get(f"/sessions/{_seg(session_id)}/runs", list[RunRow])

    async def handoffs(self, session_id: str) -> list[HandoffRecord]:
        from relay.sessions.handoff import HandoffRecord

        return await self._get(f"/sessions/{_seg(session_id)}/handoffs", list[HandoffRecord])

    async def session_cost(self, session_id: str) -> float | None:
        return await self._get(f"/sessions/{_seg(session_id)}/cost", float | None)

    async def start_session(self, spec: SessionSpec) -> str:
        return str((await self.call("POST", "/sessions", body=spec))["id"])

    async def cancel_session(self, session_id: str) -> None:
        await self.call("POST", f"/sessions/{_seg(session_id)}/stop")

    async def request_handoff(self, session_id: str, to_entry: str | None = None) -> str:
        answer = await self.call("POST", f"/sessions/{_seg(session_id)}/handoff",
                                 body={"to": to_entry})
        return str(answer["message"])

    async def continue_session(self, session_id: str, prompt: str) -> str:
        answer = await self.call("POST", f"/sessions/{_seg(session_id)}/continue",
                                 body={"prompt": prompt})
        return str(answer["id"])

    async def open_questions(self, session_id: str) -> list[NeedsInput]:
        from relay.core.events import NeedsInput

        return await self._get(f"/sessions/{_seg(session_id)}/questions", list[NeedsInput])

    async def answer_input(self, session_id: str, request_id: str, option_id: str | None = None,
                           text: str | None = None) -> str:
        answer = await self.call("POST", f"/sessions/{_seg(session_id)}/answers",
                                 body={"request_id": request_id, "option_id": option_id,
                                       "text": text})
        return str(answer["message"])

    async def wait_session(self, session_id: str) -> SessionRow:
        """The session's row once it is finished (following its stream until it ends)."""
        async for _ in self.follow(session_id, after=await self.last_event_id(session_id)):
            pass
        return await self.get_session(session_id)

    # -- events -----------------------------------------------------------------------

    async def events_after(self, after_id: int = 0, session_id: str | None = None,
                           limit: int = 1000) -> list[EventRecord]:
        from relay.core.events import record_from_json

        page = await self.call("GET", "/events", params={"after": after_id,
                                                         "session": session_id, "limit": limit})
        return [record_from_json(item) for item in page["events"]]

    async def last_event_id(self, session_id: str | None = None) -> int:
        """The cursor to follow from to see only what comes next."""
        after = 0
        while True:
            page = await self.call("GET", "/events", params={"after": after,
                                                             "session": session_id,
                                                             "limit": 5000})
            if not page["more"]:
                return int(page["next"])
            after = int(page["next"])

    async def follow(self, session_id: str | None = None, after: int = 0, *,
                     on_link: Callable[[bool], None] | None = None
                     ) -> AsyncGenerator[EventRecord, None]:
        """Events after ``after`` as the host stores them: every session's (never ends) or
        one session's (ends once it is finished and every event was yielded). Reconnects
        from the last id it yielded when the stream breaks, for up to :data:`RECONNECT_S`;
        ``on_link(True)`` each time the stream is (re)connected, ``on_link(False)`` when it broke."""
        from httpx_sse import SSEError, aconnect_sse

        from relay.core.events import record_from_json

        path = f"{API}/sessions/{_seg(session_id)}/stream" if session_id else f"{API}/stream"
        last = after
        lost_since: float | None = None
        pause = RETRY_FIRST_S
        while True:
            try:
                async with aconnect_sse(self._http, "GET", path, params={"after": last},
                                        headers={"Last-Event-ID": str(last)},
                                        timeout=httpx.Timeout(None, connect=5.0)) as source:
                    if source.response.status_code != 200:
                        await source.response.aread()
                        self._answer(source.response)
                    if on_link is not None:
                        on_link(True)
                    lost_since, pause = None, RETRY_FIRST_S
                    # the response is closed first, here, by the task that reads it: its
                    # generators then end without awaiting (left to the garbage collector,
                    # httpcore's stream would be closed from no task, or from another one)
                    events = source.aiter_sse()
                    try:
                        async for sse in events:
                            if sse.event == "event":
                                record = record_from_json(orjson.loads(sse.data))
                                if record.id > last:
                                    last = record.id
                                    yield record
                            elif sse.event == "end":
                                return
                            elif sse.event == "resync":
                                break  # dropped as too slow, or the host is closing: resume
                    finally:
                        await source.response.aclose()
                        await events.aclose()
            except (httpx.TransportError, SSEError) as exc:
                now = time.monotonic()
                if lost_since is None and on_link is not None:
                    on_link(False)
                lost_since = lost_since or now
                if now - lost_since > RECONNECT_S:
                    raise self._unreachable(exc) from exc
                if await asyncio.to_thread(self.gone):
                    raise self._gone_error() from exc
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX_S)
                await self._relocate()

    async def _relocate(self) -> None:
        """Point at where the host is now (a restarted host may listen elsewhere)."""
        found = self._resolve() if self._resolve else None
        if found is None:
            return
        url, token = found
        if url.rstrip("/") != self.url or token != self._token:
            self.url, self._token = url.rstrip("/"), token
            old, self._http = self._http, self._new_http()
            with contextlib.suppress(Exception):
                await old.aclose()


def _where(home: Path) -> tuple[str, str] | None:
    info = read_host(home)
    token = read_token(home) if info else None
    return (info.url, token) if info and token else None


def _seg(value: str | None) -> str:
    from urllib.parse import quote

    return quote(value or "", safe="")


def _answer(response: httpx.Response) -> Any:
    if response.status_code < 400:
        return response.json() if response.content else None
    try:
        error = response.json()["error"]
        raise error_from_code(str(error["code"]), str(error["message"]), error.get("hint"))
    except (ValueError, KeyError, TypeError):
        raise RelayError(f"Relay's host answered {response.status_code} "
                         f"{response.reason_phrase}.", "See the host's log.") from None

