"""What the Detect dock needs from the host, as one small interface.

:class:`DetectBackend` is the seam between the Detect view-model and the Qt-free core:
the host's :class:`~relay.detect.service.Detector` (a scan reads only what changed
since the last one), the adoption of a detected session (:func:`relay.detect.adopt.adopt`)
and where a session can be adopted onto (the runtimes Relay drives and the account
book's accounts of those runtimes). :class:`HostDetectBackend` is the real one — over the
engine this window hosts or the host's API alike (:mod:`relay.gui.host_calls`);
tests pass an in-memory fake. No Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from relay.detect.model import DetectedSession
from relay.gui.host_calls import OverHost
from relay.gui.runtime_choice import entry_choices
from relay.runtimes.registry import available_runtimes


@dataclass(frozen=True, slots=True)
class DetectScan:
    """One look at the agent sessions on this machine."""

    sessions: list[DetectedSession] = field(default_factory=list)
    #: what could not be read, and why (the scan went on)
    problems: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class AdoptAnswer:
    """A detected session taken over: the Relay session that goes on with it."""

    session_id: str
    to_entry: str
    #: the folder of the signed continuation contract
    contract_dir: Path


class DetectBackend(Protocol):
    """Detection as the GUI calls it (every call off the GUI's way)."""

    async def scan(self, all_sessions: bool) -> DetectScan:
        """The sessions live or active in the last 24 hours (``all_sessions``: every one)."""
        ...

    async def detail(self, detected_id: str) -> DetectedSession:
        """The session with its whole intent lifted (a scan with ``all_sessions`` gives
        the older ones as summaries: ``lifted`` False)."""
        ...

    async def targets(self) -> list[str]:
        """Where a session can be adopted onto: ``runtime`` and ``runtime:account`` entries."""
        ...

    async def adopt(self, detected_id: str, to_entry: str, in_place: bool) -> AdoptAnswer:
        """Continue ``detected_id`` on ``to_entry`` from a signed brief; the new session runs."""
        ...


class HostDetectBackend(OverHost):
    """The real :class:`DetectBackend`: the host's detector, account book and adoption."""

    async def scan(self, all_sessions: bool) -> DetectScan:
        report = await self._services.detector.scan(all_sessions=all_sessions)
        return DetectScan(list(report.sessions), list(report.problems), report.elapsed_s)

    async def detail(self, detected_id: str) -> DetectedSession:
        detected, _read = await self._services.detector.find(detected_id)
        return detected

    async def targets(self) -> list[str]:
        runtimes = available_runtimes()
        accounts = [a for a in await self._services.accounts.all() if a.provider in runtimes]
        return entry_choices(runtimes, [a.entry for a in accounts])

    async def adopt(self, detected_id: str, to_entry: str, in_place: bool) -> AdoptAnswer:
        adopted = await self._host.adopt(detected_id, to_entry, in_place)
        return AdoptAnswer(adopted.session_id, to_entry, adopted.contract_dir)

