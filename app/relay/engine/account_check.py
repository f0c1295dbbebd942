"""Does this account answer? And how does its CLI log in?

:func:`check_account` runs the account's CLI once, through the runtime adapter sessions
use, with a tiny prompt (:data:`CHECK_PROMPT`), read-only permissions, a throw-away
working folder and the account's own environment (its folder, its key, no other
credential), and sorts the outcome:

``ok``           the model answered (which model, how long it took)
``auth``         not logged in, or the key is refused
``limit``        the account is over a limit (and when it resets, when the CLI says)
``cli_missing``  the CLI is not installed (how to install it)
``unsupported``  Relay cannot drive this provider's CLI yet
``timeout``      no answer within the time allowed
``failed``       anything else, with the CLI's message

A check is a real request: it spends a few tokens of the account (:data:`COST_NOTE`).
The CLI may keep a transcript of it in the account's folder, as for any run.

:func:`login_command` is the CLI's own login flow for a ``cli_login`` account, run in
a terminal with the account's folder: ``claude auth login`` (Claude Code 2.1.x),
``codex login`` (Codex 0.171); Gemini CLI and Pi have no login command — their
interactive mode asks (``/auth``, ``/login``) — so the command is the CLI itself with a
note saying what to choose.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from relay.core.accounts import KEY_ENV, Account, AccountBook
from relay.core.config import Config
from relay.core.errors import CliNotFoundError, RelayError, UnknownRuntimeError
from relay.core.events import AgentError, AssistantText, LimitHit, SessionEnded, SessionStarted, TurnCompleted
from relay.core.models import PermissionPolicy
from relay.core.procs import find_executable
from relay.core.redact import scrub
from relay.runtimes.base import RunRequest, RuntimeAdapter
from relay.runtimes.registry import adapter_class, make_adapter

CHECK_PROMPT = "Reply with the single word OK."
#: said wherever a check is offered
COST_NOTE = "A test sends one tiny prompt to the account: it spends a few tokens."
#: the longest a check may take (seconds)
CHECK_TIMEOUT_S = 90.0

CheckStatus = Literal["ok", "auth", "limit", "cli_missing", "unsupported", "timeout", "failed"]

#: errors that mean this account is over a limit (overload is the provider's, not the account's)
_LIMIT_CATEGORIES = ("usage_limit", "rate_limit", "quota")
#: the CLIs' own install commands (for those without an adapter yet)
_INSTALL = {"gemini": "npm install -g @google/gemini-cli",
            "pi": "npm install -g @mariozechner/pi-coding-agent"}


@dataclass(frozen=True, slots=True)
class AccountCheck:
    """The outcome of one :func:`check_account`."""

    entry: str
    status: CheckStatus
    #: what happened, in a sentence (the CLI's own message where it gave one)
    message: str
    hint: str | None = None
    #: the model that answered (``ok``), as the CLI reported it
    model: str | None = None
    #: seconds from starting the CLI to its answer
    latency_s: float | None = None
    #: when the limit resets (``limit``), if the CLI said
    resets_at: datetime | None = None
    #: the answer's text (``ok``), shortened
    answer: str | None = None
    #: the note that a check spends tokens
    cost_note: str = COST_NOTE

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def summary(self) -> str:
        """One line for a list or a status bar."""
        if self.ok:
            model = f" ({self.model})" if self.model else ""
            took = f" in {self.latency_s:.1f} s" if self.latency_s is not None else ""
            return f"{self.entry} answers{model}{took}."
        if self.status == "limit" and self.resets_at is not None:
            return f"{self.entry} is over its limit until {self.resets_at:%Y-%m-%d %H:%M %Z}."
        return f"{self.entry}: {self.message}"


async def check_account(account: Account, book: AccountBook, config: Config, *,
                        timeout_s: float = CHECK_TIMEOUT_S,
                        env: Mapping[str, str] | None = None) -> AccountCheck:
    """Ask the account's CLI for a one-word answer and say how it went (never raises for
    the account's problems; a vault that cannot be unlocked is a VaultError).

    Args:
        account: The account to check.
        book: Gives the account's environment (its key comes from the vault).
        config: Relay's settings (the stop grace period).
        timeout_s: The longest the check may take.
        env: The environment to start from (default: Relay's own).
    """
    try:
        adapter = make_adapter(account.provider, env)
    except UnknownRuntimeError:
        return AccountCheck(account.entry, "unsupported",
                            f"Relay cannot run {account.provider} yet, so it cannot test it.",
                            f"Try it yourself: {_shown(account.env())}{account.provider}")
    extra = await book.agent_env(account)
    secret = extra.get(KEY_ENV.get(account.provider, "")) if account.auth_kind == "api_key" \
        else None
    if account.provider == "claude" and "CLAUDE_CODE_MAX_RETRIES" not in adapter.env:
        extra["CLAUDE_CODE_MAX_RETRIES"] = "1"  # Claude Code retries a refused key 10 times
    with tempfile.TemporaryDirectory(prefix="relay-account-check-") as folder:
        request = RunRequest(prompt=CHECK_PROMPT, cwd=Path(folder),
                             permission=PermissionPolicy.READ_ONLY, extra_env=extra,
                             drop_env=account.drop_env(), inactivity_timeout=timeout_s)
        return await _run(account, adapter, request, config, timeout_s, secret)


async def _run(account: Account, adapter: RuntimeAdapter, request: RunRequest, config: Config,
               timeout_s: float, secret: str | None) -> AccountCheck:
    seen = _Seen()
    start = time.monotonic()
    try:
        adapter.preflight(request)
        async with asyncio.timeout(timeout_s):
            async with contextlib.aclosing(adapter.run(request)) as events:
                async for event in events:
                    seen.note(event)
    except CliNotFoundError as exc:
        return AccountCheck(account.entry, "cli_missing", exc.message, exc.hint)
    except TimeoutError:
        await adapter.stop(grace=config.stop_grace)
        return AccountCheck(account.entry, "timeout",
                            f"{account.provider} did not answer within {timeout_s:g} s.",
                            "Run the CLI in a terminal with this account's folder to see "
                            "what it waits for.")
    except RelayError as exc:
        return AccountCheck(account.entry, "failed", _clean(exc.message, secret), exc.hint)
    return seen.verdict(account, time.monotonic() - start, secret)


class _Seen:
    """What a check's events said."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.texts: list[str] = []
        self.limit: LimitHit | None = None
        self.error: AgentError | None = None
        self.ended: SessionEnded | None = None

    def note(self, event: object) -> None:
        if isinstance(event, SessionStarted | TurnCompleted) and event.model:
            self.model = event.model  # the turn's (no context-size suffix) comes last
        elif isinstance(event, AssistantText) and not event.reasoning:
            self.texts.append(event.text)
        elif isinstance(event, LimitHit) and event.blocking:
            self.limit = event
        elif isinstance(event, AgentError) and event.fatal and self.error is None:
            self.error = event
        elif isinstance(event, SessionEnded):
            self.ended = event

    def verdict(self, account: Account, took: float, secret: str | None) -> AccountCheck:
        entry = account.entry
        ended = self.ended
        if ended is not None and ended.outcome == "completed":
            answer = " ".join(self.texts).strip() or (ended.result_text or "")
            return AccountCheck(entry, "ok", "The account answered.", model=self.model,
                                latency_s=round(took, 2), answer=_clean(answer, secret)[:200])
        limit = self.limit if self.limit and self.limit.limit != "overloaded" else None
        if limit is not None or (self.error and self.error.category in _LIMIT_CATEGORIES):
            message = limit.message if limit else self.error.message if self.error else ""
            return AccountCheck(entry, "limit", _clean(message, secret),
                                "Wait for the reset, or use another account meanwhile.",
                                resets_at=limit.resets_at if limit else None)
        why = (self.error.message if self.error else None) or (ended.reason if ended else None) \
            or "the CLI ended without an answer"
        if self.error is not None and _is_auth(self.error):
            return AccountCheck(entry, "auth", _clean(why, secret), _auth_hint(account))
        overloaded = (self.error is not None and self.error.category == "overloaded") or (
            self.limit is not None)
        return AccountCheck(entry, "failed", _clean(why, secret),
                            "The provider is overloaded (not this account): test again in a "
                            "moment." if overloaded else
                            "Run the CLI in a terminal with this account's folder to see more.")


def _is_auth(error: AgentError) -> bool:
    if error.category == "auth" or error.http_status in (401, 403):
        return True
    # Codex names a missing key variable as a configuration error
    return error.category == "config" and "environment variable" in error.message.lower()


def _auth_hint(account: Account) -> str:
    if account.auth_kind == "api_key":
        return (f"The key was refused: store the right one with `relay-cli accounts edit "
                f"{account.provider} {account.label} --api-key-stdin`.")
    return (f"Log in again: `relay-cli accounts login {account.provider} {account.label}`.")


def _clean(text: str, secret: str | None) -> str:
    """The CLI's words for the user: secrets masked (the account's own key included)."""
    text = scrub(text)
    return text.replace(secret, "…") if secret else text


# -- the login flow ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LoginCommand:
    """The CLI's own login, to run in a terminal: ``argv`` with the user's environment
    minus ``unset`` plus ``env`` (the account's folder)."""

    argv: list[str]
    env: dict[str, str]
    unset: frozenset[str]
    #: what the user does in it
    how: str

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The complete environment for the login process."""
        source = os.environ if base is None else base
        merged = {k: v for k, v in source.items() if k not in self.unset}
        merged.update(self.env)
        return merged


@dataclass(frozen=True, slots=True)
class NoLogin:
    """Why an account has no login flow to run."""

    reason: str
    hint: str | None = None


#: provider → (login arguments after the executable, what the user does)
_LOGIN: dict[str, tuple[list[str], str]] = {
    "claude": (["auth", "login"], "Sign in with your Claude subscription in the browser that "
                                  "opens (for an Anthropic Console login run `claude auth login "
                                  "--console` with the same folder instead)."),
    "codex": (["login"], "Sign in with ChatGPT in the browser that opens (on a machine without "
                         "a browser run `codex login --device-auth` instead)."),
    "gemini": ([], "Gemini CLI has no login command: in the window that opens choose "
                   "\"Login with Google\" (or type /auth), then /quit."),
    "pi": ([], "Pi has no login command: in the window that opens type /login, choose the "
               "provider, then /quit."),
}
_BINARY = {"claude": "claude", "codex": "codex", "gemini": "gemini", "pi": "pi"}


def login_command(account: Account,
                  env: Mapping[str, str] | None = None) -> LoginCommand | NoLogin:
    """The account's login flow, or why there is none.

    The executable is looked up like the adapters do (``RELAY_<PROVIDER>_BIN``, then PATH).

    Raises:
        CliNotFoundError: the CLI is not installed (its hint says how to install it).
    """
    if account.auth_kind == "api_key":
        return NoLogin(f"{account.entry} signs in with an API key, not a login.",
                       f"Change its key with `relay-cli accounts edit {account.provider} "
                       f"{account.label} --api-key-stdin`.")
    if account.provider not in _LOGIN:
        return NoLogin(f"Relay knows no login flow for {account.provider}.")
    if account.config_dir is None:
        return NoLogin(f"{account.entry} uses the CLI's default folder: log in there the usual "
                       "way.", f"Give it a folder of its own with `relay-cli accounts edit "
                       f"{account.provider} {account.label} --config-dir DIR`.")
    args, how = _LOGIN[account.provider]
    exe = find_executable(account.provider, _BINARY[account.provider], _install_hint(account),
                          env=os.environ if env is None else env)
    return LoginCommand([exe, *args], account.env(), account.drop_env(), how)


def _install_hint(account: Account) -> str:
    if account.provider in _INSTALL:
        return f"Install it: {_INSTALL[account.provider]}"
    return str(getattr(adapter_class(account.provider), "install_hint", ""))


def _shown(env: Mapping[str, str]) -> str:
    return "".join(f"{k}={v} " for k, v in env.items())
