"""The host's gate over real HTTP on a real loopback socket: Host, Origin, token, body size,
JSON errors, and the token never echoed back."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from relay.api.security import MAX_BODY_BYTES
from tests.api.conftest import Served

TEN_MB = 10 * 1024 * 1024


@pytest.fixture
async def http(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False,
                                 timeout=10) as client:
        yield client


def auth(served: Served) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.token}"}


def no_token(served: Served, *responses: httpx.Response) -> None:
    for r in responses:
        assert served.token not in r.text
        for k, v in r.headers.items():
            assert served.token not in k
            assert served.token not in v


def error_code(r: httpx.Response) -> str:
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"}
    err = body["error"]
    assert set(err) == {"code", "message", "hint"}
    assert isinstance(err["message"], str)
    assert err["message"]
    assert "Traceback" not in r.text
    return str(err["code"])


def host_port(served: Served) -> tuple[str, int]:
    parts = urlsplit(served.host.url)
    assert parts.hostname
    assert parts.port
    return parts.hostname, parts.port


# 1. the token
async def test_sessions_need_the_right_token(served: Served, http: httpx.AsyncClient) -> None:
    none = await http.get("/api/v1/sessions")
    assert none.status_code == 401
    assert error_code(none) == "unauthorized"
    assert none.json()["error"]["hint"]
    assert "needs its token" in none.json()["error"]["message"]
    wrong = await http.get("/api/v1/sessions", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert error_code(wrong) == "unauthorized"
    assert "refused the token" in wrong.json()["error"]["message"]  # not "send a token"
    assert "relay-cli token" in wrong.json()["error"]["hint"]
    not_bearer = await http.get("/api/v1/sessions",
                                headers={"Authorization": f"Basic {served.token}"})
    assert not_bearer.status_code == 401
    right = await http.get("/api/v1/sessions", headers=auth(served))
    assert right.status_code == 200
    assert right.json() == []
    no_token(served, none, wrong, not_bearer, right)


async def test_the_token_in_the_query_is_not_enough_for_a_plain_route(
        served: Served, http: httpx.AsyncClient) -> None:
    r = await http.get("/api/v1/sessions", params={"token": served.token})
    assert r.status_code == 401
    assert error_code(r) == "unauthorized"
    no_token(served, r)


# 2. health is open
async def test_health_needs_no_token(served: Served, http: httpx.AsyncClient) -> None:
    r = await http.get("/api/v1/health")
    assert r.status_code == 200
    assert r.json()["ok"] is True
    no_token(served, r)


# 3. Host allow-list
async def test_a_foreign_host_name_is_refused(served: Served, http: httpx.AsyncClient) -> None:
    evil = await http.get("/api/v1/sessions", headers={**auth(served), "Host": "evil.example"})
    assert evil.status_code == 421
    assert error_code(evil) == "bad_host"
    evil_health = await http.get("/api/v1/health", headers={"Host": "evil.example:80"})
    assert evil_health.status_code == 421
    assert error_code(evil_health) == "bad_host"
    no_token(served, evil, evil_health)


@pytest.mark.parametrize("host", ["localhost:9999", "127.0.0.1", "LOCALHOST", "[::1]:1234"])
async def test_loopback_host_names_are_accepted_whatever_the_port(
        served: Served, http: httpx.AsyncClient, host: str) -> None:
    r = await http.get("/api/v1/sessions", headers={**auth(served), "Host": host})
    assert r.status_code == 200, r.text
    no_token(served, r)


# 4. Origin
async def test_a_foreign_origin_is_refused(served: Served, http: httpx.AsyncClient) -> None:
    r = await http.get("/api/v1/sessions",
                       headers={**auth(served), "Origin": "http://evil.example"})
    assert r.status_code == 403
    assert error_code(r) == "bad_origin"
    null = await http.get("/api/v1/sessions", headers={**auth(served), "Origin": "null"})
    assert null.status_code == 403
    assert error_code(null) == "bad_origin"
    no_token(served, r, null)


async def test_the_hosts_own_origin_is_accepted(served: Served, http: httpx.AsyncClient) -> None:
    _host, port = host_port(served)
    r = await http.get("/api/v1/sessions",
                       headers={**auth(served), "Origin": f"http://127.0.0.1:{port}"})
    assert r.status_code == 200, r.text
    no_token(served, r)


async def test_a_cross_site_fetch_is_refused(served: Served, http: httpx.AsyncClient) -> None:
    r = await http.get("/api/v1/sessions",
                       headers={**auth(served), "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert error_code(r) == "bad_origin"
    same = await http.get("/api/v1/sessions",
                          headers={**auth(served), "Sec-Fetch-Site": "same-origin"})
    assert same.status_code == 200
    no_token(served, r, same)


# 5. no CORS
async def test_a_preflight_gets_no_cors_permission(served: Served,
                                                   http: httpx.AsyncClient) -> None:
    headers = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization,content-type"}
    r = await http.options("/api/v1/sessions", headers=headers)
    assert r.status_code >= 400
    assert not any(k.lower().startswith("access-control-") for k in r.headers)
    with_token = await http.options("/api/v1/sessions", headers={**headers, **auth(served)})
    assert not any(k.lower().startswith("access-control-") for k in with_token.headers)
    no_token(served, r, with_token)


# 6. the token file
async def test_the_token_file_is_private_in_the_data_folder(served: Served,
                                                            relay_home: Path) -> None:
    assert served.engine.config.home == relay_home
    path = relay_home / "api-token"
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text(encoding="ascii").strip() == served.token


# 7. bounded bodies, over a raw socket
async def _raw(served: Served, head: str, body: bytes = b"") -> bytes:
    """Send ``head`` (and ``body``) on a fresh connection; the response as bytes."""
    host, port = host_port(served)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(head.encode("latin-1") + body)
        await writer.drain()
        async with asyncio.timeout(10):  # a failure guard only
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                data += chunk
            return data + await _rest(reader, data)
    finally:
        writer.close()


async def _rest(reader: asyncio.StreamReader, data: bytes) -> bytes:
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    more = b""
    while len(body) + len(more) < length:
        chunk = await reader.read(65536)
        if not chunk:
            break
        more += chunk
    return more


def _parse(raw: bytes) -> tuple[int, str, str]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    return int(status_line.split()[1]), head.decode("latin-1"), body.decode("utf-8", "replace")


async def test_a_declared_huge_body_is_refused_before_it_is_read(served: Served) -> None:
    host, port = host_port(served)
    head = (f"POST /api/v1/sessions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {served.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {TEN_MB}\r\n\r\n")
    raw = await _raw(served, head, b"x" * 1024)  # 1 KiB of 10 MB: the rest is never sent
    status, headers, body = _parse(raw)
    assert status == 413, raw[:500]
    assert json.loads(body)["error"]["code"] == "body_too_large"
    assert "Traceback" not in body
    assert served.token not in headers
    assert served.token not in body


async def test_a_chunked_body_past_the_limit_is_cut_off(served: Served) -> None:
    host, port = host_port(served)
    reader, writer = await asyncio.open_connection(host, port)
    head = (f"POST /api/v1/sessions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {served.token}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n")
    piece = b"x" * 65536
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"

    async def send() -> None:
        writer.write(head.encode("latin-1"))
        try:
            for _ in range(MAX_BODY_BYTES // len(piece) + 16):  # past the limit by 1 MiB
                writer.write(chunk)
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, OSError):
            pass  # the server answered and closed: what is expected

    sender = asyncio.create_task(send())
    try:
        async with asyncio.timeout(10):  # a failure guard only
            data = b""
            while b"\r\n\r\n" not in data:
                got = await reader.read(65536)
                if not got:
                    break
                data += got
            data += await _rest(reader, data)
    finally:
        sender.cancel()
        writer.close()
    assert data, "the server answered before closing"
    status, headers, body = _parse(data)
    assert status == 413, data[:500]
    assert json.loads(body)["error"]["code"] == "body_too_large"
    assert served.token not in headers
    assert served.token not in body


# 8. errors are JSON
async def test_errors_are_json_never_a_traceback(served: Served,
                                                 http: httpx.AsyncClient) -> None:
    missing = await http.get("/api/v1/sessions/nosuch", headers=auth(served))
    assert missing.status_code == 404
    assert error_code(missing) == "session_not_found"
    bogus = await http.post("/api/v1/sessions", headers=auth(served), json={"bogus": 1})
    assert bogus.status_code == 422
    assert error_code(bogus) == "invalid_request"
    broken = await http.post("/api/v1/sessions", headers={**auth(served),
                                                          "Content-Type": "application/json"},
                             content=b"{not json")
    assert broken.status_code == 422
    assert error_code(broken) == "invalid_request"
    nope = await http.get("/api/v1/nope", headers=auth(served))
    assert nope.status_code == 404
    assert error_code(nope) == "not_found"
    no_token(served, missing, bogus, broken, nope)


async def test_a_page_of_another_local_server_is_another_origin(served: Served) -> None:
    port = urlsplit(served.host.url).port
    async with httpx.AsyncClient(base_url=served.host.url, trust_env=False) as http:
        for origin in ("http://127.0.0.1:1", f"https://127.0.0.1:{(port or 0) + 1}",
                       "http://localhost:3000"):
            answer = await http.get("/api/v1/sessions", headers={
                "Authorization": f"Bearer {served.token}", "Origin": origin})
            assert answer.status_code == 403, origin
            assert answer.json()["error"]["code"] == "bad_origin"


def test_a_new_token_never_reads_as_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """``relay --connect URL --token T``: a token starting with '-' would be taken for an
    option; URL-safe base64 starts with one 1 time in 64."""
    import secrets

    from relay.core import hostfile

    drawn = iter(["-starts-with-a-dash", "--two", "fine-token"])
    monkeypatch.setattr(secrets, "token_urlsafe", lambda _n: next(drawn))
    assert hostfile.new_token() == "fine-token"  # the two that start with '-' are drawn again
