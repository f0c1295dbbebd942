"""The API's own request and answer shapes; everything else is the engine's pydantic models
(:class:`~relay.core.models.SessionSpec`, :class:`~relay.core.models.SessionRow`, …)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from relay.core.audit import Anchor, AuditEntry, VerifyReport, verify
from relay.core.events import AgentEvent
from relay.core.pipeline_model import Pipeline
from relay.pipelines.trust import Source
from relay.wallet.model import LimitSnapshot


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


# -- wallet ------------------------------------------------------------------------------

class BudgetBody(Strict):
    limit_usd: float = Field(ge=0, allow_inf_nan=False)
    #: "*": all of Relay's work; else one account's chain entry (provider:label)
    entry: str = "*"


class SessionBudgetBody(Strict):
    field: Literal["budget_usd", "task_budget_usd"]
    #: None: clear it
    limit_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class StatuslineBody(Strict):
    """What Claude Code piped to its status-line command, and the configuration folder it
    runs with (which account it is)."""

    payload: dict[str, Any]
    config_dir: Path


class StatuslineRecorded(Strict):
    entry: str
    readings: list[LimitSnapshot]


# -- accounts ----------------------------------------------------------------------------
# A key may be sent to the host (to store it in the vault), never answered: it is a
# SecretStr here (hidden in repr, validation errors and any dump) and no answer model has it.

class AccountBody(Strict):
    provider: str
    label: str
    #: the CLI's configuration folder (None: the CLI's default)
    config_dir: Path | None = None
    auth_kind: str = "cli_login"
    api_key: SecretStr | None = None


class AccountEdit(Strict):
    """What to change; a field left out stays as it is (``config_dir: null`` is the CLI's
    default folder, ``api_key: null`` keeps the stored key)."""

    config_dir: Path | None = None
    auth_kind: str | None = None
    api_key: SecretStr | None = None
    new_label: str | None = None


class PreferredBody(Strict):
    #: None: the provider has no preferred account
    label: str | None


class PausedBody(Strict):
    paused: bool


# -- detect ------------------------------------------------------------------------------

class AdoptBody(Strict):
    to: str = Field(description="the chain entry to continue on, runtime[:account]")
    in_place: bool = False


# -- pipelines ---------------------------------------------------------------------------

class PipelineBody(Strict):
    pipeline: Pipeline


class PlanBody(Strict):
    goal: str = Field(max_length=100_000)
    repo: Path
    #: the runtime that plans
    runtime: str = "demo"
    model: str | None = None
    #: the runtimes the graph may use (default: the planner's own)
    runtimes: list[str] | None = None


class PipelineStart(Strict):
    pipeline: Pipeline
    repo: Path
    concurrency: int | None = Field(default=None, ge=1)
    budget_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)


class RepoPipelines(Strict):
    """A repository's ``.relay/pipelines.json`` as read once (None: it has none)."""

    source: Source | None
    #: it runs commands nobody has accepted in this version of the file
    needs_trust: bool


class TrustBody(Strict):
    """Accept the commands of the pipeline file at ``path`` as it was when read (``digest``)."""

    path: Path
    digest: str


# -- history and review ------------------------------------------------------------------

class RewindBody(Strict):
    sha: str
    session_id: str | None = None
    continue_: bool = Field(default=False, alias="continue")
    prompt: str | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class FinishBody(Strict):
    action: Literal["merge", "keep"]


class CommentBody(Strict):
    sha: str
    path: str
    line: int
    body: str
    side: Literal["old", "new"] = "new"
    #: a finished session's comment waits for its next run instead of starting one
    hold: bool = False


# -- knowledge ---------------------------------------------------------------------------

class RepoBody(Strict):
    repo: Path


# -- audit -------------------------------------------------------------------------------

class AuditLine(Strict):
    """One entry of the audit log and its line number (1 = the first)."""

    line: int
    entry: AuditEntry


class AuditVerify(Strict):
    """The data folder's audit log checked against the database's anchor."""

    report: VerifyReport
    #: the database holds an anchor for the log (its length and last entry are checked too)
    anchored: bool
    anchored_since_ms: int | None = None
    anchor_note: str | None = None

    @classmethod
    def of(cls, path: Path, anchor: Anchor | None) -> AuditVerify:
        """Verify the log at ``path`` against ``anchor`` (None: the chain alone)."""
        return cls(report=verify(path, anchor), anchored=anchor is not None,
                   anchored_since_ms=anchor.since_ms if anchor else None,
                   anchor_note=anchor.reset_note if anchor else None)
