"""relay-cli entry point: argument parsing, error reporting, exit codes.

Exit codes: 0 success; 1 the session failed / was cancelled / interrupted;
2 a usage or setup error Relay could explain; 130 interrupted by Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, get_args

from pydantic import ValidationError
from rich.console import Console

from relay import __version__
from relay.cli import (
    accounts_cmd,
    audit_cmd,
    budget_cmd,
    commands,
    contract_cmd,
    detect_cmd,
    handoff_cmd,
    history_cmd,
    knowledge_cmd,
    mcp_cmd,
    permission_cmd,
    pipeline_cmd,
    questions,
    wallet_cmd,
)
from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.core.models import ApprovalPolicy, SessionSpec
from relay.runtimes.base import PermissionPolicy
from relay.runtimes.registry import available_runtimes


def _chain_entry(value: str) -> str:
    runtime, _, account = value.partition(":")
    if runtime not in available_runtimes():
        raise argparse.ArgumentTypeError(
            f"unknown runtime {runtime!r} (choose from {', '.join(available_runtimes())})")
    if ":" in value and not account:
        raise argparse.ArgumentTypeError(f"{value!r}: name the account after the colon")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relay-cli", description=(
        "Run AI coding agents in their own git worktrees and watch them live."))
    parser.add_argument("--version", action="version", version=f"relay {__version__}")
    parser.add_argument("--home", type=Path, help="data folder (default: RELAY_HOME or the OS data dir)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a task on an agent and stream it live")
    run.add_argument("task", help="what the agent should do")
    run.add_argument("--repo", type=Path, default=Path.cwd(), help="the repository (default: .)")
    run.add_argument("--provider", "--runtime", dest="provider", action="append", type=_chain_entry,
                     metavar="RUNTIME[:ACCOUNT]",
                     help="who runs the task; repeat to build the handoff chain, e.g. "
                          "--provider claude:work --provider codex (default: demo). "
                          f"Runtimes: {', '.join(available_runtimes())}")
    run.add_argument("--model", help="model name passed to the agent")
    run.add_argument("--no-worktree", action="store_true", help="run in the repository itself")
    run.add_argument("--permission", choices=[p.value for p in PermissionPolicy],
                     default=PermissionPolicy.WORKSPACE.value,
                     help="read_only | workspace (edit and run commands in the worktree) | full")
    run.add_argument("--setup", help="command to run in a new worktree before the agent starts")
    run.add_argument("--resume", metavar="SESSION",
                     help="continue SESSION's agent conversation with TASK as the next prompt")
    run.add_argument("--verify", action="append", metavar="COMMAND", default=[],
                     help="an acceptance command run in the worktree after the agent finishes "
                          "(and after each handoff), e.g. --verify 'pytest -q'; repeatable. "
                          "The session only completes when every one exits 0")
    run.add_argument("--on-limit", choices=["auto", "handoff", "wait"], default="auto",
                     help="on a usage limit: auto (wait when the reset is near, else hand off), "
                          "handoff (never wait while the chain goes on), wait (never hand off)")
    run.add_argument("--preempt", action="store_true",
                     help="hand off at the next safe point as soon as the provider warns that "
                          "the account is close to its limit")
    run.add_argument("--budget", type=budget_cmd.usd_amount, metavar="USD",
                     help="stop new work once this session has cost this much (warn at 80 %%)")
    run.add_argument("--task-budget", type=budget_cmd.usd_amount, metavar="USD",
                     help="the same for each agent run (one prompt on one provider)")
    run.add_argument("--approvals", choices=get_args(ApprovalPolicy),
                     help="who answers the agent's permission requests: ask you, approve "
                          "read-only actions by themselves, or deny them all (default: ask on "
                          "a terminal, deny with --json or without one)")
    run.add_argument("--json", action="store_true", help="print events as JSON lines")

    show = sub.add_parser("show", help="replay a session from the store")
    show.add_argument("session", help="session id (a unique prefix is enough)")
    show.add_argument("--json", action="store_true")
    show.add_argument("--follow", "-f", action="store_true", help="keep following until it ends")

    sessions = sub.add_parser("sessions", help="list sessions")
    sessions.add_argument("--limit", type=int, default=50)
    sessions.add_argument("--json", action="store_true",
                          help="one JSON object per session (state, usage, refused_calls, …)")

    demo = sub.add_parser("demo", help="a complete demo session in a temporary repository")
    demo.add_argument("--json", action="store_true")
    demo.add_argument("--limit-after", type=int,
                      help="hit a simulated usage limit after N turns, then hand off to a "
                           "second simulated account")
    demo.add_argument("--quota", type=_percentages, metavar="P,P,…",
                      help="report these percentages of the five-hour window, one per turn "
                           "(e.g. 40,70,97: the wallet hands off before the limit)")
    demo.add_argument("--ask", action="store_true",
                      help="the demo asks permission before it writes (answer it here, in the "
                           "window, or with relay-cli answer)")

    recover = sub.add_parser("recover", help="carry on handoffs a stopped Relay left unfinished")
    recover.add_argument("--json", action="store_true")

    sub.add_parser("doctor", help="what is installed and what is missing")
    audit_cmd.register(sub)
    contract_cmd.register(sub)
    handoff_cmd.register(sub, _chain_entry)
    accounts_cmd.register(sub)
    budget_cmd.register(sub, _chain_entry)
    wallet_cmd.register(sub)
    detect_cmd.register(sub, _chain_entry)
    knowledge_cmd.register(sub)
    pipeline_cmd.register(sub)
    history_cmd.register(sub)
    mcp_cmd.register(sub)
    permission_cmd.register(sub)
    questions.register(sub)
    return parser


def _percentages(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError("a comma-separated list of percentages") from exc
    if not values or any(not 0 <= v <= 100 for v in values):
        raise argparse.ArgumentTypeError("percentages between 0 and 100, e.g. 40,70,97")
    return values


def _default_approvals(as_json: bool) -> Literal["ask", "deny"]:
    """Ask when someone can answer at this terminal; else deny (nobody could answer)."""
    return "ask" if sys.stdin.isatty() and not as_json else "deny"


def _spec(args: argparse.Namespace) -> SessionSpec:
    try:
        chain = args.provider or ["demo"]
        return SessionSpec(repo=args.repo, task=args.task, runtime=chain[0].partition(":")[0],
                           chain=chain if len(chain) > 1 or ":" in chain[0] else [],
                           model=args.model,
                           worktree=not args.no_worktree, permission=PermissionPolicy(args.permission),
                           setup_command=shlex.split(args.setup) if args.setup else None,
                           verify=[shlex.split(v) for v in args.verify], on_limit=args.on_limit,
                           preempt=args.preempt, budget_usd=args.budget,
                           task_budget_usd=args.task_budget,
                           approvals=args.approvals or _default_approvals(args.json))
    except ValidationError as exc:
        raise RelayError(f"Invalid session: {exc.errors()[0]['msg']}.") from exc


async def _dispatch(args: argparse.Namespace, console: Console) -> int:
    if args.command == "permission-bridge":  # started by Claude Code; needs no data folder
        return await permission_cmd.serve(args.socket)
    config = load_config(home=args.home)
    match args.command:
        case "run":
            start = (commands.continued_session(args.resume, args.task) if args.resume
                     else commands.new_session(_spec(args)))
            row = await commands.run_session(config, start, console, args.json)
            return 0 if row.state == "completed" else 1
        case "show":
            row = await commands.show_session(config, args.session, console, args.json, args.follow)
            return 0 if row.state in ("completed", "pending", "starting", "running", "needs_input",
                                      "waiting") else 1
        case "sessions":
            await commands.list_sessions(config, console, args.limit, args.json)
            return 0
        case "demo":
            row = await commands.demo(config, console, args.json, args.limit_after, args.quota,
                                      args.ask)
            return 0 if row.state == "completed" else 1
        case "recover":
            return await commands.recover(config, console, args.json)
        case "doctor":
            return await commands.doctor(config, console)
        case "audit":
            return audit_cmd.run(args, config, console)
        case "contract":
            return contract_cmd.run(args, config, console)
        case "handoff":
            return await handoff_cmd.handoff(config, args, console)
        case "accounts":
            return await accounts_cmd.run(config, args, console)
        case "detect":
            return await detect_cmd.detect(config, args, console)
        case "pipeline":
            return await pipeline_cmd.dispatch(config, args, console)
        case "retrieve" | "knowledge":
            return await knowledge_cmd.dispatch(config, args, console)
        case "adopt":
            return await detect_cmd.adopt(config, args, console)
        case "daemon":
            return await detect_cmd.daemon(config, args, console)
        case "wallet":
            return await wallet_cmd.wallet(config, args, console)
        case "usage":
            return await wallet_cmd.usage(config, args, console)
        case "statusline":
            return await wallet_cmd.statusline(config, console)
        case "budget":
            return await budget_cmd.budget(config, args, console)
        case "history" | "diff" | "rewind" | "review" | "finish":
            return await history_cmd.dispatch(config, args, console)
        case "prices":
            return await budget_cmd.prices(config, args, console)
        case "mcp":
            return await mcp_cmd.serve(config, args)
        case "answer":
            return await questions.answer(config, args, console)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(stderr=False, highlight=False)
    errors = Console(stderr=True, highlight=False)
    logging.basicConfig(level=logging.WARNING, format="relay: %(levelname)s %(message)s")
    try:
        return asyncio.run(_dispatch(args, console))
    except RelayError as exc:
        errors.print(f"[bold red]error:[/] {exc.message}", highlight=False, markup=True)
        if exc.hint:
            errors.print(f"  → {exc.hint}", markup=False)
        return 2
    except KeyboardInterrupt:
        errors.print("interrupted", markup=False)
        return 130
    except BrokenPipeError:  # `relay-cli … | head`: the reader left; nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
