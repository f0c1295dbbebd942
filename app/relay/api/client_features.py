"""The client's feature services: ``client.sessions``, ``client.wallet``, ``client.accounts``,
``client.detector``, ``client.pipelines``, ``client.history``, ``client.review``, ``client.knowledge``,
``client.audit``, ``client.breakers``, ``client.board``, ``client.integrations``,
``client.talk`` — the engine's services of the same names over the host's API.

Each method carries the engine service's name and arguments and returns the same models
(the services' dataclasses and pydantic models, rebuilt from the JSON), so a front end
written against ``engine.history`` works unchanged against ``client.history``. Every method
is async, including those that are sync on the engine (see :data:`SYNC_ON_THE_ENGINE`).
An account's API key is sent to the host to be stored and never comes back.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, Protocol, TypeVar, cast

from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from relay.core.accounts import UNCHANGED, Account
from relay.core.models import SessionRow

if TYPE_CHECKING:  # at run time: imported by the part that uses them (Part.models)
    from relay.api.client_board import BoardClient, IntegrationsClient
    from relay.api.client_talk import TalkClient
    from relay.api.schemas import AuditLine, AuditVerify, RepoPipelines, StatuslineRecorded
    from relay.core.pipeline_model import Pipeline
    from relay.detect.adopt import Adopted
    from relay.detect.model import DetectedSession
    from relay.detect.service import DetectReport
    from relay.detect.stores.base import StoreRead
    from relay.engine.account_check import AccountCheck
    from relay.history.diffmodel import FileDiff
    from relay.history.model import (
        FinishResult,
        FinishSummary,
        ReviewComment,
        RewindResult,
        Timeline,
    )
    from relay.history.runs import RunTimeline
    from relay.knowledge.model import Hit, Stats
    from relay.knowledge.scanner import ScanReport
    from relay.knowledge.service import IngestReport
    from relay.pipelines.ledger import LogEntry, RunInfo, StepInfo
    from relay.pipelines.planner import Plan
    from relay.pipelines.trust import Source
    from relay.pipelines.validate import Problem
    from relay.sessions.breaker import Breaker
    from relay.wallet.budgets import Budget, BudgetCheck
    from relay.wallet.model import AccountHistory, AccountView, LimitSnapshot
    from relay.wallet.usage_refresh import RefreshReport
    from relay.wallet.usage_report import UsageTable

M = TypeVar("M")

#: the client's methods whose engine counterpart is sync (the client's are all async)
SYNC_ON_THE_ENGINE: Final = ("wallet.watermark (an attribute)", "pipelines.status",
                             "pipelines.runs", "pipelines.log")
#: where the client's methods differ from the engine's besides being async
DIFFERENCES: Final = (
    "breakers.get(entry) / breakers.reset(entry): the host's clock, no session",
    "pipelines.plan(goal, repo, runtime, …): the planner (relay.pipelines.planner.plan) run by "
    "the host",
    "wallet.record_statusline(payload, config_dir): relay.wallet.statusline.record_readings "
    "with the host's books",
    "audit.entries(limit): the latest lines of the host's audit log",
    "board.live(): the host's live states as a list (engine.board.live_states().all())",
    "board.login_link(): the web board's one-time sign-in URL (POST /api/v1/board/login-link)",
    "integrations.claude / claude_apply(config_dir, account): no url, the host's own is used")


class _Caller(Protocol):
    async def call(self, method: str, path: str, *, body: Any = None,
                   params: dict[str, Any] | None = None) -> Any: ...


@functools.cache
def _adapter(model: Any) -> TypeAdapter[Any]:  # a type or a generic alias: hashable
    return TypeAdapter(model)


def _import_models(models: tuple[str, ...]) -> None:
    here = globals()
    for target in models:
        module, _, name = target.partition(":")
        if name not in here:
            here[name] = getattr(importlib.import_module(module), name)


def seg(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


class Part:
    """One service's routes; ``_ask`` makes a call and rebuilds the answer as ``model``.

    ``models`` names (``module:Class``) the classes its methods rebuild answers as: they are
    imported (into this module, where the methods find them) when the part is first made,
    so a client that only lists sessions never loads detect (pygit2, the briefing), the
    wallet's books or the pipeline planner (docs/performance.md "relay-cli beside a running
    host"; tests/api/test_client_lazy.py checks each part names what its methods use)."""

    models: ClassVar[tuple[str, ...]] = ()

    def __init__(self, client: _Caller) -> None:
        self._client = client
        _import_models(self.models)

    async def _ask(self, model: type[M], method: str, path: str, *, body: Any = None,
                   **params: Any) -> M:
        answer = await self._client.call(
            method, path, body=None if body is None else to_jsonable_python(body),
            params=params)
        result: M = _adapter(cast(Hashable, model)).validate_python(answer)
        return result


class SessionsClient(Part):
    """``engine.sessions``: the session list, archive and unarchive."""

    async def recent(self, limit: int = 200, archived: bool = False) -> list[SessionRow]:
        return await self._ask(list[SessionRow], "GET", "/sessions", limit=limit,
                               archived=archived or None)

    async def archive(self, session_id: str) -> SessionRow:
        return await self._ask(SessionRow, "POST", f"/sessions/{seg(session_id)}/archive")

    async def unarchive(self, session_id: str) -> SessionRow:
        return await self._ask(SessionRow, "POST", f"/sessions/{seg(session_id)}/unarchive")


class BudgetsClient(Part):
    models = ("relay.wallet.budgets:BudgetCheck",)

    async def period_checks(self, entry: str | None = None) -> list[BudgetCheck]:
        return await self._ask(list[BudgetCheck], "GET", "/wallet/budgets", entry=entry)


class BudgetBookClient(Part):
    """``engine.wallet.budget_book``: setting and clearing budgets."""

    models = ("relay.wallet.budgets:Budget",)

    async def set(self, scope: str, limit_usd: float, entry: str = "*") -> Budget:
        return await self._ask(Budget, "PUT", f"/wallet/budgets/{seg(scope)}",
                               body={"limit_usd": limit_usd, "entry": entry})

    async def clear(self, scope: str, entry: str = "*") -> bool:
        return await self._ask(bool, "DELETE", f"/wallet/budgets/{seg(scope)}", entry=entry)

    async def set_session(self, session_id: str,
                          field: Literal["budget_usd", "task_budget_usd"],
                          limit_usd: float | None) -> str:
        answer = await self._ask(dict[str, str], "PUT",
                                 f"/wallet/session-budgets/{seg(session_id)}",
                                 body={"field": field, "limit_usd": limit_usd})
        return answer["id"]


class WalletClient(Part):
    """``engine.wallet``."""

    models = ("relay.wallet.model:AccountHistory", "relay.wallet.model:AccountView",
              "relay.wallet.usage_refresh:RefreshReport",
              "relay.wallet.usage_report:UsageTable", "relay.api.schemas:StatuslineRecorded")

    def __init__(self, client: _Caller) -> None:
        super().__init__(client)
        self.budgets = BudgetsClient(client)
        self.budget_book = BudgetBookClient(client)

    async def summary(self) -> list[AccountView]:
        return await self._ask(list[AccountView], "GET", "/wallet")

    async def history(self, entry: str) -> AccountHistory:
        return await self._ask(AccountHistory, "GET", f"/wallet/history/{seg(entry)}")

    async def refresh_index(self, progress: Callable[[int, int], None] | None = None
                            ) -> RefreshReport:
        """Read the transcripts appended since the last refresh (the host does; ``progress``
        is told only the end: the API has no progress stream)."""
        report: RefreshReport = await self._ask(RefreshReport, "POST", "/wallet/refresh")
        if progress is not None:
            progress(1, 1)
        return report

    async def watermark(self) -> float:
        return await self._ask(float, "GET", "/wallet/watermark")

    async def usage_report(self, by: str = "day", since: str | None = None,
                           account: str | None = None, refresh: bool = False) -> UsageTable:
        """:func:`relay.wallet.usage_report.usage_report` run by the host (``refresh``: it
        reads what was appended to the transcripts first — one request for both)."""
        return await self._ask(UsageTable, "GET", "/wallet/usage", by=by, since=since,
                               account=account, refresh=refresh or None)

    async def record_statusline(self, payload: dict[str, Any], config_dir: Path
                                ) -> tuple[str, list[LimitSnapshot]]:
        """Claude Code's status-line readings recorded by the host for the account whose
        folder is ``config_dir``: that account's entry and the readings."""
        done = await self._ask(StatuslineRecorded, "POST", "/wallet/statusline",
                               body={"payload": payload, "config_dir": config_dir})
        return done.entry, done.readings


class BreakersClient(Part):
    """``engine.breakers``: the circuit breakers (an account Relay thinks is out)."""

    models = ("relay.sessions.breaker:Breaker",)

    async def get(self, entry: str) -> Breaker | None:
        found: Breaker | None = await self._ask(
            Breaker | None, "GET", f"/wallet/breakers/{seg(entry)}")  # type: ignore[arg-type]
        return found

    async def reset(self, entry: str) -> None:
        await self._ask(object, "DELETE", f"/wallet/breakers/{seg(entry)}")


class AccountsClient(Part):
    """``engine.accounts`` (the account book) and the account check."""

    models = ("relay.engine.account_check:AccountCheck",)

    async def all(self) -> list[Account]:
        return await self._ask(list[Account], "GET", "/accounts")

    async def get(self, provider: str, label: str) -> Account | None:
        found: Account | None = await self._ask(
            Account | None, "GET", f"/accounts/{seg(provider)}/{seg(label)}")  # type: ignore[arg-type]
        return found

    async def add(self, provider: str, label: str, config_dir: Path | None,
                  auth_kind: str = "cli_login", api_key: str | None = None) -> Account:
        return await self._ask(Account, "POST", "/accounts", body={
            "provider": provider, "label": label, "config_dir": config_dir,
            "auth_kind": auth_kind, "api_key": api_key})

    async def edit(self, provider: str, label: str, *, config_dir: Any = UNCHANGED,
                   auth_kind: Any = UNCHANGED, api_key: Any = UNCHANGED,
                   new_label: Any = UNCHANGED) -> Account:
        """What is left UNCHANGED stays as it is (``api_key`` None too: the stored key)."""
        given = {"config_dir": config_dir, "auth_kind": auth_kind, "api_key": api_key,
                 "new_label": new_label}
        body = {k: v for k, v in given.items() if v is not UNCHANGED
                and (v is not None or k == "config_dir")}
        return await self._ask(Account, "PATCH", f"/accounts/{seg(provider)}/{seg(label)}",
                               body=body)

    async def remove(self, provider: str, label: str) -> None:
        await self._ask(object, "DELETE", f"/accounts/{seg(provider)}/{seg(label)}")

    async def set_preferred(self, provider: str, label: str | None) -> None:
        await self._ask(object, "PUT", f"/accounts/{seg(provider)}/preferred",
                        body={"label": label})

    async def set_paused(self, provider: str, label: str, paused: bool) -> None:
        await self._ask(object, "PUT", f"/accounts/{seg(provider)}/{seg(label)}/paused",
                        body={"paused": paused})

    async def check(self, provider: str, label: str) -> AccountCheck:
        """:func:`relay.engine.account_check.check_account`, run by the host."""
        return await self._ask(AccountCheck, "POST",
                               f"/accounts/{seg(provider)}/{seg(label)}/check")


class DetectorClient(Part):
    """``engine.detector`` and adopting what it found."""

    models = ("relay.detect.service:DetectReport", "relay.detect.adopt:Adopted",
              "relay.detect.model:DetectedSession", "relay.detect.stores.base:StoreRead")

    async def scan(self, *, all_sessions: bool = False, usage: bool = True,
                   whole: bool = False) -> DetectReport:
        return await self._ask(DetectReport, "GET", "/detect", all=all_sessions, usage=usage,
                               whole=whole)

    async def find(self, key: str) -> tuple[DetectedSession, StoreRead]:
        return await self._ask(tuple[DetectedSession, StoreRead], "GET", f"/detect/{seg(key)}")

    async def adopt(self, detected_id: str, to_entry: str, *, in_place: bool = False
                    ) -> Adopted:
        """:func:`relay.detect.adopt.adopt` of the session ``detected_id`` names."""
        return await self._ask(Adopted, "POST", f"/detect/{seg(detected_id)}/adopt",
                               body={"to": to_entry, "in_place": in_place})


class PipelinesClient(Part):
    """``engine.pipelines`` and a repository's pipeline file."""

    models = ("relay.pipelines.ledger:LogEntry", "relay.pipelines.ledger:RunInfo",
              "relay.pipelines.ledger:StepInfo", "relay.pipelines.planner:Plan",
              "relay.pipelines.validate:Problem", "relay.api.schemas:RepoPipelines")

    async def start(self, pipeline: Pipeline, repo: Path, concurrency: int | None = None,
                    budget_usd: float | None = None) -> str:
        answer = await self._ask(dict[str, str], "POST", "/pipelines/runs", body={
            "pipeline": pipeline, "repo": repo, "concurrency": concurrency,
            "budget_usd": budget_usd})
        return answer["id"]

    async def resume(self, run_id: str) -> str:
        answer = await self._ask(dict[str, str], "POST", f"/pipelines/runs/{seg(run_id)}/resume")
        return answer["id"]

    async def cancel(self, run_id: str) -> RunInfo:
        return await self._ask(RunInfo, "POST", f"/pipelines/runs/{seg(run_id)}/cancel")

    async def wait(self, run_id: str, poll_s: float = 25.0) -> RunInfo:
        """Until the run is finished (long polls of up to ``poll_s`` each)."""
        while True:
            run: RunInfo = await self._ask(RunInfo, "GET", f"/pipelines/runs/{seg(run_id)}/wait",
                                           timeout_s=min(max(poll_s, 0.1), 50))
            if run.finished:
                return run

    async def status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        return await self._ask(tuple[RunInfo, list[StepInfo]], "GET",
                               f"/pipelines/runs/{seg(run_id)}")

    async def runs(self, limit: int = 50) -> list[RunInfo]:
        return await self._ask(list[RunInfo], "GET", "/pipelines/runs", limit=limit)

    async def log(self, run_id: str, after_id: int = 0) -> list[LogEntry]:
        return await self._ask(list[LogEntry], "GET", f"/pipelines/runs/{seg(run_id)}/log",
                               after=after_id)

    async def plan(self, goal: str, repo: Path, runtime: str = "demo", model: str | None = None,
                   runtimes: list[str] | None = None) -> Plan:
        """:func:`relay.pipelines.planner.plan` run by the host (waits for its session)."""
        return await self._ask(Plan, "POST", "/pipelines/plan", body={
            "goal": goal, "repo": repo, "runtime": runtime, "model": model,
            "runtimes": runtimes})

    async def validate(self, pipeline: Pipeline) -> list[Problem]:
        """:func:`relay.pipelines.validate.problems` (empty: it may run)."""
        return await self._ask(list[Problem], "POST", "/pipelines/validate",
                               body={"pipeline": pipeline})

    async def repo_source(self, repo: Path) -> Source | None:
        """The repository's ``.relay/pipelines.json`` as the host reads it now."""
        return (await self._file(repo)).source

    async def untrusted(self, repo: Path) -> Source | None:
        """The repository's file when it runs commands nobody has accepted, else None."""
        found = await self._file(repo)
        return found.source if found.needs_trust else None

    async def _file(self, repo: Path) -> RepoPipelines:
        return await self._ask(RepoPipelines, "GET", "/pipelines/source", repo=str(repo))

    async def needs_trust(self, source: Source) -> bool:
        """Whether ``source`` (a file read by the caller) runs commands the user has not
        accepted in this version."""
        if not source.commands:
            return False
        return not source.digest or not await self._ask(
            bool, "GET", f"/pipelines/trusted/{seg(source.digest)}")

    async def require_trust(self, source: Source, hint: str) -> None:
        """:class:`PipelineUntrustedError` (listing the commands) unless ``source`` may run."""
        from relay.pipelines.service import untrusted

        if await self.needs_trust(source):
            raise untrusted(source, hint)

    async def trust(self, source: Source) -> None:
        """Accept ``source``'s commands — the version read (a file changed since is
        refused)."""
        await self._ask(object, "POST", "/pipelines/trust",
                        body={"path": source.path, "digest": source.digest})


class HistoryClient(Part):
    """``engine.history``: the time machine."""

    models = ("relay.history.model:FinishResult", "relay.history.model:FinishSummary",
              "relay.history.model:RewindResult", "relay.history.model:Timeline",
              "relay.history.runs:RunTimeline", "relay.history.diffmodel:FileDiff")

    async def timeline(self, session_id: str) -> Timeline:
        return await self._ask(Timeline, "GET", f"/history/sessions/{seg(session_id)}")

    async def run_timeline(self, run_id: str) -> RunTimeline:
        return await self._ask(RunTimeline, "GET", f"/history/runs/{seg(run_id)}")

    async def commit_diff(self, sha: str, session_id: str | None = None) -> list[FileDiff]:
        return await self._ask(list[FileDiff], "GET", f"/history/commits/{seg(sha)}/diff",
                               session=session_id)

    async def stint_diff(self, session_id: str, stint: int,
                         line: Timeline | None = None) -> list[FileDiff]:
        """``line`` is not sent: the host reads the timeline itself."""
        return await self._ask(list[FileDiff], "GET",
                               f"/history/sessions/{seg(session_id)}/stints/{stint}/diff")

    async def session_diff(self, session_id: str) -> list[FileDiff]:
        return await self._ask(list[FileDiff], "GET",
                               f"/history/sessions/{seg(session_id)}/diff")

    async def rewind(self, sha: str, *, session_id: str | None = None, continue_: bool = False,
                     prompt: str | None = None) -> RewindResult:
        return await self._ask(RewindResult, "POST", "/history/rewind", body={
            "sha": sha, "session_id": session_id, "continue": continue_, "prompt": prompt})

    async def summary(self, session_id: str) -> FinishSummary:
        return await self._ask(FinishSummary, "GET",
                               f"/history/sessions/{seg(session_id)}/summary")

    async def finish(self, session_id: str, action: Literal["merge", "keep"]) -> FinishResult:
        return await self._ask(FinishResult, "POST",
                               f"/history/sessions/{seg(session_id)}/finish",
                               body={"action": action})


class ReviewClient(Part):
    """``engine.review``: comments on diffs, sent to the session's agent when it is free."""

    models = ("relay.history.model:ReviewComment",)

    async def comment(self, session_id: str, sha: str, path: str, line: int, body: str,
                      side: Literal["old", "new"] = "new", *,
                      hold: bool = False) -> ReviewComment:
        return await self._ask(ReviewComment, "POST",
                               f"/history/sessions/{seg(session_id)}/comments",
                               body={"sha": sha, "path": path, "line": line, "body": body,
                                     "side": side, "hold": hold})

    async def comments(self, session_id: str, sha: str | None = None) -> list[ReviewComment]:
        return await self._ask(list[ReviewComment], "GET",
                               f"/history/sessions/{seg(session_id)}/comments", sha=sha)


class KnowledgeClient(Part):
    """``engine.knowledge``."""

    models = ("relay.knowledge.model:Hit", "relay.knowledge.model:Stats",
              "relay.knowledge.scanner:ScanReport", "relay.knowledge.service:IngestReport")

    async def retrieve(self, query: str, limit: int = 20, repo: Path | None = None
                       ) -> list[Hit]:
        return await self._ask(list[Hit], "GET", "/knowledge/search", q=query, limit=limit,
                               repo=str(repo) if repo else None)

    async def scan(self, repo: Path) -> ScanReport:
        return await self._ask(ScanReport, "POST", "/knowledge/scan", body={"repo": repo})

    async def ingest(self) -> IngestReport:
        """Index the host's session activity stored since the last ingest."""
        return await self._ask(IngestReport, "POST", "/knowledge/ingest")

    async def stats(self) -> Stats:
        return await self._ask(Stats, "GET", "/knowledge/stats")


class AuditClient(Part):
    models = ("relay.api.schemas:AuditLine", "relay.api.schemas:AuditVerify")

    async def verify(self) -> AuditVerify:
        """The host's audit log checked against its database's anchor."""
        return await self._ask(AuditVerify, "GET", "/audit/verify")

    async def entries(self, limit: int = 20) -> list[AuditLine]:
        """The latest ``limit`` entries of the host's audit log (not verified)."""
        return await self._ask(list[AuditLine], "GET", "/audit/entries", limit=limit)


class FeatureClients:
    """The services a :class:`~relay.api.client.RelayClient` offers besides sessions
    and events (a mixin: ``self`` makes the calls)."""

    @functools.cached_property
    def sessions(self) -> SessionsClient:
        return SessionsClient(self._caller())

    @functools.cached_property
    def wallet(self) -> WalletClient:
        return WalletClient(self._caller())

    @functools.cached_property
    def accounts(self) -> AccountsClient:
        return AccountsClient(self._caller())

    @functools.cached_property
    def detector(self) -> DetectorClient:
        return DetectorClient(self._caller())

    @functools.cached_property
    def pipelines(self) -> PipelinesClient:
        return PipelinesClient(self._caller())

    @functools.cached_property
    def history(self) -> HistoryClient:
        return HistoryClient(self._caller())

    @functools.cached_property
    def review(self) -> ReviewClient:
        return ReviewClient(self._caller())

    @functools.cached_property
    def knowledge(self) -> KnowledgeClient:
        return KnowledgeClient(self._caller())

    @functools.cached_property
    def audit(self) -> AuditClient:
        return AuditClient(self._caller())

    @functools.cached_property
    def breakers(self) -> BreakersClient:
        return BreakersClient(self._caller())

    @functools.cached_property
    def board(self) -> BoardClient:
        from relay.api.client_board import BoardClient as Built

        return Built(self._caller())

    @functools.cached_property
    def integrations(self) -> IntegrationsClient:
        from relay.api.client_board import IntegrationsClient as Built

        return Built(self._caller())

    @functools.cached_property
    def talk(self) -> TalkClient:
        from relay.api.client_talk import TalkClient as Built

        return Built(self._caller())

    def _caller(self) -> _Caller:
        assert hasattr(self, "call"), "FeatureClients is a RelayClient's mixin"
        return self
