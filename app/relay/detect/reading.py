"""Reading many sessions: in this process, or on the wallet's worker processes.

A scan's reads are :class:`ReadJob` s — a session in full (its whole intent lifted), or a
summary (its head and tail: what the table shows; :func:`relay.detect.stores.base.summary`).
Many of them (``detect --all``: thousands of transcripts) go to the wallet's worker pool
(:mod:`relay.wallet.usage_pool`, one pool for both), as many processes as the machine has
free cores; a few, or a store the pool does not know (a test's), are read here. A worker
reads and lifts: what comes back is the read and its intent, never the raw lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache

from relay.detect.lift import lift_intent
from relay.detect.model import Intent
from relay.detect.stores.base import SessionStore, StoreItem, StoreRead, summary
from relay.detect.stores.transcript import HEAD_BYTES, TAIL_BYTES
from relay.wallet import usage_pool

#: a worker gets sessions in batches of about this many bytes to read
BATCH_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReadJob:
    item: StoreItem
    #: read in full and lift the whole intent (else a summary)
    whole: bool

    @property
    def cost(self) -> int:
        """About how many bytes the read takes in."""
        return self.item.size if self.whole else min(self.item.size, HEAD_BYTES + TAIL_BYTES)


Done = tuple[ReadJob, StoreRead, Intent]


def _cost(job: ReadJob) -> int:
    return job.cost


@cache
def default_stores() -> Mapping[str, SessionStore]:
    """Every runtime's store (imported here: the registry of detection)."""
    from relay.detect.stores import claude, cline, codex, continuedev, cursor, gemini, pi, vscdb

    return {"claude": claude.STORE, "codex": codex.STORE, "gemini": gemini.STORE, "pi": pi.STORE,
            "cline": cline.STORE, "copilot": vscdb.COPILOT_STORE, "cursor": cursor.STORE,
            "continue": continuedev.STORE}


def read_one(store: SessionStore, job: ReadJob) -> Done:
    """One session read (in full or its summary) and its intent lifted."""
    read = store.read(job.item) if job.whole else summary(store, job.item)
    return job, read, lift_intent(read)


def read_batch(jobs: list[ReadJob]) -> list[Done]:
    """:func:`read_one` over a batch with the default stores (what a worker is sent)."""
    stores = default_stores()
    return [read_one(stores[job.item.runtime], job) for job in jobs]


def read_many(jobs: list[ReadJob], stores: Mapping[str, SessionStore],
              workers: int | None = None) -> Iterator[Done]:
    """Every job read, as it finishes (not in order): on ``workers`` processes (default:
    the free cores) when there is enough to read, else here."""
    known = default_stores()
    pooled = [j for j in jobs if stores.get(j.item.runtime) is known.get(j.item.runtime)]
    here = [j for j in jobs if stores.get(j.item.runtime) is not known.get(j.item.runtime)]
    count = workers or usage_pool.free_cores()
    if count < 2 or len(pooled) < 2 or sum(j.cost for j in pooled) < usage_pool.PARALLEL_BYTES:
        here, pooled = jobs, []
    if pooled:
        yield from usage_pool.results(
            list(usage_pool.batches(pooled, _cost, BATCH_BYTES)), count, read_batch)
    for job in here:
        yield read_one(stores[job.item.runtime], job)
