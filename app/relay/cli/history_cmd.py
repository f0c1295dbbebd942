"""relay-cli history, diff, rewind, review, finish: the time machine from a terminal.

Each asks the data folder's host (:mod:`relay.cli.hosted`); a session ``rewind --continue``
or ``review --add`` sets going runs there, and the command follows it until it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys

from rich.console import Console
from rich.markup import escape

from relay.api.client import RelayClient
from relay.cli.argtypes import positive_int
from relay.cli.hints import cli
from relay.cli.hosted import follow_session, host_api
from relay.cli.render import StreamPrinter, session_footer
from relay.core.config import Config
from relay.core.errors import PipelineError, RelayError, SessionNotFoundError
from relay.core.numbers import whole_number
from relay.history import present
from relay.history.diffmodel import FileDiff

_SPOT = re.compile(r"^(?P<path>.+):(?P<line>[0-9]+)$")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    history = sub.add_parser("history", help="a session's (or a pipeline run's) timeline: who ran, "
                                             "handoffs, checks, commits")
    history.add_argument("session", metavar="SESSION|RUN")
    history.add_argument("--json", action="store_true")
    diff = sub.add_parser("diff", help="what a commit, a session or one agent's stint changed")
    diff.add_argument("target", metavar="SHA|SESSION")
    diff.add_argument("--stint", type=positive_int, metavar="N",
                      help="only stint N of the session (1 = first)")
    diff.add_argument("--session", help="the session whose repository holds SHA")
    diff.add_argument("--stat", action="store_true", help="files and line counts only")
    diff.add_argument("--json", action="store_true")
    rewind = sub.add_parser("rewind", help="a new branch at a snapshot (nothing is moved or lost)")
    rewind.add_argument("sha")
    rewind.add_argument("--session", help="the session the commit belongs to")
    rewind.add_argument("--continue", dest="cont", action="store_true",
                        help="and start a new session that goes on from there")
    rewind.add_argument("--prompt", help="what the new session should do (default: the task)")
    rewind.add_argument("--json", action="store_true")
    review = sub.add_parser("review", help="review comments of a session (and add one)")
    review.add_argument("session")
    review.add_argument("--sha", help="only comments on this commit (with --add: the commit)")
    review.add_argument("--add", nargs=2, metavar=("PATH:LINE", "TEXT"),
                        help="comment on a line; the agent gets it as its next instruction")
    review.add_argument("--old", action="store_true", help="the line number is in the old version")
    review.add_argument("--json", action="store_true")
    finish = sub.add_parser("finish", help="what a session changed; merge it into its base or keep it")
    finish.add_argument("session")
    how = finish.add_mutually_exclusive_group()
    how.add_argument("--merge", action="store_true", help="merge the branch into the base branch")
    how.add_argument("--keep", action="store_true", help="keep the branch as it is")
    finish.add_argument("--json", action="store_true")


async def dispatch(config: Config, args: argparse.Namespace, console: Console) -> int:
    if args.command == "rewind" and args.cont:
        return await _rewind_and_continue(config, args, console)
    if args.command == "review" and args.add:
        return await _add_comment(config, args, console)
    async with host_api(config, args) as attached:
        client = attached.client
        match args.command:
            case "history":
                return await _history(client, args, console)
            case "diff":
                return await _diff(client, args, console)
            case "rewind":
                result = await client.history.rewind(args.sha, session_id=args.session)
                _print(console, args.json, present.jsonable(result),
                       f"Created branch {result.branch} at {result.sha[:10]}; every existing "
                       "branch is as it was.")
                return 0
            case "review":
                comments = await client.review.comments(args.session, args.sha)
                _print(console, args.json, present.jsonable(comments),
                       "\n".join(present.comment_lines(comments)) or "No review comments.")
                return 0
            case "finish":
                return await _finish(client, args, console)
    return 2


def _print(console: Console, as_json: bool, data: object, text: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        console.print(escape(text), soft_wrap=True)


async def _history(client: RelayClient, args: argparse.Namespace, console: Console) -> int:
    try:
        line = await client.history.timeline(args.session)
    except SessionNotFoundError as missing:
        try:
            run = await client.history.run_timeline(args.session)
        except PipelineError:
            raise missing from None
        _print(console, args.json, present.jsonable(run), "\n".join(present.run_lines(run)))
        return 0
    _print(console, args.json, present.jsonable(line), "\n".join(present.timeline_lines(line)))
    return 0


async def _diff(client: RelayClient, args: argparse.Namespace, console: Console) -> int:
    files: list[FileDiff]
    try:
        row = None if args.session else await client.get_session(args.target)
    except SessionNotFoundError:
        row = None
    if row is not None:
        files = (await client.history.stint_diff(row.id, args.stint - 1) if args.stint
                 else await client.history.session_diff(row.id))
    elif args.stint:
        raise RelayError("--stint needs a session, not a commit.", "relay-cli diff SESSION --stint N")
    else:
        files = await client.history.commit_diff(args.target, args.session)
    if args.json:
        sys.stdout.write(json.dumps(present.jsonable(files)) + "\n")
        return 0
    if args.stat or not files:
        console.print(escape("\n".join(present.diff_stat(files))))
        return 0
    for text in present.diff_text(files):
        style = ("green" if text.startswith("+") and not text.startswith("+++") else
                 "red" if text.startswith("-") and not text.startswith("---") else
                 "cyan" if text.startswith("@@") else "bold" if text.startswith("diff ") else "")
        console.print(escape(text), style=style or None, soft_wrap=True)
    return 0


async def _finish(client: RelayClient, args: argparse.Namespace, console: Console) -> int:
    summary = await client.history.summary(args.session)
    if not (args.merge or args.keep):
        if args.json:
            _print(console, True, present.jsonable(summary), "")
            return 0
        console.print(escape(f"Session {summary.session_id} on {summary.branch}: "
                             f"{summary.commits} commit(s), {len(summary.files)} file(s)"))
        for path, status, added, deleted in summary.files:
            console.print(escape(f"  {status:<9} {path}  +{added} -{deleted}"))
        for stint in summary.stints:
            console.print(escape(f"  {stint}"))
        verdict = (f"`{cli(f'finish {summary.session_id} --merge')}` merges it into "
                   f"{summary.base_branch}" if summary.can_merge
                   else f"It cannot be merged: {summary.why_not}")
        console.print(escape(f"{verdict}; `--keep` keeps the branch."))
        return 0
    result = await client.history.finish(args.session, "merge" if args.merge else "keep")
    _print(console, args.json, present.jsonable(result), result.message)
    return 0


async def _rewind_and_continue(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli import commands
    from relay.cli.prompt import Passphrase

    passphrase = Passphrase()
    async with host_api(config, args, passphrase=passphrase) as attached:
        engine = attached.engine  # hosting here: the vault is asked for here, before it runs
        if engine is not None and args.session and await asyncio.to_thread(passphrase.needed,
                                                                          config):
            why = await commands.stored_needs(args.session, resumed=False)(engine)
            if why:
                passphrase.unlock(config, why)
        client = attached.client
        result = await client.history.rewind(args.sha, session_id=args.session, continue_=True,
                                             prompt=args.prompt)
        if not args.json:
            console.print(escape(f"Created branch {result.branch} at {result.sha[:10]}; a new "
                                 "session continues from there."))
        if result.session_id is None:
            raise RelayError("The rewind started no session.")
        return await _follow(client, result.session_id, 0, console, args.json)


async def _follow(client: RelayClient, session_id: str, after: int, console: Console,
                  as_json: bool) -> int:
    """Follow the session in the host until it ends; 0 when it completed."""
    if not as_json:
        row = await client.get_session(session_id)
        console.print(f"[bold]Relay[/] session {session_id} · {row.runtime}"
                      f" · permissions {row.permission.value}")
    final = await follow_session(client, session_id, after, StreamPrinter(console, as_json))
    if not as_json:
        session_footer(console, final)
    return 0 if final.state == "completed" else 1


async def _add_comment(config: Config, args: argparse.Namespace, console: Console) -> int:
    spot, text = args.add
    match = _SPOT.match(spot)
    if match is None:
        raise RelayError(f"{spot[:80]!r} is not PATH:LINE.", "For example: src/app.py:12")
    try:
        line = whole_number(match["line"], 1)
    except ValueError as exc:
        raise RelayError(f"The line number in PATH:LINE {exc}.", "For example: src/app.py:12") from None
    async with host_api(config, args) as attached:
        client = attached.client
        row = await client.get_session(args.session)
        sha = args.sha or await _tip(client, row.id)
        after = await client.last_event_id(row.id)
        comment = await client.review.comment(row.id, sha, match["path"], line, text,
                                              "old" if args.old else "new")
        if comment.state != "sent":
            _print(console, args.json, present.jsonable(comment),
                   f"Comment queued: {row.id} is {row.state}; the agent gets it when its "
                   "current run ends.")
            return 0
        if not args.json:
            console.print(escape(f"Comment sent to {row.id}'s agent as its next instruction."))
        final = await follow_session(client, row.id, after, StreamPrinter(console, args.json))
    if not args.json:
        session_footer(console, final)
    return 0 if final.state == "completed" else 1


async def _tip(client: RelayClient, session_id: str) -> str:
    line = await client.history.timeline(session_id)
    if line.commits:
        return line.commits[-1].sha
    raise RelayError(f"Session {session_id} has no commits to comment on.", "Pass --sha.")
