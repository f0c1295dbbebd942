"""The Detector: every agent session on this machine, its state and intent, in one scan.

A scan lists each runtime's sessions under every folder the wallet counts (each account's
configuration folder and each CLI's default one), finds the live agent processes, reads the
sessions that changed since the last scan (a session is read again only when its file's size
or mtime moved: the cache is keyed by both), links each live process to its session, lifts
intent and state, and takes token usage from the wallet's transcript index (never a second
reader).

**Which sessions are shown** (decision): by default those with a live process or activity in
the last 24 hours, newest first — and only those are read: older sessions cost a ``stat``
each; ``all_sessions=True`` shows every session found. The default view's sessions are read
in full and their whole intent lifted; the older ones ``all_sessions`` adds are read as the
table needs them — the head and tail of the file (first prompt, cwd, times, state, last
words: ``DetectedSession.lifted`` False) — and in full when asked: :meth:`Detector.find`
(the detail pane, adoption) or ``whole=True`` (``relay-cli detect --json``). Many reads go to
the wallet's worker processes (:mod:`relay.detect.reading`). A session is read once per
change of its file; its state (which depends on its process and the clock) is decided at
every scan.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from relay.core.accounts import Account, AccountBook
from relay.core.errors import DetectNotFoundError, RelayError
from relay.core.live import HookedSession, LiveState, LiveStates, NoLiveStates
from relay.core.present import clip
from relay.core.store.db import now_ms
from relay.detect.lift import lift
from relay.detect.model import DetectedSession, DetectState, Intent, LiveProcess
from relay.detect.processes import ProcessScan, scan_processes
from relay.detect.reading import ReadJob, default_stores, read_many, read_one
from relay.detect.stores.base import SessionStore, StoreItem, StoreRead
from relay.detect.stores.vscdb import editor_roots
from relay.wallet.model import Tokens
from relay.wallet.service import Wallet
from relay.wallet.transcripts import TranscriptSource

#: sessions active this recently are shown without --all
RECENT_MS = 24 * 3600 * 1000



@dataclass(slots=True)
class DetectReport:
    sessions: list[DetectedSession] = field(default_factory=list)
    processes: list[LiveProcess] = field(default_factory=list)
    #: what could not be read, and why (the scan went on)
    problems: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


@dataclass(slots=True)
class _Found:
    item: StoreItem
    read: StoreRead
    intent: Intent


class Detector:
    """Scans for agent sessions; one per engine (its cache makes repeated scans cheap)."""

    def __init__(self, accounts: AccountBook, wallet: Wallet,
                 stores: Mapping[str, SessionStore] | None = None,
                 clock: Callable[[], int] = now_ms,
                 process_scan: Callable[[Sequence[Account]], ProcessScan] | None = None,
                 live: LiveStates | None = None) -> None:
        self.accounts = accounts
        #: the hooked sessions' live states (the board's): exact, so shown first
        self.live: LiveStates = live or NoLiveStates()
        self.wallet = wallet
        self.stores = dict(stores) if stores is not None else dict(default_stores())
        self.clock = clock
        self._process_scan = process_scan or scan_processes
        #: path → ((size, mtime), read, its intent): a session is read and lifted once per
        #: change (a summary read again in full when asked)
        self._cache: dict[Path, tuple[tuple[int, int], StoreRead, Intent]] = {}
        self._reads: dict[str, StoreRead] = {}
        #: cwd → its repository, during one scan (thousands of sessions share a few dozen)
        self._repos: dict[str | None, str | None] = {}
        #: (listing fingerprint, sessions asked, their totals) of the last usage lookup
        self._usage_seen: tuple[int, list[tuple[str, str]],
                                dict[tuple[str, str], Tokens]] | None = None
        self._lock = asyncio.Lock()

    async def scan(self, *, all_sessions: bool = False, usage: bool = True,
                   whole: bool = False) -> DetectReport:
        """Every session (see the module docstring for which are shown); ``whole``: every
        one shown read in full, its whole intent lifted (else the older ones
        ``all_sessions`` adds are summaries)."""
        started = time.perf_counter()
        async with self._lock:
            accounts = await self.accounts.all()
            sources = await self.wallet.sources()
            if self.wallet.config.wallet_default_folders:  # the editors' own storage folders
                sources += [TranscriptSource(runtime, runtime, root) for runtime, root in
                            editor_roots(dict(os.environ), sys.platform)]
            procs = await asyncio.to_thread(self._process_scan, accounts)
            named = {(p.runtime, p.agent_session_id) for p in procs.processes if p.agent_session_id}
            older = "whole" if whole else "summary" if all_sessions else None
            found, problems, listed = await asyncio.to_thread(
                self._read_all, sources, self.clock() - RECENT_MS, named, older)
            report = DetectReport(processes=procs.processes,
                                  problems=[*procs.problems, *problems])
            totals = await self._usage(found, listed) if usage else {}
            # lifting many sessions (--all) takes a while: off the caller's (window's) thread
            report.sessions = await asyncio.to_thread(self._sessions, found, report.processes,
                                                      totals, self.clock(), all_sessions)
        report.sessions.sort(key=lambda s: (s.process is None, -(s.last_activity_ms or 0)))
        report.elapsed_s = time.perf_counter() - started
        return report

    def _sessions(self, found: list[_Found], processes: list[LiveProcess],
                  totals: dict[tuple[str, str], Tokens], now: int,
                  all_sessions: bool) -> list[DetectedSession]:
        links = _link([f.read for f in found], processes)
        shown = []
        self._repos.clear()
        for f in found:
            session = self._session(f.read, f.intent, links.get(f.item.path), now)
            session.usage = totals.get((session.entry, session.agent_session_id))
            self._reads[session.id] = f.read
            if all_sessions or session.process is not None or (
                    session.last_activity_ms or 0) >= now - RECENT_MS:
                shown.append(session)
        return shown

    async def find(self, key: str) -> tuple[DetectedSession, StoreRead]:
        """The session named by its id (``runtime:session``) or a unique prefix of either.

        The default view is looked in first (it reads only recent sessions); every session
        is read only when the one named is not there.
        """
        matches = _named(await self.scan(), key) or _named(await self.scan(all_sessions=True), key)
        if len(matches) != 1:
            what = "No detected session" if not matches else f"{len(matches)} detected sessions"
            raise DetectNotFoundError(f"{what} match {key!r}.",
                                      "List them with `relay-cli detect --all`; give more of "
                                      "the id.")
        found = matches[0]
        if self._reads[found.id].whole:
            return found, self._reads[found.id]
        async with self._lock:  # a summary: read in full and lifted now (on demand)
            return await asyncio.to_thread(self._lift_whole, found)

    def _lift_whole(self, found: DetectedSession) -> tuple[DetectedSession, StoreRead]:
        item = self._reads[found.id].item
        _, read, intent = read_one(self.stores[item.runtime], ReadJob(item, whole=True))
        self._cache[item.path] = ((item.size, item.mtime_ns), read, intent)
        self._reads[found.id] = read
        session = self._session(read, intent, found.process, self.clock())
        session.usage = found.usage
        return session, read

    # -- reading ----------------------------------------------------------------------

    def _read_all(self, sources: Sequence[TranscriptSource], since: int,
                  named: set[tuple[str, str]], older: str | None,
                  ) -> tuple[list[_Found], list[str], int]:
        """Read the sessions to show: changed since ``since`` or named by a live process, in
        full; the older ones as ``older`` says (``"summary"``, ``"whole"``, or None: listed
        — a ``stat`` — but not read). The last value is a fingerprint of every listed file's
        size and mtime: equal means nothing changed."""
        found: list[_Found] = []
        jobs: list[ReadJob] = []
        problems: list[str] = []
        seen: set[Path] = set()
        stamps: list[tuple[Path, int, int]] = []
        for source in sources:
            store = self.stores.get(source.runtime)
            if store is None:
                continue
            listing = store.list(source.root, source.entry)
            problems += listing.problems
            for item in listing.items:
                if item.path in seen:
                    continue
                seen.add(item.path)
                stamps.append((item.path, item.size, item.mtime_ns))
                recent = (item.mtime_ns // 1_000_000 >= since
                          or (item.runtime, item.agent_session_id) in named)
                if not recent and older is None:
                    continue
                job = ReadJob(item, whole=recent or older == "whole")
                cached = self._cache.get(item.path)
                if cached is not None and cached[0] == (item.size, item.mtime_ns) and (
                        cached[1].whole or not job.whole):
                    found.append(_Found(item, cached[1], cached[2]))
                else:
                    jobs.append(job)
        for path in set(self._cache) - seen:  # gone since the last scan
            del self._cache[path]
        for job, read, intent in read_many(jobs, self.stores):
            self._cache[job.item.path] = ((job.item.size, job.item.mtime_ns), read, intent)
            found.append(_Found(job.item, read, intent))
        return found, problems, hash(tuple(stamps))

    # -- one session ------------------------------------------------------------------

    def _session(self, read: StoreRead, intent: Intent, process: LiveProcess | None,
                 now: int) -> DetectedSession:
        item = read.item
        lifted = lift(read, process, now, intent)
        hooked = self.live.get(item.agent_session_id) if item.runtime == "claude" else None
        state, why, resets, exact = lifted.state, lifted.why, lifted.resets_at_ms, False
        if hooked is not None and not (state in ("ended", "crashed") and hooked.state != "ended"):
            # the hooks' state is exact; a process that is gone without a SessionEnd is not
            state, why, exact = _HOOK_STATES[hooked.state], hook_why(hooked), True
            resets = resets if state == "blocked" else None
        if read.cwd not in self._repos:
            self._repos[read.cwd] = _repo_of(read.cwd)
        return DetectedSession(
            runtime=item.runtime, agent_session_id=item.agent_session_id, entry=item.entry,
            source=item.path, cwd=read.cwd, repo=self._repos[read.cwd], lifted=read.whole,
            started_ms=read.started_ms,
            # a record's own time, or the file's when that is later (a line without a time)
            last_activity_ms=max(read.last_activity_ms or 0, item.mtime_ns // 1_000_000),
            state=state, why=why, resets_at_ms=resets, hooked=exact,
            intent=lifted.intent, process=process, problems=list(read.problems))

    async def _usage(self, found: list[_Found], listed: int) -> dict[tuple[str, str], Tokens]:
        """Tokens per (account, agent session) from the wallet's index — refreshed first,
        unless no transcript changed since the last scan (then the last answer stands)."""
        sessions = [(f.item.entry, f.item.agent_session_id) for f in found]
        if self._usage_seen is not None and self._usage_seen[0] == listed and \
                set(self._usage_seen[1]) >= set(sessions):
            return self._usage_seen[2]
        try:
            await self.wallet.refresh_index()
            totals = await self.wallet.session_totals(sessions)
        except RelayError:
            return {}
        self._usage_seen = (listed, sessions, totals)
        return totals


_HOOK_STATES: dict[LiveState, DetectState] = {
    "working": "working", "needs_input": "needs_input", "idle": "idle",
    "quota_blocked": "blocked", "ended": "ended"}


def hook_why(hooked: HookedSession) -> str:
    """Why a hooked session is in its state, from what its hooks said."""
    what = {"permission": "waits for a permission", "question": "asked a question"}.get(
        hooked.needs or "", "")
    parts = [p for p in (what, hooked.detail) if p]
    return clip(": ".join(parts), 200) if parts else "reported by its hooks"


def _named(report: DetectReport, key: str) -> list[DetectedSession]:
    return [s for s in report.sessions if key in (s.id, s.agent_session_id)
            or s.id.startswith(key) or s.agent_session_id.startswith(key)]


def _link(reads: list[StoreRead], processes: list[LiveProcess]) -> dict[Path, LiveProcess]:
    """Each live process's session: the one it names, else the newest of its runtime and cwd."""
    links: dict[Path, LiveProcess] = {}
    by_id = {(r.item.runtime, r.item.agent_session_id): r for r in reads}
    for p in processes:
        named = by_id.get((p.runtime, p.agent_session_id or ""))
        if named is None and p.cwd is not None:
            here = [r for r in reads if r.item.runtime == p.runtime and r.cwd == p.cwd]
            named = max(here, key=lambda r: r.last_activity_ms or 0, default=None)
        if named is not None and named.item.path not in links:
            links[named.item.path] = p
    return links


def _repo_of(cwd: str | None) -> str | None:
    """The git work tree holding ``cwd`` (found by walking up to a ``.git``), if any."""
    if not cwd or not Path(cwd).is_absolute():
        return None
    path = Path(cwd)
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return str(folder)
    return None
