"""relay.db's one scrubbing point: a SQLite connection that scrubs what it writes.

Every connection Relay opens on relay.db — the store's (:class:`~relay.core.store.db.Store`,
so every statement the :class:`~relay.core.store.writer.EventWriter` commits) and the
pipeline ledger's — is a :class:`ScrubbingConnection` (``sqlite3.connect(…,
factory=ScrubbingConnection)``). Its ``execute`` and ``executemany`` pass every text
parameter of a statement that writes (``INSERT``, ``UPDATE``, ``REPLACE``) through
:func:`relay.core.redact.scrub`, whatever the table or column: a session's task and spec,
a handoff's reason and error, a review comment, a pipeline step's output and log, a
breaker's reason. A new table or column cannot skip it. Ids, paths, shas and numbers pass
unchanged (the scrubber leaves them be; ``tests/core/test_store_scrub.py``).

Bytes parameters are not text and pass as they are: the one statement that takes them is
the events batch, whose events the writer scrubs first, field by field
(:func:`relay.core.scrub_events.scrub_event` in :meth:`EventWriter.submit`), so a marker
never lands inside a JSON escape.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from relay.core.redact import scrub

__all__ = ["ScrubbingConnection", "scrub_params", "writes"]

_WRITE = re.compile(r"\b(?:INSERT|UPDATE|REPLACE)\b", re.IGNORECASE)


@functools.lru_cache(maxsize=512)
def writes(sql: str) -> bool:
    """Whether ``sql`` may write a row (its parameters are then scrubbed)."""
    return _WRITE.search(sql) is not None


#: texts this short are scrubbed once and remembered: the same ids, owners, kinds and short
#: notes are written again and again (a pipeline step's every row names its run and lease
#: owner; scrubbing ``host:pid:start:nonce`` costs ~35 µs). ``scrub`` is a pure function of
#: its text (the built-in detections; no literal is ever added to it), so a remembered
#: answer is the answer.
SHORT = 96


_scrub_short = functools.lru_cache(maxsize=2048)(scrub)


def _scrub(text: str) -> str:
    return _scrub_short(text) if len(text) <= SHORT else scrub(text)


def scrub_params(params: Any) -> Any:
    """``params`` (a sequence or a mapping) with every ``str`` scrubbed; the same object when
    nothing changed."""
    if isinstance(params, Mapping):
        out = {k: _scrub(v) if isinstance(v, str) else v for k, v in params.items()}
        return params if all(out[k] is params[k] for k in params) else out
    if not params:
        return params
    seq: list[Any] | None = None
    for i, value in enumerate(params):
        if isinstance(value, str):
            clean = _scrub_short(value) if len(value) <= SHORT else scrub(value)
            if clean != value:
                if seq is None:
                    seq = list(params)
                seq[i] = clean
    return params if seq is None else tuple(seq)


class ScrubbingConnection(sqlite3.Connection):
    """A :class:`sqlite3.Connection` whose writing statements store no secret."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if parameters and writes(sql):
            parameters = scrub_params(parameters)
        return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        if writes(sql):
            parameters = (scrub_params(p) for p in parameters)
        return super().executemany(sql, parameters)
