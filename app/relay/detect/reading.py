"""Reading many sessions: in this process, or on the wallet's worker processes.

A scan's reads are :class:`ReadJob` s — a session in full (its whole intent lifted), or a
summary (its head and tail: what the table shows; :func:`relay.detect.stores.base.summary`).
Many full reads (``detect --json --all``, a cold default view over a busy month) go to the
wallet's worker pool (:mod:`relay.wallet.usage_pool`, one pool for both), as many processes
as the machine has free cores; a worker reads and lifts, and sends back the read and its
intent. Summaries are read here (decision, measured: docs/performance.md "Detect"): one
takes ~0.5 ms, less than a worker spends sending it back — on the 1 GiB set, 2,044 reads
(1,619 summaries) took 1.0 s of CPU here and 2.4 s on two workers (start-up, pickled
events). A store the pool does not know (a test's) is read here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache

from relay.detect.lift import lift_intent
from relay.detect.model import Intent
from relay.detect.stores.base import SessionStore, StoreItem, StoreRead, summary
from relay.wallet import usage_pool

#: a worker gets sessions in batches of about this many bytes to read
BATCH_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReadJob:
    item: StoreItem
    #: read in full and lift the whole intent (else a summary)
    whole: bool


Done = tuple[ReadJob, StoreRead, Intent]


def _size(job: ReadJob) -> int:
    return job.item.size


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
    """Every job read, as it finishes (not in order): the full reads on ``workers``
    processes (default: the free cores) when they take in enough bytes, the rest here."""
    known = default_stores()
    pooled = [j for j in jobs
              if j.whole and stores.get(j.item.runtime) is known.get(j.item.runtime)]
    count = workers or usage_pool.free_cores()
    if count < 2 or len(pooled) < 2 or sum(map(_size, pooled)) < usage_pool.PARALLEL_BYTES:
        pooled = []
    if pooled:
        yield from usage_pool.results(list(usage_pool.batches(pooled, _size, BATCH_BYTES)),
                                      count, read_batch)
    chosen = set(pooled)
    for job in jobs:
        if job not in chosen:
            yield read_one(stores[job.item.runtime], job)
