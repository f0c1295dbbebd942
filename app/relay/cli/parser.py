"""relay-cli's argument parser, built so that starting relay-cli costs only what the command needs.

The parser knows every command's name and one-line help (:data:`COMMANDS`: what
``relay-cli --help`` lists) without importing any of them. A command's own arguments are
added when argparse reaches that command (:class:`LazySubParsers`), so ``relay-cli --version``,
``--help`` and ``sessions`` never import the modules of the other commands, nor what those
import (the engine, pydantic models, httpx, the MCP SDK, pygit2 …). This module imports only
the standard library; each ``_*_arguments`` function and each ``*_cmd.register`` imports what
its command needs when it is called.

A command module's ``register(sub)`` is called unchanged: while it fills a command,
``sub.add_parser(name, …)`` hands back the parser already made for ``name`` (with the
module's description and epilog) instead of making another.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, get_args

from relay import __version__
from relay.cli.argtypes import command_line, count, percentages, positive_int, usd_amount

#: every command with the one line ``relay-cli --help`` shows for it, in that order
COMMANDS: dict[str, str] = {
    "run": "run a task on an agent and stream it live",
    "show": "replay a session from the store",
    "stop": "stop a running session (it ends cancelled)",
    "sessions": "list sessions (--archived: the archived ones too)",
    "archive": "archive a finished session: the lists leave it out (nothing is deleted)",
    "unarchive": "bring an archived session back into the lists",
    "tui": "a full-screen terminal client: sessions, live streams, talk to the agent",
    "demo": "a complete demo session in a temporary repository",
    "recover": "carry on handoffs a stopped Relay left unfinished",
    "doctor": "what is installed and what is missing",
    "audit": "check or show the hash-chained audit log",
    "contract": "verify or show a continuation contract",
    "handoff": "pause a running session at a safe point and hand it to the next provider or "
               "account",
    "accounts": "your accounts that chain entries name (provider:label)",
    "budget": "spending budgets: warn at 80 %%, stop new work at 100 %%",
    "prices": "the price table costs are estimated from",
    "wallet": "every account: limits left, forecast, costs, budgets",
    "usage": "token usage and cost from the CLIs' transcripts",
    "statusline": "Claude Code status-line command: records the official rate limits it is "
                  "given and prints a summary",
    "detect": "agent sessions on this machine: state and intent",
    "adopt": "continue a detected session on another runtime/account",
    "daemon": "watch for new agent sessions, and sessions that wait for input or hit a limit; "
              "print each once",
    "retrieve": "search the knowledge graph: code and what agents decided",
    "knowledge": "scan a repository into the knowledge graph, or show what it holds",
    "board": "the board of all the work: tasks per stage, comments, the guard's environments",
    "pipeline": "multi-agent pipelines: DAGs of Relay sessions",
    "history": "a session's (or a pipeline run's) timeline: who ran, handoffs, checks, commits",
    "diff": "what a commit, a session or one agent's stint changed",
    "rewind": "a new branch at a snapshot (nothing is moved or lost)",
    "review": "review comments of a session (and add one)",
    "finish": "what a session changed; merge it into its base or keep it",
    "serve": "host this data folder headless and serve its local API (default 127.0.0.1:4748)",
    "status": "whether a Relay host runs for this data folder, where, and what it runs",
    "token": "print the local API's token (--rotate: make a new one)",
    "mcp": "an MCP server on stdin/stdout for Claude Desktop and other MCP clients "
           "(docs/mcp.md)",
    "permission-bridge": "(internal) the MCP server Claude Code asks for permissions",
    "answer": "answer a question a running agent asks (without REQUEST: list the open ones)",
    "say": "send a message to a session's agent: a follow-up when it has finished, queued "
           "for its next turn while it runs",
    "messages": "a session's queued messages (--all: every one); cancel or edit a queued one",
    "interrupt": "stop a session's running turn and keep the conversation (queued messages "
                 "go next)",
    "fork": "a new session at a point of this one, in a new worktree (the original is "
            "untouched)",
    "setup": "set up Claude Code's hooks and Relay's MCP server (--check: what is in place)",
    "hook": "(internal) the hook client Claude Code runs for each hook event",
}


class LazySubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands whose arguments are added only once argparse reaches that subcommand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: command → the function that adds its arguments (one may serve several commands)
        self._fillers: dict[str, Callable[[LazySubParsers], None]] = {}
        self._filling = False
        #: the help each filled command's module gave (a test compares it with COMMANDS)
        self.helps: dict[str, str | None] = {}

    def add_command(self, name: str, filler: Callable[[LazySubParsers], None]) -> None:
        """``name`` with its :data:`COMMANDS` help; ``filler(self)`` adds its arguments."""
        super().add_parser(name, help=COMMANDS[name])
        self._fillers[name] = filler

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser | None = self._name_parser_map.get(name)
        if not self._filling or parser is None:
            return super().add_parser(name, **kwargs)  # type: ignore[no-any-return]
        for key in ("description", "epilog"):
            if key in kwargs:
                setattr(parser, key, kwargs[key])
        if "help" in kwargs:
            self.helps[name] = kwargs["help"]
        return parser

    def fill(self, name: str) -> None:
        """Add the arguments of ``name`` (and of the commands its module registers with it)."""
        filler = self._fillers.get(name)
        if filler is None:
            return
        for other in [n for n, f in self._fillers.items() if f is filler]:
            del self._fillers[other]
        with self._fill_mode():
            filler(self)

    def fill_all(self) -> None:
        """Every command's arguments (tests, documentation)."""
        for name in list(COMMANDS):
            self.fill(name)

    @contextlib.contextmanager
    def _fill_mode(self) -> Iterator[None]:
        self._filling = True
        try:
            yield
        finally:
            self._filling = False

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        if isinstance(values, list | tuple) and values:
            self.fill(str(values[0]))
        super().__call__(parser, namespace, values, option_string)


def chain_entry(value: str) -> str:
    """An argparse type: ``RUNTIME[:ACCOUNT]`` naming a runtime this build can drive."""
    from relay.runtimes.registry import available_runtimes

    runtime, _, account = value.partition(":")
    if runtime not in available_runtimes():
        raise argparse.ArgumentTypeError(
            f"unknown runtime {runtime!r} (choose from {', '.join(available_runtimes())})")
    if ":" in value and not account:
        raise argparse.ArgumentTypeError(f"{value!r}: name the account after the colon")
    return value


def _run_arguments(sub: LazySubParsers) -> None:
    from relay.core.models import ApprovalPolicy, PermissionPolicy
    from relay.runtimes.registry import available_runtimes

    run = sub.add_parser("run")
    run.add_argument("task", help="what the agent should do")
    run.add_argument("--repo", type=Path, default=Path.cwd(), help="the repository (default: .)")
    run.add_argument("--provider", "--runtime", dest="provider", action="append", type=chain_entry,
                     metavar="RUNTIME[:ACCOUNT]",
                     help="who runs the task; repeat to build the handoff chain, e.g. "
                          "--provider claude:work --provider codex (default: demo). "
                          f"Runtimes: {', '.join(available_runtimes())}")
    run.add_argument("--model", help="model name passed to the agent")
    run.add_argument("--no-worktree", action="store_true", help="run in the repository itself")
    run.add_argument("--permission", choices=[p.value for p in PermissionPolicy],
                     default=PermissionPolicy.WORKSPACE.value,
                     help="read_only | workspace (edit and run commands in the worktree) | full")
    run.add_argument("--setup", type=command_line, metavar="COMMAND",
                     help="command to run in a new worktree before the agent starts")
    run.add_argument("--resume", metavar="SESSION",
                     help="continue SESSION's agent conversation with TASK as the next prompt")
    run.add_argument("--verify", action="append", type=command_line, metavar="COMMAND",
                     default=[],
                     help="an acceptance command run in the worktree after the agent finishes "
                          "(and after each handoff), e.g. --verify 'pytest -q'; repeatable. "
                          "The session only completes when every one exits 0")
    run.add_argument("--on-limit", choices=["auto", "handoff", "wait"], default="auto",
                     help="on a usage limit: auto (wait when the reset is near, else hand off), "
                          "handoff (never wait while the chain goes on), wait (never hand off)")
    run.add_argument("--preempt", action="store_true",
                     help="hand off at the next safe point as soon as the provider warns that "
                          "the account is close to its limit")
    run.add_argument("--budget", type=usd_amount, metavar="USD",
                     help="stop new work once this session has cost this much (warn at 80 %%)")
    run.add_argument("--task-budget", type=usd_amount, metavar="USD",
                     help="the same for each agent run (one prompt on one provider)")
    run.add_argument("--approvals", choices=get_args(ApprovalPolicy),
                     help="who answers the agent's permission requests: ask you, approve "
                          "read-only actions by themselves, or deny them all (default: ask on "
                          "a terminal, deny with --json or without one)")
    run.add_argument("--detach", action="store_true",
                     help="submit the session to the host and print its id at once (needs a "
                          "running host: relay-cli serve or the window)")
    run.add_argument("--json", action="store_true", help="print events as JSON lines")


def _show_arguments(sub: LazySubParsers) -> None:
    show = sub.add_parser("show")
    show.add_argument("session", help="session id (a unique prefix is enough)")
    show.add_argument("--json", action="store_true")
    show.add_argument("--follow", "-f", action="store_true", help="keep following until it ends")


def _stop_arguments(sub: LazySubParsers) -> None:
    stop = sub.add_parser("stop")
    stop.add_argument("session", help="session id (a unique prefix is enough)")


def _sessions_arguments(sub: LazySubParsers) -> None:
    sessions = sub.add_parser("sessions")
    sessions.add_argument("--limit", type=positive_int, default=50)
    sessions.add_argument("--json", action="store_true",
                          help="one JSON object per session (state, usage, refused_calls, …)")
    sessions.add_argument("--archived", action="store_true",
                          help="the archived sessions too (marked archived)")


def _archive_arguments(sub: LazySubParsers) -> None:
    for name in ("archive", "unarchive"):
        sub.add_parser(name).add_argument("session",
                                          help="session id (a unique prefix is enough)")


def _demo_arguments(sub: LazySubParsers) -> None:
    demo = sub.add_parser("demo")
    demo.add_argument("--json", action="store_true")
    demo.add_argument("--limit-after", type=count,
                      help="hit a simulated usage limit after N turns, then hand off to a "
                           "second simulated account")
    demo.add_argument("--quota", type=percentages, metavar="P,P,…",
                      help="report these percentages of the five-hour window, one per turn "
                           "(e.g. 40,96,99: the wallet hands off before the limit)")
    demo.add_argument("--ask", action="store_true",
                      help="the demo asks permission before it writes (answer it here, in the "
                           "window, or with relay-cli answer)")


def _recover_arguments(sub: LazySubParsers) -> None:
    sub.add_parser("recover").add_argument("--json", action="store_true")


def _no_arguments(sub: LazySubParsers) -> None:
    """``doctor`` takes none."""


def _audit(sub: LazySubParsers) -> None:
    from relay.cli import audit_cmd
    audit_cmd.register(sub)


def _contract(sub: LazySubParsers) -> None:
    from relay.cli import contract_cmd
    contract_cmd.register(sub)


def _handoff(sub: LazySubParsers) -> None:
    from relay.cli import handoff_cmd
    handoff_cmd.register(sub, chain_entry)


def _accounts(sub: LazySubParsers) -> None:
    from relay.cli import accounts_cmd
    accounts_cmd.register(sub)


def _budget(sub: LazySubParsers) -> None:
    from relay.cli import budget_cmd
    budget_cmd.register(sub, chain_entry)


def _wallet(sub: LazySubParsers) -> None:
    from relay.cli import wallet_cmd
    wallet_cmd.register(sub)


def _detect(sub: LazySubParsers) -> None:
    from relay.cli import detect_cmd
    detect_cmd.register(sub, chain_entry)


def _knowledge(sub: LazySubParsers) -> None:
    from relay.cli import knowledge_cmd
    knowledge_cmd.register(sub)


def _board(sub: LazySubParsers) -> None:
    from relay.cli import board_cmd
    board_cmd.register(sub)


def _pipeline(sub: LazySubParsers) -> None:
    from relay.cli import pipeline_cmd
    pipeline_cmd.register(sub)


def _history(sub: LazySubParsers) -> None:
    from relay.cli import history_cmd
    history_cmd.register(sub)


def _serve(sub: LazySubParsers) -> None:
    from relay.cli import serve_cmd
    serve_cmd.register(sub)


def _status(sub: LazySubParsers) -> None:
    from relay.cli import serve_cmd
    serve_cmd.register_status(sub)


def _token(sub: LazySubParsers) -> None:
    from relay.cli import serve_cmd
    serve_cmd.register_token(sub)


def _mcp(sub: LazySubParsers) -> None:
    from relay.cli import mcp_cmd
    mcp_cmd.register(sub)


def _permission(sub: LazySubParsers) -> None:
    from relay.cli import permission_cmd
    permission_cmd.register(sub)


def _answer(sub: LazySubParsers) -> None:
    from relay.cli import questions
    questions.register(sub)


def _talk(sub: LazySubParsers) -> None:
    from relay.cli import talk_cmd
    talk_cmd.register(sub)


def _setup(sub: LazySubParsers) -> None:
    from relay.cli import setup_cmd
    setup_cmd.register(sub)


def _tui(sub: LazySubParsers) -> None:
    from relay.cli.tui import command
    command.register(sub)


def _hook_arguments(sub: LazySubParsers) -> None:
    """``hook claude [--data-dir DIR] [--headers]``: relay.cli.hook_client (the console
    script and the frozen entry run it before parsing anything; this is for --help and
    ``--home``)."""
    hook = sub.add_parser("hook", description="The hook client Claude Code runs for each hook "
                          "event (set up by `relay-cli setup claude`): stdin to the host, its "
                          "JSON answer to stdout; always exit 0.")
    hook.add_argument("agent", choices=["claude"])
    hook.add_argument("--data-dir", type=Path, help="the data folder (default: --home)")
    hook.add_argument("--headers", action="store_true",
                      help="print the MCP Authorization header (Claude's headersHelper)")


#: command → what adds its arguments (a module's register adds all of that module's commands)
_FILLERS: dict[str, Callable[[LazySubParsers], None]] = {
    "run": _run_arguments, "show": _show_arguments, "stop": _stop_arguments, "sessions": _sessions_arguments,
    "archive": _archive_arguments, "unarchive": _archive_arguments,
    "demo": _demo_arguments, "recover": _recover_arguments, "doctor": _no_arguments,
    "audit": _audit, "contract": _contract, "handoff": _handoff, "accounts": _accounts,
    "budget": _budget, "prices": _budget, "wallet": _wallet, "usage": _wallet,
    "statusline": _wallet, "detect": _detect, "adopt": _detect, "daemon": _detect,
    "retrieve": _knowledge, "knowledge": _knowledge, "board": _board, "pipeline": _pipeline,
    "history": _history, "diff": _history, "rewind": _history, "review": _history,
    "finish": _history, "mcp": _mcp, "serve": _serve, "status": _status, "token": _token,
    "permission-bridge": _permission, "answer": _answer, "say": _talk, "messages": _talk,
    "interrupt": _talk, "fork": _talk, "setup": _setup,
    "hook": _hook_arguments, "tui": _tui,
}


def build_parser(full: bool = False) -> argparse.ArgumentParser:
    """relay-cli's parser; ``full`` adds every command's arguments now (else on use)."""
    parser = argparse.ArgumentParser(prog="relay-cli", description=(
        "Run AI coding agents in their own git worktrees and watch them live."))
    parser.add_argument("--version", action="version", version=f"relay {__version__}")
    parser.add_argument("--home", type=Path, help="data folder (default: RELAY_HOME or the OS data dir)")
    parser.add_argument("--connect", metavar="URL",
                        help="act through the Relay host at URL (default: RELAY_CONNECT, else "
                             "the data folder's own host when one runs)")
    parser.add_argument("--token", help="the API token for --connect (default: RELAY_TOKEN, "
                                        "else the data folder's api-token)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                action=LazySubParsers)
    assert isinstance(sub, LazySubParsers)
    for name in COMMANDS:
        sub.add_command(name, _FILLERS[name])
    if full:
        sub.fill_all()
    return parser


def subcommands(parser: argparse.ArgumentParser) -> LazySubParsers:
    """The parser's subcommands action."""
    return next(a for a in parser._actions if isinstance(a, LazySubParsers))
