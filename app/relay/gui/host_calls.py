"""The feature docks' way to the host's services, whichever side of the API the window is on.

A window that hosts reaches the engine's services (``engine.wallet``, ``engine.history``…);
a window that is a client of a host reaches the client's services of the same names
(:mod:`relay.api.client_features`), which take the same arguments and return the same
models. So each backend (``*_backend.py``) is written once, against :attr:`HostCalls.services`,
and goes through :class:`HostCalls` — one small adapter — only for what differs: what is
sync on the engine (async here on both sides), and what the engine does with a module
function where the client has a method. No Qt here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from relay.api.client import RelayClient
from relay.core.accounts import Account
from relay.core.errors import HostError
from relay.detect.adopt import Adopted
from relay.engine.account_check import AccountCheck, check_account
from relay.engine.engine import Engine
from relay.pipelines import planner, trust
from relay.pipelines.ledger import RunInfo, StepInfo
from relay.runtimes.registry import adapter_class

#: the engine this window hosts, or the API of the host it is a client of
Services = Engine | RelayClient


class HostCalls(Protocol):
    """:attr:`services`, and the calls that are not the same on both sides."""

    @property
    def services(self) -> Services: ...

    async def watermark(self) -> float:
        """0–1: a window at or past it is handed off before the wall (the tray warns)."""
        ...

    async def check_account(self, account: Account) -> AccountCheck:
        """Whether the account answers (a real, tiny request, made by the host)."""
        ...

    async def adopt(self, detected_id: str, to_entry: str, in_place: bool) -> Adopted:
        """Continue a detected session on ``to_entry`` from a signed brief."""
        ...

    async def run_status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]: ...

    async def runs(self, limit: int = 50) -> list[RunInfo]: ...

    async def untrusted(self, repo: Path) -> trust.Source | None:
        """The repository's pipeline file when it runs commands nobody accepted, else None."""
        ...

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """``listener(run_id)`` after each change the host's pipelines make, where the host
        tells (in this process); returns unsubscribe. Elsewhere the run is polled."""
        ...

    async def plan(self, goal: str, repo: Path, runtime: str) -> planner.Plan:
        """A graph for ``goal`` from the ``runtime`` planner (validated, not saved or run)."""
        ...

    async def board_link(self, task: str | None = None) -> str:
        """A one-time URL that signs a browser in to the host's web board (at ``task``)."""
        ...


class Rebinds(Protocol):
    """A backend over the host's services that can go on over others: a client window whose
    host stopped hosts itself, and its docks go on over its engine."""

    def rebind(self, services: Services) -> None: ...


def host_calls(services: Services) -> HostCalls:
    """The adapter for ``services``."""
    return EngineCalls(services) if isinstance(services, Engine) else ClientCalls(services)


class OverHost:
    """A backend over the host's services and their adapter; :meth:`rebind` (:class:`Rebinds`)
    puts it over others."""

    def __init__(self, services: Services) -> None:
        self.rebind(services)

    def rebind(self, services: Services) -> None:
        """Go on over ``services`` (the window's host stopped and the window hosts now)."""
        self._host = host_calls(services)
        self._services = services


class EngineCalls:
    """:class:`HostCalls` in the window that hosts: the engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def services(self) -> Engine:
        return self.engine

    async def watermark(self) -> float:
        return float(self.engine.wallet.watermark)

    async def check_account(self, account: Account) -> AccountCheck:
        return await check_account(account, self.engine.accounts, self.engine.config)

    async def adopt(self, detected_id: str, to_entry: str, in_place: bool) -> Adopted:
        from relay.detect.adopt import adopt  # its contract and worktree machinery, when used

        detected, read = await self.engine.detector.find(detected_id)
        return await adopt(self.engine, detected, read, to_entry, in_place=in_place)

    async def run_status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        return self.engine.pipelines.status(run_id)

    async def runs(self, limit: int = 50) -> list[RunInfo]:
        return self.engine.pipelines.runs(limit)

    async def untrusted(self, repo: Path) -> trust.Source | None:
        source = await asyncio.to_thread(trust.repo_source, repo)
        return source if source is not None and self.engine.pipelines.needs_trust(source) else None

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        listeners = self.engine.pipelines.listeners
        listeners.append(listener)

        def unsubscribe() -> None:
            if listener in listeners:
                listeners.remove(listener)
        return unsubscribe

    async def plan(self, goal: str, repo: Path, runtime: str) -> planner.Plan:
        usable = await asyncio.to_thread(usable_runtimes, self.engine, runtime)  # runs --version
        return await planner.plan(self.engine, goal, repo, runtime, runtimes=usable)

    async def board_link(self, task: str | None = None) -> str:
        # the web board is the API server's (this process serves it): asked like any client
        client = RelayClient.for_home(self.engine.config.home)
        if client is None:
            raise HostError("This window's API is not served, so it has no web board.",
                            "Restart Relay; `relay-cli status` says which process hosts.")
        async with client:
            return await client.board.login_link(task)


class ClientCalls:
    """:class:`HostCalls` in a window that is a client of a host: the host's API."""

    def __init__(self, client: RelayClient) -> None:
        self.client = client

    @property
    def services(self) -> RelayClient:
        return self.client

    async def watermark(self) -> float:
        return await self.client.wallet.watermark()

    async def check_account(self, account: Account) -> AccountCheck:
        return await self.client.accounts.check(account.provider, account.label)

    async def adopt(self, detected_id: str, to_entry: str, in_place: bool) -> Adopted:
        return await self.client.detector.adopt(detected_id, to_entry, in_place=in_place)

    async def run_status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        return await self.client.pipelines.status(run_id)

    async def runs(self, limit: int = 50) -> list[RunInfo]:
        return await self.client.pipelines.runs(limit)

    async def untrusted(self, repo: Path) -> trust.Source | None:
        return await self.client.pipelines.untrusted(repo)

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        return lambda: None  # the API has no run-change stream: the view polls a live run

    async def plan(self, goal: str, repo: Path, runtime: str) -> planner.Plan:
        raise HostError(f"Planning a pipeline from a goal runs in the window that hosts "
                        f"({self.client.url}), not in an attached one yet.",
                        "Draw the pipeline here, or plan it in the hosting window.")

    async def board_link(self, task: str | None = None) -> str:
        return await self.client.board.login_link(task)


def usable_runtimes(engine: Engine, planner_runtime: str) -> list[str]:
    """What a planned graph may use: the installed runtimes (the simulated demo only when it
    is the demo that plans), the planner's own first."""
    simulated = adapter_class(planner_runtime).simulated
    found = [i.runtime for i in engine.runtime_infos()
             if i.problem is None and adapter_class(i.runtime).simulated == simulated]
    return [planner_runtime, *(r for r in found if r != planner_runtime)]
