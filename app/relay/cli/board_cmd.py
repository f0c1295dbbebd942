"""relay-cli board: the board of all the work — tasks per stage, comments, the guard's
environments — as a client of the data folder's host (:mod:`relay.cli.hosted`).

``board`` prints one column per stage (plan … done; ``--project`` one project), each card
with its key, title, the live state of its sessions, a needs-input mark and its last report;
``--json`` the cards. ``board show KEY`` a task in full; ``board new``, ``board stage``,
``board comment`` change it (a comment reaches the linked agent session at its next hook).
``board env list|set|remove`` are the project's environments for the guard. ``board --open``
prints a one-time link that signs a browser in to the host's web board (and opens it when
there is a display).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from relay.cli.tables import Column, FitTable
from relay.core.config import Config
from relay.core.present import clip

if TYPE_CHECKING:
    from relay.api.client_board import BoardClient
    from relay.board.model import Card, SessionLink, TaskDetail

STAGES = ("plan", "dev", "review", "test", "live", "done")
#: the environment references ``board env set`` takes: option → EnvRefs field
REF_OPTIONS = {"--kube-context": "kube_contexts", "--ssh-host": "ssh_hosts",
               "--db-host": "db_hosts", "--url": "urls",
               "--terraform-workspace": "terraform_workspaces",
               "--pulumi-stack": "pulumi_stacks", "--aws-profile": "aws_profiles",
               "--gcp-project": "gcp_projects", "--host": "hosts"}
#: the live state's mark on a card
MARKS = {"working": "▶", "needs_input": "!", "idle": "·", "quota_blocked": "⏸", "ended": "■"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    board = sub.add_parser("board", help="the board of all the work: tasks per stage, "
                                         "comments, the guard's environments")
    board.add_argument("--project", metavar="SLUG", help="only this project (default: all)")
    board.add_argument("--json", action="store_true", help="print the cards as JSON")
    board.add_argument("--open", action="store_true",
                       help="print a one-time link signing a browser in to the web board "
                            "(and open it when there is a display)")
    board.add_argument("--no-done", action="store_true", help="leave out the tasks done")
    actions = board.add_subparsers(dest="board_command", metavar="ACTION")
    show = actions.add_parser("show", help="a task in full: reports, decisions, comments")
    show.add_argument("key", help="the task's key, e.g. RELAY-3")
    show.add_argument("--json", action="store_true")
    new = actions.add_parser("new", help="a new task")
    new.add_argument("title")
    new.add_argument("--repo", type=Path, default=Path.cwd(),
                     help="the repository (its project; default: .)")
    new.add_argument("--stage", choices=STAGES, default="plan")
    new.add_argument("--next", dest="next_step", metavar="STEP", help="the next step")
    new.add_argument("--json", action="store_true")
    stage = actions.add_parser("stage", help="move a task to a stage")
    stage.add_argument("key")
    stage.add_argument("stage", choices=STAGES)
    stage.add_argument("--note", help="why, in a sentence")
    stage.add_argument("--json", action="store_true")
    comment = actions.add_parser("comment", help="comment on a task (the linked agent gets it)")
    comment.add_argument("key")
    comment.add_argument("text")
    comment.add_argument("--json", action="store_true")
    _env_arguments(actions)


def _env_arguments(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = actions.add_parser("env", help="the project's environments, for the guard")
    env_actions = env.add_subparsers(dest="env_command", required=True, metavar="ACTION")
    project = argparse.ArgumentParser(add_help=False)
    project.add_argument("--project", dest="env_project", metavar="SLUG_OR_REPO",
                         help="the project (a slug or a repository; default: the "
                              "repository here)")
    listed = env_actions.add_parser("list", parents=[project], help="the environments")
    listed.add_argument("--json", action="store_true")
    put = env_actions.add_parser("set", parents=[project], help="add or replace an environment")
    put.add_argument("name")
    put.add_argument("--kind", required=True, choices=("local", "test", "live"))
    put.add_argument("--level", required=True, choices=("none", "read", "ask", "full"),
                     help="none: deny any touch; read: deny changes; ask: ask the user; "
                          "full: allowed (a warning on a live one)")
    for option, field in REF_OPTIONS.items():
        put.add_argument(option, dest=field, action="append", default=[],
                         metavar=option.removeprefix("--").replace("-", "_").upper(),
                         help="repeatable")
    put.add_argument("--notes", default="")
    put.add_argument("--json", action="store_true")
    remove = env_actions.add_parser("remove", parents=[project], help="remove an environment")
    remove.add_argument("name")


async def dispatch(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli.hosted import host_api

    async with host_api(config, args) as attached:
        board = attached.client.board
        match args.board_command:
            case None if args.open:
                return await _open(board)
            case None:
                cards = await board.cards(args.project, done=not args.no_done)
                if args.json:
                    _json(cards)
                else:
                    print_board(console, cards)
            case "show":
                detail = await board.task(args.key)
                if args.json:
                    _json(detail)
                else:
                    print_task(console, detail)
            case "new":
                task = await board.create_task(str(args.repo.resolve()), args.title,
                                               stage=args.stage, next_step=args.next_step)
                _said(args, console, task, f"Created {task.key} [{task.stage}] {task.title}")
            case "stage":
                task = await board.set_stage(args.key, args.stage, note=args.note)
                _said(args, console, task, f"{task.key} is in {task.stage} now.")
            case "comment":
                said = await board.comment(args.key, args.text)
                _said(args, console, said, f"Comment #{said.id} on {args.key}: it reaches a "
                                           "linked agent session at its next prompt or tool call.")
            case "env":
                return await _env(board, args, console)
    return 0


def _json(value: Any) -> None:
    from pydantic_core import to_jsonable_python

    print(json.dumps(to_jsonable_python(value), ensure_ascii=False), flush=True)


def _said(args: argparse.Namespace, console: Console, value: Any, text: str) -> None:
    if args.json:
        _json(value)
    else:
        console.print(text, markup=False, highlight=False)


# -- the board -----------------------------------------------------------------------------

def session_state(link: SessionLink) -> str:
    """``a1b2c3d4 working`` — a linked session's live state (hooks), else its Relay state."""
    state = link.live.state if link.live else link.relay_state or "linked"
    detail = f" ({clip(link.live.detail, 40)})" if link.live and link.live.detail else ""
    return f"{MARKS.get(state, '')}{link.session_ref[:8]} {state}{detail}".strip()


def card_text(card: Card) -> Text:
    """One card: key, title, its sessions' live states, needs-input, the last report."""
    text = Text()
    text.append(card.task.key, style="bold")
    if card.needs_input:
        text.append(" ! needs input", style="bold red")
    text.append(f"\n{clip(card.task.title, 120)}")
    for link in card.sessions:
        text.append(f"\n{session_state(link)}", style="cyan")
    if card.open_comments:
        text.append(f"\n✉ {card.open_comments} comment(s) open", style="yellow")
    if card.last_report:
        text.append(f"\n» {clip(card.last_report.summary, 100)}", style="dim")
    return text


def print_board(console: Console, cards: list[Card]) -> None:
    """The cards in one column per stage (the stages without a card left out)."""
    if not cards:
        console.print("No tasks on the board. `relay-cli board new TITLE` adds one (agents "
                      "add theirs with the board_task_create MCP tool).", markup=False)
        return
    by_stage = {s: [c for c in cards if c.task.stage == s] for s in STAGES}
    shown = [s for s in STAGES if by_stage[s]]
    table = FitTable(*(Column(f"{s} ({len(by_stage[s])})") for s in shown))
    for row in range(max(len(by_stage[s]) for s in shown)):
        cells = [card_text(by_stage[s][row]) if row < len(by_stage[s]) else Text()
                 for s in shown]
        if row:  # a blank line between two cards of a column
            cells = [Text("\n") + cell if cell else cell for cell in cells]
        table.add_row(*cells)
    console.print(table)


def print_task(console: Console, detail: TaskDetail) -> None:
    from relay.core.store.sql import from_ms

    task = detail.card.task

    def line(label: str, value: object) -> None:
        if value:
            console.print(f"  {label}: {value}", markup=False, highlight=False)

    console.print(Text(f"{task.key} [{task.stage}] {task.title}", style="bold"))
    for label, value in (("project", task.project), ("next step", task.next_step),
                         ("waiting on", task.waiting_on), ("branch", task.branch),
                         ("version", task.version)):
        line(label, value)
    if task.description:
        console.print(task.description, markup=False, highlight=False)
    for link in detail.card.sessions:
        line("session", session_state(link))
    for step in detail.card.plan:
        line("plan", f"[{step.get('status', '')}] {step.get('content', '')}")
    for report in detail.reports:
        line(f"report #{report.id} by {report.author} ({from_ms(report.created_ms):%Y-%m-%d %H:%M})",
             report.summary + (f"\n    {report.body}" if report.body else ""))
    for decision in detail.decisions:
        line(f"decision #{decision.id} by {decision.decided_by}", decision.text)
    for c in detail.comments:
        state = "acknowledged" if c.acked_ms else "delivered" if c.delivered_ms else "not delivered"
        line(f"comment #{c.id} by {c.author} ({state})", c.body)


# -- the web board and the guard's environments ----------------------------------------------

def has_display(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether a browser can be opened here (macOS and Windows always; else a display)."""
    return platform.system() in ("Darwin", "Windows") or bool(
        environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


async def _open(board: BoardClient) -> int:
    url = await board.login_link()
    # the link carries its one-time code, which the scrubber would take for a secret: it is
    # what the user asked for (single use, 10 minutes), written below the scrubbing stream
    sys.stdout.flush()
    sys.stdout.buffer.write(f"{url}\n".encode())
    sys.stdout.buffer.flush()
    if has_display() and sys.stdout.isatty():
        import webbrowser

        if webbrowser.open(url):
            print("Opened in your browser (the link works once, for 10 minutes).",
                  file=sys.stderr)
    return 0


async def _env(board: BoardClient, args: argparse.Namespace, console: Console) -> int:
    from relay.core.guard import Environment, EnvRefs

    slug = args.env_project
    if not slug or os.sep in slug or Path(slug).exists():
        slug = (await board.project_for(str(Path(slug or ".").resolve()))).slug
    if args.env_command == "list":
        found = await board.environments(slug)
        if args.json:
            _json(found)
            return 0
        if not found:
            console.print(f"{slug} has no environments: `relay-cli board env set NAME --kind "
                          "live --level ask --kube-context CONTEXT` adds one.", markup=False)
            return 0
        table = FitTable(Column("name", figure=True), Column("kind", figure=True),
                         Column("level", figure=True), "reached through", "notes",
                         title=f"Environments of {slug}")
        for env in found:
            refs = "; ".join(f"{field}: {', '.join(values)}"
                             for field, values in vars(env.refs).items() if values)
            table.add_row(Text(env.name), env.kind, env.level, Text(refs), Text(env.notes))
        console.print(table)
    elif args.env_command == "set":
        env = Environment(args.name, args.kind, args.level,
                          EnvRefs(**{f: tuple(getattr(args, f)) for f in REF_OPTIONS.values()}),
                          args.notes)
        saved = await board.set_environment(slug, env)
        _said(args, console, saved, f"{slug}: environment {saved.name} ({saved.kind}, "
                                    f"{saved.level}) saved.")
    else:
        await board.remove_environment(slug, args.name)
        console.print(f"{slug}: environment {args.name} removed.", markup=False,
                      highlight=False)
    return 0
