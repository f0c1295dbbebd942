"""relay-cli entry point: argument parsing, error reporting, exit codes.

Exit codes: 0 success (``run --detach``: the host has the session); 1 the session failed /
was cancelled / interrupted, or ``stop`` found it not running;
2 a usage or setup error Relay could explain, or no answer at a prompt (Ctrl-D: the input
ended); 70 Relay crashed (an error it did not expect, in the command, a thread or an
asyncio task: one line on stderr, the details in the data folder's logs/relay.log —
:mod:`relay.core.crash`); 130 interrupted by Ctrl-C (at a prompt too) — for ``run``/``demo``
following a session in a host, Ctrl-C detaches (the session goes on; stderr says how to
follow or stop it) and also exits 130. None of them shows a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NoReturn

from relay.cli.parser import build_parser
from relay.core.errors import NoAnswerError, PromptInterruptedError, RelayError

if TYPE_CHECKING:
    from rich.console import Console

    from relay.core.crash import Crash, CrashHandler
    from relay.core.models import SessionSpec

# Only the standard library, the parser and the errors are imported up front: each command
# imports what it needs when it runs (relay.cli.parser), so --version and --help cost next to
# nothing and `sessions` and `doctor` never load the engine (benchmarks/cli_startup).


def _default_approvals(as_json: bool) -> Literal["ask", "deny"]:
    """Ask when someone can answer at this terminal; else deny (nobody could answer)."""
    return "ask" if sys.stdin.isatty() and not as_json else "deny"


def _spec(args: argparse.Namespace) -> SessionSpec:
    from pydantic import ValidationError

    from relay.core.models import PermissionPolicy, SessionSpec

    try:
        chain = args.provider or ["demo"]
        return SessionSpec(repo=args.repo, task=args.task, runtime=chain[0].partition(":")[0],
                           chain=chain if len(chain) > 1 or ":" in chain[0] else [],
                           model=args.model,
                           worktree=not args.no_worktree, permission=PermissionPolicy(args.permission),
                           setup_command=args.setup, verify=args.verify, on_limit=args.on_limit,
                           preempt=args.preempt, budget_usd=args.budget,
                           task_budget_usd=args.task_budget,
                           approvals=args.approvals or _default_approvals(args.json))
    except ValidationError as exc:
        raise RelayError(f"Invalid session: {exc.errors()[0]['msg']}.") from exc


async def _dispatch(args: argparse.Namespace, console: Console) -> int:
    from relay.core.config import load_config

    if args.command == "permission-bridge":  # started by Claude Code; needs no data folder
        from relay.cli import permission_cmd

        return await permission_cmd.serve(args.socket)
    config = load_config(home=args.home)
    match args.command:
        case "run":
            from relay.cli import commands

            submit = (commands.submit_continue(args.resume, args.task) if args.resume
                      else commands.submit_new(_spec(args)))
            return await commands.run_on_host(config, submit, console, args.json,
                                              connect=args.connect, token=args.token,
                                              detach=args.detach)
        case "show":
            from relay.cli import commands
            from relay.core.states import ACTIVE_STATES

            row = await commands.show_session(config, args.session, console, args.json,
                                              args.follow, args.connect, args.token)
            return 0 if row.state == "completed" or row.state in ACTIVE_STATES else 1
        case "stop":
            from relay.cli import commands

            return await commands.stop_session(config, args.session, console, args.connect,
                                               args.token)
        case "sessions":
            from relay.cli import commands

            await commands.list_sessions(config, console, args.limit, args.json, args.connect,
                                         args.token, archived=args.archived)
            return 0
        case "archive" | "unarchive":
            from relay.cli import commands

            return await commands.archive_session(config, args.session, console,
                                                  args.command == "archive", args.connect,
                                                  args.token)
        case "demo":
            from relay.cli import commands

            return await commands.demo(config, console, args.json, args.limit_after,
                                       args.quota, args.ask, connect=args.connect,
                                       token=args.token)
        case "recover":
            from relay.cli import commands

            if await commands.recover_on_host(config, console):
                return 0
            return await commands.recover(config, console, args.json)
        case "doctor":
            from relay.cli import doctor_cmd

            return doctor_cmd.doctor(config, console)
        case "audit":
            from relay.cli import audit_cmd

            return await audit_cmd.run(args, config, console)
        case "contract":
            from relay.cli import contract_cmd

            return contract_cmd.run(args, config, console)
        case "handoff":
            from relay.cli import handoff_cmd

            return await handoff_cmd.handoff(config, args, console)
        case "accounts":
            from relay.cli import accounts_cmd

            return await accounts_cmd.run(config, args, console)
        case "detect":
            from relay.cli import detect_cmd

            return await detect_cmd.detect(config, args, console)
        case "pipeline":
            from relay.cli import pipeline_cmd

            return await pipeline_cmd.dispatch(config, args, console)
        case "retrieve" | "knowledge":
            from relay.cli import knowledge_cmd

            return await knowledge_cmd.dispatch(config, args, console)
        case "board":
            from relay.cli import board_cmd

            return await board_cmd.dispatch(config, args, console)
        case "adopt":
            from relay.cli import detect_cmd

            return await detect_cmd.adopt(config, args, console)
        case "daemon":
            from relay.cli import detect_cmd

            return await detect_cmd.daemon(config, args, console)
        case "wallet":
            from relay.cli import wallet_cmd

            return await wallet_cmd.wallet(config, args, console)
        case "usage":
            from relay.cli import wallet_cmd

            return await wallet_cmd.usage(config, args, console)
        case "statusline":
            from relay.cli import wallet_cmd

            return await wallet_cmd.statusline(config, console)
        case "budget":
            from relay.cli import budget_cmd

            return await budget_cmd.budget(config, args, console)
        case "history" | "diff" | "rewind" | "review" | "finish":
            from relay.cli import history_cmd

            return await history_cmd.dispatch(config, args, console)
        case "prices":
            from relay.cli import budget_cmd

            return await budget_cmd.prices(config, args, console)
        case "serve" | "status" | "token":
            from relay.cli import serve_cmd

            act = {"serve": serve_cmd.serve, "status": serve_cmd.status,
                   "token": serve_cmd.token}[args.command]
            return await act(config, args, console)
        case "mcp":
            from relay.cli import mcp_cmd

            return await mcp_cmd.serve(config, args)
        case "answer":
            from relay.cli import questions

            return await questions.answer(config, args, console)
        case "say" | "messages" | "interrupt" | "fork":
            from relay.cli import talk_cmd

            return await talk_cmd.dispatch(config, args, console)
        case "setup":
            from relay.cli import setup_cmd

            return await setup_cmd.setup(config, args, console)
        case "tui":
            from relay.cli.tui import command as tui_cmd

            return await tui_cmd.tui(config, args, console)
        case "hook":  # `relay-cli --home DIR hook claude`: the fast path in main() took the rest
            from relay.cli.hook_client import main as hook

            return hook(["--data-dir", str(args.data_dir or config.home),
                         *(["--headers"] if args.headers else [])])
    return 2


def _quick(args: argparse.Namespace, console: Console) -> int | None:
    """The commands that run without an event loop (and without the engine); None: not one."""
    if args.command == "sessions" and not args.json and not (args.connect or os.environ.get(
            "RELAY_CONNECT")):  # another machine's host: its API, not this relay.db
        from relay.cli import sessions_cmd
        from relay.core.home import default_home

        return 0 if sessions_cmd.quick(args.home or default_home(), args.limit, console,
                                       args.archived) else None
    if args.command == "doctor":
        from relay.cli import doctor_cmd
        from relay.core.config import load_config

        return doctor_cmd.doctor(load_config(home=args.home), console)
    return None


def _quick_exit(code: int) -> NoReturn:
    """End the process of a quick command (run from the command line) now that its output is
    flushed: it holds nothing to close (a read-only sqlite connection, finished threads), and
    CPython's teardown of the ~400 modules doctor loads takes longer than doctor itself."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _explain(exc: RelayError, errors: Console) -> int:
    """Print a RelayError as one or two lines (never a traceback); its exit code."""
    from rich.markup import escape

    from relay.cli import prompt
    from relay.cli.hints import runnable

    if isinstance(exc, PromptInterruptedError):  # Ctrl-C at a prompt
        errors.print("interrupted", markup=False)
        return prompt.INTERRUPTED_EXIT
    if isinstance(exc, NoAnswerError):  # Ctrl-D at a prompt: one line, no hint
        errors.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, markup=True)
        return prompt.EOF_EXIT
    errors.print(f"[bold red]error:[/] {exc.message}", highlight=False, markup=True)
    if exc.hint:
        errors.print(f"  → {runnable(exc.hint)}", markup=False)
    return 2


async def _run(args: argparse.Namespace, console: Console, crashes: CrashHandler) -> int:
    """The command on an event loop whose unhandled errors go to ``crashes``."""
    import asyncio

    asyncio.get_running_loop().set_exception_handler(crashes.loop_handler)
    return await _dispatch(args, console)


def _crash_printer(log_file: Path) -> Callable[[Crash], None]:
    def show(crash: Crash) -> None:
        from relay.core.crash import report_line
        from relay.core.termsafe import terminal_safe

        sys.stderr.write(terminal_safe(report_line(crash, log_file)) + "\n")
        sys.stderr.flush()

    return show


def _not_utf8(argv: Sequence[str]) -> str | None:
    """The first argument that is not UTF-8 text (Python hands such bytes over as lone
    surrogates, which nothing downstream can store, print or pass on), shown safely."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return arg.encode("utf-8", "backslashreplace").decode("ascii", "replace")[:80]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """relay-cli; everything it writes on stdout and stderr is scrubbed of secrets on the
    way out (:func:`relay.core.termsafe.scrubbed_output`: the one point, whatever prints) —
    except ``hook claude``, Claude Code's hook client, which runs first and alone: its
    output is the host's answer for Claude, and ``--headers`` is the MCP header Claude asks
    for (:mod:`relay.cli.hook_client`)."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:2] == ["hook", "claude"]:
        from relay.cli.hook_client import main as hook

        return hook(given[2:])
    from relay.core.termsafe import scrubbed_output

    with scrubbed_output():
        return _command(argv)


def _command(argv: Sequence[str] | None) -> int:
    bad = _not_utf8(sys.argv[1:] if argv is None else argv)
    if bad is not None:  # before parsing: argparse would echo it (and printing it fails)
        sys.stderr.write(f"error: the argument {bad!r} is not UTF-8 text\n"
                         "  → Relay reads its arguments as UTF-8: retype it, or set the "
                         "terminal to UTF-8\n")
        return 2
    args = build_parser().parse_args(argv)
    # after parsing: --version and --help never load rich (nor logging)
    import logging

    from relay.cli import terminal
    from relay.core.crash import CRASH_EXIT, CrashHandler, log_path
    from relay.core.home import default_home

    console = terminal.console()
    errors = terminal.console(stderr=True)
    warnings = logging.StreamHandler()
    warnings.setFormatter(terminal.SafeFormatter("relay: %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[warnings])
    log_file = log_path(args.home or default_home())
    crashes = CrashHandler(log_file, _crash_printer(log_file),
                           context={"command": f"relay-cli {args.command}"})
    with crashes.installed():
        code = _main(args, argv, console, errors, crashes)
    return CRASH_EXIT if crashes.crashes and code != 130 else code


def _main(args: argparse.Namespace, argv: Sequence[str] | None, console: Console,
          errors: Console, crashes: CrashHandler) -> int:
    try:
        quick = _quick(args, console)
        if quick is not None:
            return _quick_exit(quick) if argv is None else quick
        import asyncio

        return asyncio.run(_run(args, console, crashes))
    except RelayError as exc:
        return _explain(exc, errors)
    except KeyboardInterrupt:  # the terminal echoed ^C: the message goes on its own line
        errors.print(("\n" if sys.stderr.isatty() else "") + "interrupted", markup=False)
        return 130
    except BrokenPipeError:  # `relay-cli … | head`: the reader left; nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 — a crash: one line (printed by the handler), the rest logged
        from relay.core.crash import CRASH_EXIT
        from relay.core.home import DB_FILE, default_home
        from relay.core.store.faults import is_store_damage, read_error

        if is_store_damage(exc):  # relay.db's bytes, not Relay: say which file and what to do
            return _explain(read_error((args.home or default_home()) / DB_FILE, exc), errors)

        crashes.handle(exc, f"relay-cli {args.command}")
        return CRASH_EXIT


if __name__ == "__main__":
    sys.exit(main())
