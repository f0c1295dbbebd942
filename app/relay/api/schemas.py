"""The API's own request and answer shapes; everything else is the engine's pydantic models
(:class:`~relay.core.models.SessionSpec`, :class:`~relay.core.models.SessionRow`, …)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from relay.core.events import AgentEvent


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Health(Strict):
    ok: bool
    version: str
    api: str = "v1"


class HostStatus(Strict):
    version: str
    pid: int
    kind: str
    url: str
    home: str
    started_at: float
    #: sessions this host runs now
    running: list[str]
    #: live stream subscribers
    subscribers: int


class Started(Strict):
    id: str


class Done(Strict):
    ok: bool = True
    message: str = ""


class HandoffBody(Strict):
    to: str | None = Field(default=None, description="a chain entry, provider[:account]; "
                                                     "default: the next one")


class ContinueBody(Strict):
    prompt: str


class AnswerBody(Strict):
    request_id: str
    option_id: str | None = None
    text: str | None = None


class VaultState(Strict):
    #: "keyring" (the OS keyring) or "file" (the encrypted vault file)
    backend: str
    #: the vault file exists (False: the first passphrase given creates it)
    exists: bool
    #: the host can open the vault without being given the passphrase
    unlocked: bool


class UnlockBody(Strict):
    #: never echoed, logged or stored (a ``SecretStr``: its repr is ``**********``)
    passphrase: SecretStr


class EventOut(Strict):
    id: int
    session_id: str
    run_id: str | None
    event: AgentEvent


class EventsPage(Strict):
    events: list[EventOut]
    #: the cursor to ask from next (the last id in ``events``, or ``after`` when empty)
    next: int
    #: more events follow ``next`` already
    more: bool


class ErrorDetail(Strict):
    code: str
    message: str
    hint: str | None


class ErrorBody(Strict):
    error: ErrorDetail


#: what every route may answer besides its success (for the OpenAPI document)
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody} for status in (400, 401, 403, 404, 409, 413, 422, 503)}
