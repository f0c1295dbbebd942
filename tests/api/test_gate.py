"""The gate in front of every route, over a real socket: token, Host, Origin, no CORS, a
bounded body, JSON errors, and the token in no answer."""

from __future__ import annotations

import asyncio
import stat
from urllib.parse import urlsplit

import httpx
import pytest

from relay.core.hostfile import TOKEN_FILE
from tests.api.conftest import Served


@pytest.fixture
async def http(served: Served) -> httpx.AsyncClient:
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False) as client:
        yield client  # type: ignore[misc]


def _auth(served: Served) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.token}"}


async def test_every_route_but_health_needs_the_token(served: Served,
                                                      http: httpx.AsyncClient) -> None:
    none = await http.get("/api/v1/sessions")
    wrong = await http.get("/api/v1/sessions", headers={"Authorization": "Bearer nope"})
    right = await http.get("/api/v1/sessions", headers=_auth(served))
    health = await http.get("/api/v1/health")
    assert (none.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert none.json()["error"]["code"] == "unauthorized"
    assert none.json()["error"]["hint"]
    assert health.status_code == 200
    assert health.json()["ok"] is True
    for response in (none, wrong, right, health):
        assert served.token not in response.text
        assert served.token not in str(response.headers)


async def test_a_foreign_host_name_is_refused_whatever_the_port(served: Served,
                                                                http: httpx.AsyncClient) -> None:
    evil = await http.get("/api/v1/sessions", headers={**_auth(served), "Host": "evil.example"})
    assert evil.status_code == 421
    assert evil.json()["error"]["code"] == "bad_host"
    for name in ("localhost:9999", "127.0.0.1"):  # an SSH tunnel remaps the port
        ok = await http.get("/api/v1/sessions", headers={**_auth(served), "Host": name})
        assert ok.status_code == 200, name


async def test_a_page_on_another_origin_cannot_call_it(served: Served,
                                                       http: httpx.AsyncClient) -> None:
    port = urlsplit(served.host.url).port
    foreign = await http.get("/api/v1/sessions",
                             headers={**_auth(served), "Origin": "http://evil.example"})
    cross = await http.get("/api/v1/sessions",
                           headers={**_auth(served), "Sec-Fetch-Site": "cross-site"})
    own = await http.get("/api/v1/sessions",
                         headers={**_auth(served), "Origin": f"http://127.0.0.1:{port}"})
    assert (foreign.status_code, cross.status_code, own.status_code) == (403, 403, 200)
    assert foreign.json()["error"]["code"] == "bad_origin"
    preflight = await http.options("/api/v1/sessions", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers


async def test_the_token_file_is_private(served: Served) -> None:
    mode = stat.S_IMODE((served.engine.config.home / TOKEN_FILE).stat().st_mode)
    assert mode == 0o600


async def _raw(served: Served, head: str, body: bytes) -> bytes:
    parts = urlsplit(served.host.url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(head.encode() + body)
        await writer.drain()
        async with asyncio.timeout(20):  # a failure guard: the answer comes without the body
            return await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.close()


async def test_a_10_mb_body_is_refused_before_it_is_read(served: Served) -> None:
    head = (f"POST /api/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {served.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10 * 1024 * 1024}\r\n\r\n")
    answer = await _raw(served, head, b"{" + b" " * 1024)  # 1 KiB of the 10 MB, no more
    assert answer.startswith(b"HTTP/1.1 413")


async def test_a_chunked_body_is_cut_off_at_the_limit(served: Served) -> None:
    head = (f"POST /api/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {served.token}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n")
    chunk = b" " * (256 * 1024)
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(12))  # 3 MiB
    answer = await _raw(served, head, body)
    assert answer.startswith(b"HTTP/1.1 413")


async def test_errors_are_json_never_a_traceback(served: Served, http: httpx.AsyncClient) -> None:
    missing = await http.get("/api/v1/sessions/nosuch", headers=_auth(served))
    bogus = await http.post("/api/v1/sessions", json={"bogus": 1}, headers=_auth(served))
    nowhere = await http.get("/api/v1/nope", headers=_auth(served))
    assert (missing.status_code, bogus.status_code, nowhere.status_code) == (404, 422, 404)
    assert missing.json()["error"]["code"] == "session_not_found"
    assert bogus.json()["error"]["code"] == "invalid_request"
    assert nowhere.json()["error"]["code"] == "not_found"
    for response in (missing, bogus, nowhere):
        assert "Traceback" not in response.text
        assert served.token not in response.text
