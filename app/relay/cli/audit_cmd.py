"""relay-cli audit: check the hash-chained audit log and show its latest entries.

``audit verify`` exits 0 when the chain is intact (an empty or missing log is intact),
1 when a line breaks it (the message names the line, why, and what to do), and 2 when
the file cannot be read (an :class:`~relay.core.errors.AuditError`, reported by main).
With a host running, the data folder's own log is verified and read by the host, which checks
it against the database's anchor. With none, it is read here — no host is started for it: a
log is verified when something looks wrong, and it must be checkable even when the engine
would refuse to open (relay.db replaced, damaged). Another file (``--path``) is always read
here, unanchored.
"""

from __future__ import annotations

import argparse
import json
from collections import deque
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from relay.api.schemas import AuditVerify
from relay.cli.argtypes import positive_int
from relay.cli.hints import cli
from relay.cli.tables import Column, FitTable
from relay.core.audit import AuditEntry, DbAnchor, VerifyReport, iter_entries
from relay.core.config import Config
from relay.core.termsafe import json_text

BROKEN_HINT = ("The log was edited, truncated or damaged after it was written. Keep a copy of the file "
               "for review, then move it aside: Relay starts a new chain in a fresh audit.jsonl at its "
               "next event. Until then Relay keeps appending to this file (the break stays visible) — "
               "or, if its last line is damaged, refuses to.")

def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``audit verify`` and ``audit show`` to relay-cli's parser."""
    audit = sub.add_parser("audit", help="check or show the hash-chained audit log")
    actions = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    path_help = "the audit log (default: audit.jsonl in the data folder)"
    check = actions.add_parser("verify", help="walk the chain and name the first broken line")
    check.add_argument("--path", type=Path, help=path_help)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    show = actions.add_parser("show", help="the latest entries (not verified: use verify)")
    show.add_argument("--path", type=Path, help=path_help)
    show.add_argument("--limit", type=positive_int, default=20, help="how many entries (default 20)")
    show.add_argument("--json", action="store_true", help="print the entries as JSON lines")


async def run(args: argparse.Namespace, config: Config, console: Console) -> int:
    """Run the audit action ``args`` names; return the exit code."""
    from relay.api.attach import client_of_live_host

    path: Path = args.path or config.audit_path
    own = path.resolve() == config.audit_path.resolve()
    client = await client_of_live_host(config, getattr(args, "connect", None),
                                       getattr(args, "token", None)) if own else None
    if client is None:  # no host, or a copy, an old log: read it here
        if args.audit_command == "verify":
            checked = AuditVerify.of(path, DbAnchor(config.db_path).read() if own else None)
            return verify_log(path, console, args.json, checked.report, checked if own else None)
        return show_log(path, console, list(_latest(path, args.limit)), args.json)
    async with client:
        if args.audit_command == "verify":
            checked = await client.audit.verify()
            return verify_log(path, console, args.json, checked.report, checked)
        lines = await client.audit.entries(args.limit)
    return show_log(path, console, [(line.line, line.entry) for line in lines], args.json)


def _latest(path: Path, limit: int) -> deque[tuple[int, AuditEntry]]:
    return deque(enumerate(iter_entries(path), start=1), maxlen=limit)


def verify_log(path: Path, console: Console, as_json: bool, report: VerifyReport,
               anchored: AuditVerify | None = None) -> int:
    """Say what verifying the log at ``path`` found; ``anchored``: the host checked the data
    folder's own log against the database's anchor (None: another file, the chain only)."""
    anchor = anchored is not None and anchored.anchored
    if as_json:
        print(json_text({**report.to_json(), "anchored": anchor,
                         "anchoredSinceMs": anchored.anchored_since_ms if anchored else None,
                         "anchorNote": anchored.anchor_note if anchored else None}), flush=True)
        return 0 if report.ok else 1
    if report.ok:
        console.print(f"[bold green]✓ audit chain intact[/]: {report.entries} entries in "
                      f"{escape(str(path))}")
    else:
        _print_broken(report, console)
    if anchored is not None and not anchor:
        console.print("The database holds no anchor for this log yet: only the chain itself is "
                      "checked (its length and last entry are, from the next entry Relay writes).",
                      markup=False)
    elif anchored is not None and anchored.anchor_note:
        console.print(f"Note: the anchor was reset, {anchored.anchor_note}.", markup=False)
    return 0 if report.ok else 1


def _print_broken(report: VerifyReport, console: Console) -> None:
    console.print(f"[bold red]✗ audit chain broken at line {report.broken_line}[/]: line "
                  f"{report.broken_line} of {escape(str(report.path))} {escape(report.detail or '')}.")
    console.print(f"{report.entries} entries before it verify; the file has {report.lines} lines.",
                  markup=False)
    console.print(f"  → {BROKEN_HINT}", markup=False)


def show_log(path: Path, console: Console, latest: list[tuple[int, AuditEntry]],
             as_json: bool) -> int:
    if as_json:
        for _, entry in latest:
            print(json_text(entry.to_wire(), separators=(",", ":")), flush=True)
        return 0
    if not latest:
        console.print(f"No audit entries yet in {escape(str(path))}.")
        return 0
    table = FitTable(Column("line", figure=True, justify="right"),
                     Column("time (UTC)", figure=True), Column("event", figure=True), "data",
                     title=f"audit log {escape(str(path))}")
    for number, entry in latest:
        data = json.dumps(entry.data, ensure_ascii=False, sort_keys=True)
        table.add_row(str(number), entry.ts, escape(entry.event), escape(data))
    console.print(table)
    console.print(f"Not verified here: run `{cli('audit verify')}` to check the chain.",
                  markup=False)
    return 0
