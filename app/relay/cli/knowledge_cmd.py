"""relay-cli retrieve / knowledge: search the knowledge graph, scan a repository into it.

``retrieve "QUERY"`` first indexes the session activity stored since the last time (so
what agents just said is found), then prints the best chunks: ``path:start-end``, kind,
name, score and a snippet with the matched words in «…». ``--json`` prints a list.
``knowledge scan`` scans a repository now (the engine does it at each session start),
``knowledge ingest`` indexes session activity, ``knowledge stats`` counts what is there.
The data folder's host does each (:mod:`relay.cli.hosted`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from relay.cli.argtypes import positive_int
from relay.cli.hints import cli
from relay.core.config import Config
from relay.knowledge.model import Hit, Stats
from relay.knowledge.scanner import ScanReport

DEFAULT_LIMIT = 20


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``retrieve`` and ``knowledge scan|ingest|stats`` to relay-cli's parser."""
    retrieve = sub.add_parser("retrieve", help="search the knowledge graph: code and what "
                                               "agents decided")
    retrieve.add_argument("query", help="words or names to look for (any of them; the best "
                                        "matches first)")
    retrieve.add_argument("--limit", type=positive_int, default=DEFAULT_LIMIT,
                          help=f"how many results (default {DEFAULT_LIMIT})")
    retrieve.add_argument("--repo", type=Path, help="only this repository's code and sessions")
    retrieve.add_argument("--json", action="store_true", help="print the results as a JSON list")
    knowledge = sub.add_parser("knowledge", help="scan a repository into the knowledge graph, "
                                                 "or show what it holds")
    actions = knowledge.add_subparsers(dest="knowledge_command", required=True, metavar="ACTION")
    scan = actions.add_parser("scan", help="record a repository's modules and symbols now")
    scan.add_argument("--repo", type=Path, default=Path.cwd(), help="the repository (default: .)")
    scan.add_argument("--json", action="store_true")
    ingest = actions.add_parser("ingest", help="index the session activity stored since last time")
    ingest.add_argument("--json", action="store_true")
    stats = actions.add_parser("stats", help="what the index holds")
    stats.add_argument("--json", action="store_true")


async def dispatch(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli.hosted import host_api

    async with host_api(config, args) as attached:
        knowledge = attached.client.knowledge
        if args.command == "retrieve":
            await knowledge.ingest()  # what agents just said is found too
            hits = await knowledge.retrieve(args.query, args.limit, args.repo)
            if args.json:
                print(json.dumps([h.to_json() for h in hits], ensure_ascii=False), flush=True)
            else:
                _print_hits(console, args.query, hits, await knowledge.stats())
        elif args.knowledge_command == "scan":
            report = await knowledge.scan(args.repo)
            if args.json:
                print(json.dumps(report.to_json(), ensure_ascii=False), flush=True)
            else:
                _print_scan(console, report)
        elif args.knowledge_command == "ingest":
            sessions = (await knowledge.ingest()).sessions
            if args.json:
                print(json.dumps({"sessions": sessions}), flush=True)
            else:
                console.print(f"Indexed the activity of {sessions} session(s).", markup=False)
        else:
            found = await knowledge.stats()
            if args.json:
                print(json.dumps(found.to_json(), ensure_ascii=False), flush=True)
            else:
                _print_stats(console, found)
    return 0


def _print_hits(console: Console, query: str, hits: list[Hit], stats: Stats) -> None:
    if not hits:
        console.print(f"No matches for {query!r}.", markup=False)
        if not sum(stats.chunks.values()):
            console.print("  → The index is empty: scan a repository with "
                          f"`{cli('knowledge scan --repo PATH')}` (Relay also scans a "
                          "session's repository when the session starts).", markup=False)
        return
    for rank, hit in enumerate(hits, start=1):
        where = hit.where if hit.session_id is None else f"{hit.where} (session {hit.session_id})"
        name = f" {escape(hit.title)}" if hit.kind == "symbol" else ""
        console.print(f"{rank:>2}. [bold]{escape(where)}[/]  {hit.kind}{name}  "
                      f"[dim]{escape(hit.lang)} · score {hit.score:.2f}[/]")
        console.print(f"    {hit.snippet}", markup=False)


def _print_scan(console: Console, report: ScanReport) -> None:
    skipped = ", ".join(f"{reason} {n}" for reason, n in sorted(report.skipped.items()))
    state = "stopped early" if report.cancelled else "scanned"
    console.print(f"{state} {report.repo}: {report.files} source files — {report.scanned} read, "
                  f"{report.unchanged} unchanged, {report.removed} removed; {report.symbols} "
                  f"symbols recorded ({report.seconds:.2f} s)", markup=False)
    if skipped:
        console.print(f"  left out: {skipped}", markup=False)


def _print_stats(console: Console, stats: Stats) -> None:
    def line(label: str, counts: dict[str, int]) -> str:
        parts = ", ".join(f"{k} {n}" for k, n in counts.items()) or "none"
        return f"{label}: {parts}"

    console.print(f"knowledge index {stats.path}", markup=False)
    for label, counts in (("nodes", stats.nodes), ("edges", stats.edges),
                          ("chunks", stats.chunks)):
        console.print(f"  {line(label, counts)}", markup=False)
    console.print(f"  sessions indexed: {stats.sessions} (events read up to id {stats.cursor})",
                  markup=False)
    for repo in stats.repos:
        console.print(f"  repository {repo.repo}: {repo.files} files, {repo.symbols} symbols",
                      markup=False)
