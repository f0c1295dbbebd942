"""The board's sign-in codes, cookie and CSRF values, without a host."""

from __future__ import annotations

from relay.api.web.auth import CODE_TTL_S, COOKIE, MAX_CODES, BoardAuth, read_cookie, same_origin


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_signs_in_once() -> None:
    auth = BoardAuth("t" * 43)
    code = auth.new_code()
    assert len(code) >= 40
    assert auth.spend(code)
    assert not auth.spend(code)


def test_a_code_expires_after_ten_minutes() -> None:
    clock = Clock()
    auth = BoardAuth("t" * 43, clock)
    fresh, stale = auth.new_code(), auth.new_code()
    clock.now += CODE_TTL_S - 1
    assert auth.spend(fresh)
    clock.now += 2
    assert not auth.spend(stale)


def test_codes_are_random_and_bounded() -> None:
    auth = BoardAuth("t" * 43)
    codes = [auth.new_code() for _ in range(MAX_CODES + 5)]
    assert len(set(codes)) == len(codes)
    assert not auth.spend(codes[0])  # the oldest went first
    assert auth.spend(codes[-1])
    assert not auth.spend("")
    assert not auth.spend("guessed")


def test_the_cookie_survives_a_restart_and_dies_with_the_token() -> None:
    before, after_restart, rotated = BoardAuth("a" * 43), BoardAuth("a" * 43), BoardAuth("b" * 43)
    header = f"other=1; {COOKIE}={before.cookie_value}"
    assert after_restart.signed_in(header)
    assert not rotated.signed_in(header)
    assert "a" * 43 not in before.cookie_value
    assert before.csrf_token() == after_restart.csrf_token() != rotated.csrf_token()
    assert before.csrf_token() != before.cookie_value


def test_signed_in_needs_exactly_the_cookie() -> None:
    auth = BoardAuth("a" * 43)
    assert not auth.signed_in(None)
    assert not auth.signed_in("")
    assert not auth.signed_in(f"{COOKIE}=")
    assert not auth.signed_in(f"{COOKIE}={auth.cookie_value[:-1]}")
    assert not auth.signed_in(f'{COOKIE}="{auth.cookie_value}x"')
    assert read_cookie('broken="') == ""
    assert read_cookie(f'bad"cookie=1; {COOKIE}={auth.cookie_value}') == auth.cookie_value
    assert not auth.csrf_ok(None)
    assert not auth.csrf_ok("")
    assert auth.csrf_ok(auth.csrf_token())


def test_the_cookie_is_http_only_and_strict() -> None:
    header = BoardAuth("a" * 43).set_cookie_header(secure=False)
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {p.strip() for p in header.split(";")}
    assert "Secure" not in header
    assert BoardAuth("a" * 43).set_cookie_header(secure=True).endswith("; Secure")


def test_same_origin() -> None:
    host = "127.0.0.1:4748"
    assert same_origin({"host": host, "origin": f"http://{host}"})
    assert same_origin({"host": host, "sec-fetch-site": "same-origin"})
    assert not same_origin({"host": host, "origin": "https://evil.example"})
    assert not same_origin({"host": host, "origin": "null", "sec-fetch-site": "cross-site"})
    assert not same_origin({"host": host})
    assert not same_origin({"host": host, "sec-fetch-site": "same-site"})
