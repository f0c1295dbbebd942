"""Runtimes and accounts as the window offers them: installed ones first, missing ones marked.

One rule for every picker of a runtime or a ``runtime:account`` entry (the designer's
palette, Detect's "Adopt on…", the new-session dialog's handoff chain): what the host's
doctor found (:class:`~relay.runtimes.base.RuntimeInfo`) decides. A runtime is *missing*
when the doctor named a problem (its CLI not on PATH, no API key, a server not reachable);
before the doctor answered (or in a client window, whose host probes), nothing is known to
be missing and nothing is marked. No Qt here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from relay.runtimes.base import RuntimeInfo

NOT_INSTALLED = "not installed"


def missing(infos: Iterable[RuntimeInfo]) -> frozenset[str]:
    """The runtimes the doctor found a problem with."""
    return frozenset(i.runtime for i in infos if i.problem is not None)


def runtime_of(entry: str) -> str:
    """``claude:work`` → ``claude``."""
    return entry.partition(":")[0]


def entry_choices(runtimes: Sequence[str], accounts: Sequence[str]) -> list[str]:
    """Each runtime followed by its accounts (sorted), in the runtimes' order."""
    out: list[str] = []
    for runtime in runtimes:
        out.append(runtime)
        out += sorted(a for a in accounts if runtime_of(a) == runtime)
    return out


def installed_first(entries: Sequence[str], infos: Iterable[RuntimeInfo]) -> list[str]:
    """``entries`` with those on an installed runtime first (each group keeps its order)."""
    gone = missing(infos)
    return ([e for e in entries if runtime_of(e) not in gone]
            + [e for e in entries if runtime_of(e) in gone])


def choice_label(entry: str, gone: frozenset[str]) -> str:
    """``codex (not installed)`` for an entry on a missing runtime, else the entry."""
    return f"{entry} ({NOT_INSTALLED})" if runtime_of(entry) in gone else entry


def first_installed(entries: Sequence[str], gone: frozenset[str],
                    avoid: Iterable[str] = ()) -> str | None:
    """The first entry on an installed runtime, preferring one not on ``avoid``'s runtimes
    and not the simulation (``demo``) unless nothing else is there."""
    shunned = set(avoid)
    usable = [e for e in entries if runtime_of(e) not in gone]
    real = [e for e in usable if runtime_of(e) != "demo"]
    for choices in ([e for e in real if runtime_of(e) not in shunned], real, usable):
        if choices:
            return choices[0]
    return None
