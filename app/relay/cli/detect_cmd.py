"""relay-cli detect, adopt and daemon.

``detect`` lists the agent sessions on this machine (live or recent; ``--all`` every one)
with their state and intent. ``adopt ID --to RUNTIME[:ACCOUNT]`` continues one on another
runtime or account from a signed brief, in a worktree at its repository's current state.
``daemon`` watches in the background and prints what the tray would announce. Each asks
the data folder's host (:mod:`relay.cli.hosted`): an adopted session runs there, and a
``daemon`` with no host to ask hosts for as long as it watches.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rich.console import Console
from rich.markup import escape

from relay.cli.argtypes import seconds
from relay.cli.hosted import follow_session, host_api
from relay.cli.render import StreamPrinter
from relay.cli.tables import Column, FitTable
from relay.core.config import Config
from relay.detect import present
from relay.detect.model import DetectedSession


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             entry_type: type[str] | object) -> None:
    detect = sub.add_parser("detect", help="agent sessions on this machine: state and intent")
    detect.add_argument("--all", action="store_true",
                        help="every session found (default: live or active in the last 24 h)")
    detect.add_argument("--json", action="store_true")
    adopt = sub.add_parser("adopt", help="continue a detected session on another runtime/account")
    adopt.add_argument("id", help="a detected session's id (runtime:session, or a unique prefix)")
    adopt.add_argument("--to", required=True, type=entry_type,  # type: ignore[arg-type]
                       metavar="RUNTIME[:ACCOUNT]", help="where the work continues")
    adopt.add_argument("--in-place", action="store_true",
                       help="work in the repository itself instead of a new worktree")
    adopt.add_argument("--json", action="store_true", help="print the new session's events as JSON")
    daemon = sub.add_parser("daemon", help="watch for new agent sessions, and sessions that wait "
                                           "for input or hit a limit; print each once")
    daemon.add_argument("--interval", type=seconds, default=5.0, help="seconds between looks")
    daemon.add_argument("--json", action="store_true")


def _row_json(s: DetectedSession) -> dict[str, Any]:
    i = s.intent
    return {
        "id": s.id, "runtime": s.runtime, "session": s.agent_session_id, "account": s.entry,
        "state": s.state, "why": s.why, "hooked": s.hooked, "resets_at_ms": s.resets_at_ms,
        "cwd": s.cwd,
        "repo": s.repo, "source": str(s.source), "started_ms": s.started_ms,
        "last_activity_ms": s.last_activity_ms,
        "pid": s.process.pid if s.process else None,
        "usage": None if s.usage is None else {"input": s.usage.input, "output": s.usage.output,
                                               "cache_read": s.usage.cache_read,
                                               "cache_write": s.usage.cache_write,
                                               "total": s.usage.total},
        "intent": {"initial_prompt": i.initial_prompt,
                   "plan": [{"text": p.text, "status": p.status} for p in i.plan],
                   "tasks_remaining": i.tasks_remaining, "files_touched": i.files_touched,
                   "commands": i.commands, "skills": i.skills, "mcp_servers": i.mcp_servers,
                   "models": i.models, "last_message": i.last_message},
        "problems": s.problems,
    }


def state_cell(s: DetectedSession, now_ms: int) -> str:
    """The State cell; a state its hooks reported (exact) is marked, with what they said
    when it waits for input."""
    label = present.state_label(s, now_ms)
    if not s.hooked:
        return label
    return f"{label} · hook: {s.why}" if s.state == "needs_input" else f"{label} · hook"


async def detect(config: Config, args: argparse.Namespace, console: Console) -> int:
    async with host_api(config, args) as attached:
        # the table needs the older sessions' head and tail; JSON gives every intent whole
        report = await attached.client.detector.scan(all_sessions=args.all, whole=args.json)
    if args.json:
        print(json.dumps({"sessions": [_row_json(s) for s in report.sessions],
                          "problems": report.problems}, indent=2))
        return 0
    now = time.time_ns() // 1_000_000
    if not report.sessions:
        console.print("No agent sessions found" + ("" if args.all else
                      " in the last 24 hours (--all shows older ones)") + ".")
    else:
        table = FitTable(Column("id", figure=True), "state", "repository",
                         Column("age", figure=True), Column("usage", figure=True),
                         Column("account", figure=True), "task",
                         title=f"Agent sessions ({report.elapsed_s:.1f} s)")
        for s in report.sessions:
            live = f" (pid {s.process.pid})" if s.process else ""
            table.add_row(escape(f"{s.runtime}:{s.agent_session_id[:8]}"),
                          escape(state_cell(s, now) + live),
                          escape(present.repository(s)), present.age(s, now),
                          present.usage_short(s.usage), escape(s.entry),
                          escape(present.one_line(s.intent.initial_prompt, 60)))
        console.print(table)
    for problem in report.problems:
        console.print(f"[yellow]could not read: {escape(problem)}[/]", highlight=False)
    return 0


async def adopt(config: Config, args: argparse.Namespace, console: Console) -> int:
    """Continue a detected session in the host and follow it there until it ends (Ctrl-C
    leaves it running in a live host)."""
    async with host_api(config, args) as attached:
        client = attached.client
        detected, _read = await client.detector.find(args.id)
        adopted = await client.detector.adopt(detected.id, args.to, in_place=args.in_place)
        if not args.json:
            console.print(f"[bold]Relay[/] adopted {escape(detected.id)} as session "
                          f"{adopted.session_id} on {escape(args.to)} (brief: "
                          f"{escape(str(adopted.contract_dir))})", highlight=False)
        row = await follow_session(client, adopted.session_id, 0,
                                   StreamPrinter(console, args.json))
    return 0 if row.state == "completed" else 1


async def daemon(config: Config, args: argparse.Namespace, console: Console) -> int:
    """Watch through the host; with none, host here (recovering, as a long-lived host does)
    for as long as it watches."""
    from relay.detect.ambient import Ambient

    async with host_api(config, args, recover=True) as attached:
        detector = attached.client.detector

        async def scan() -> list[DetectedSession]:
            return (await detector.scan()).sessions

        def announce(note: Any) -> None:
            if args.json:
                print(json.dumps({"kind": note.kind, "session": note.session_id,
                                  "title": note.title, "message": note.message}), flush=True)
            else:
                console.print(f"[bold]{escape(note.title)}[/] {escape(note.message)}",
                              highlight=False)

        watcher = Ambient(scan, announce, args.interval)
        await watcher.tick()  # the baseline: what is there already is never announced
        if args.json:
            print(json.dumps({"kind": "watching", "sessions": len(watcher.changes.seen)}),
                  flush=True)
        else:
            console.print(f"Relay is watching {len(watcher.changes.seen)} agent session(s) "
                          f"every {args.interval:g} s (Ctrl-C stops).", highlight=False)
        await watcher.run()
    return 0
