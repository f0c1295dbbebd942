"""``relay-cli say``, ``messages``, ``interrupt`` and ``fork``: talking to a session's agent
through the host (``client.talk``, the same names as ``engine.talk``).

Each is a client of the data folder's host (``--connect``'s); with none, the command hosts
for its own duration (:func:`relay.cli.hosted.host_api`) — and then follows what it started
(a follow-up's run, a fork) to its end, since a run this process hosts ends with it.
Every line printed fits an 80-column terminal: a command to run comes on a line of its own.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from relay.cli.hints import cli
from relay.core.errors import RelayError, UnsupportedCapabilityError

if TYPE_CHECKING:
    from relay.api.attach import Attached
    from relay.core.config import Config
    from relay.core.models import ForkResult, SessionMessage

#: the exit code of a refusal this module explains itself (main's code for what Relay explains)
REFUSED_EXIT = 2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    say = sub.add_parser("say", help="send a message to a session's agent: a follow-up when it "
                                     "has finished, queued for its next turn while it runs")
    say.add_argument("session", help="session id (a unique prefix is enough)")
    say.add_argument("text", help='the message ("-": read it from stdin)')
    how = say.add_mutually_exclusive_group()
    how.add_argument("--queue", dest="mode", action="store_const", const="queue",
                     help="deliver it when the running turn ends (the default)")
    how.add_argument("--now", dest="mode", action="store_const", const="now",
                     help="steer it into the running turn (runtimes that can)")
    how.add_argument("--interrupt", dest="mode", action="store_const", const="interrupt",
                     help="stop the running turn, then send it")
    say.set_defaults(mode="queue")
    say.add_argument("--attach", action="append", default=[], metavar="PATH",
                     help="a file or image the agent should read (repeatable)")
    say.add_argument("--json", action="store_true", help="print the message as JSON")

    messages = sub.add_parser("messages", help="a session's queued messages (--all: every "
                                               "one); cancel or edit a queued one")
    messages.add_argument("session", help="session id (a unique prefix is enough)")
    messages.add_argument("--all", action="store_true",
                          help="delivered and cancelled ones too")
    change = messages.add_mutually_exclusive_group()
    change.add_argument("--cancel", metavar="MESSAGE", help="cancel a queued message")
    change.add_argument("--edit", nargs=2, metavar=("MESSAGE", "TEXT"),
                        help="change a queued message's text")
    messages.add_argument("--json", action="store_true")

    interrupt = sub.add_parser("interrupt", help="stop a session's running turn and keep the "
                                                 "conversation (queued messages go next)")
    interrupt.add_argument("session", help="session id (a unique prefix is enough)")
    interrupt.add_argument("--json", action="store_true")

    fork = sub.add_parser("fork", help="a new session at a point of this one, in a new "
                                       "worktree (the original is untouched)")
    fork.add_argument("session", help="session id (a unique prefix is enough)")
    at = fork.add_mutually_exclusive_group()
    at.add_argument("--at-event", type=int, metavar="N",
                    help="at this stream row (an event id: show --json lists them)")
    at.add_argument("--at-commit", metavar="SHA", help="at this snapshot commit (history "
                                                       "lists them); default: the last one")
    fork.add_argument("--prompt", help="the fork's task (default: the session's)")
    fork.add_argument("--json", action="store_true")


async def dispatch(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli.hosted import host_api

    text = _stdin_text(args.text) if args.command == "say" else None
    async with host_api(config, args) as attached:
        row = await attached.client.get_session(args.session)
        match args.command:
            case "say":
                assert text is not None
                return await _say(attached, row.id, text, args, console)
            case "messages":
                return await _messages(attached, row.id, args, console)
            case "interrupt":
                said = await attached.client.talk.interrupt(row.id)
                if args.json:
                    _json({"session_id": row.id, "message": said})
                else:
                    console.print(escape(said), highlight=False)
                return 0
            case "fork":
                return await _fork(attached, row.id, args, console)
    return REFUSED_EXIT


def _stdin_text(text: str) -> str:
    if text != "-":
        return text
    if sys.stdin.isatty():
        raise RelayError("say - reads the message from stdin, and stdin is this terminal.",
                         'Pipe it in (… | relay-cli say SESSION -), or give the text: '
                         'relay-cli say SESSION "…"')
    return sys.stdin.read()


async def _say(attached: Attached, session_id: str, text: str, args: argparse.Namespace,
               console: Console) -> int:
    from relay.cli.commands import session_cursor

    talk = attached.client.talk
    after = await session_cursor(attached.client, session_id)  # a follow-up's run: all of it
    try:
        sent = await talk.say(session_id, text, mode=args.mode, source="cli",
                              attachments=args.attach)
    except UnsupportedCapabilityError as exc:
        return _cannot_steer(session_id, text, exc)
    if args.json:
        _json(sent.model_dump(mode="json"))
    else:
        for line in said_lines(sent, hint=not attached.hosting):
            console.print(line, markup=False, highlight=False)
    return await _follow_here(attached, session_id, after, args, console)


def said_lines(sent: SessionMessage, *, hint: bool = True) -> list[str]:
    """What happened to a message just sent, and what can be done about it (``hint``: the
    command that follows what it started)."""
    sid = sent.session_id
    if sent.state == "delivered" and sent.how == "steer":
        return [f"Steered into session {sid}'s running turn."]
    if sent.state == "delivered":
        how = "its agent's own conversation" if sent.how == "resume" else "Relay's brief"
        return [f"Session {sid} goes on with your message: a new run", f"continuing {how}.",
                *([f"  → follow: {cli(f'show {sid} --follow')}"] if hint else [])]
    if sent.state in ("cancelled", "failed"):
        return [f"Message {sent.id} was not delivered ({sent.state})"
                + (f": {sent.error}" if sent.error else ".")]
    first = (f"Session {sid}'s turn is being interrupted; message {sent.id} goes next."
             if sent.mode == "interrupt" else
             f"Queued as message {sent.id}: it goes when session {sid}'s turn ends.")
    return [first, f"  → cancel: {cli(f'messages {sid} --cancel {sent.id}')}"]


def _cannot_steer(session_id: str, text: str, exc: UnsupportedCapabilityError) -> int:
    """``say --now`` to a runtime that cannot take a message mid-turn: nothing was sent;
    the two ways that work, each runnable as it is printed."""
    quoted = shlex.quote(text) if len(text) <= 30 and "\n" not in text else "TEXT"
    lines = [f"error: {exc.message}", "  Nothing was sent. Queue it (it goes when this turn ends):",
             f"    {cli(f'say {session_id} {quoted}')}", "  or interrupt the turn and send it:",
             f"    {cli(f'say {session_id} {quoted} --interrupt')}"]
    print("\n".join(lines), file=sys.stderr, flush=True)
    return REFUSED_EXIT


async def _messages(attached: Attached, session_id: str, args: argparse.Namespace,
                    console: Console) -> int:
    talk = attached.client.talk
    if args.cancel or args.edit:
        changed = (await talk.cancel(session_id, args.cancel) if args.cancel
                   else await talk.edit(session_id, args.edit[0], args.edit[1]))
        if args.json:
            _json(changed.model_dump(mode="json"))
        else:
            done = "cancelled" if args.cancel else "changed"
            console.print(f"Message {changed.id} {done}.", markup=False, highlight=False)
        return 0
    found = await talk.messages(session_id, pending=not args.all)
    if args.json:
        _json([m.model_dump(mode="json") for m in found])
        return 0
    if not found:
        console.print(f"Session {session_id} has no {'' if args.all else 'queued '}messages.",
                      markup=False, highlight=False)
        return 0
    print_messages(console, found)
    return 0


def print_messages(console: Console, found: list[SessionMessage]) -> None:
    from relay.cli.tables import Column, FitTable

    table = FitTable(Column("id", figure=True), Column("state", figure=True),
                     Column("from", figure=True), "message")
    for m in found:
        state = f"{m.state} ({m.how})" if m.how else (
            f"{m.state} ({m.mode})" if m.state == "queued" and m.mode != "queue" else m.state)
        kind = m.source if m.kind == "message" else f"{m.kind}"
        table.add_row(m.id, state, escape(kind), escape(" ".join(m.text.split())))
    console.print(table)


async def _fork(attached: Attached, session_id: str, args: argparse.Namespace,
                console: Console) -> int:
    forked = await attached.client.talk.fork(session_id, at_event=args.at_event,
                                             at_commit=args.at_commit, prompt=args.prompt)
    if args.json:
        _json(forked.model_dump(mode="json"))
    else:
        for line in fork_lines(forked, hint=not attached.hosting):
            console.print(line, markup=False, highlight=False)
    return await _follow_here(attached, forked.session_id, 0, args, console)


def fork_lines(forked: ForkResult, *, hint: bool = True) -> list[str]:
    carried = ("the conversation" + (f" up to turn {forked.turns}" if forked.turns else "")
               if forked.how == "conversation" else "Relay's signed brief")
    at = f" at {forked.sha[:12]}" if forked.sha else ""
    return [f"Forked session {forked.parent_id} as {forked.session_id}{at},",
            f"carrying {carried}" + (f" (branch {forked.branch})." if forked.branch else "."),
            *([f"  → follow: {cli(f'show {forked.session_id} --follow')}"] if hint else [])]


async def _follow_here(attached: Attached, session_id: str, after: int,
                       args: argparse.Namespace, console: Console) -> int:
    """When this command hosts, follow the session to its end (what it started would end
    with this process); else return at once (the host runs it)."""
    if not attached.hosting:
        return 0
    from relay.cli.hosted import follow_session
    from relay.cli.render import StreamPrinter, session_footer

    row = await follow_session(attached.client, session_id, after,
                               StreamPrinter(console, args.json))
    if not args.json:
        session_footer(console, row)
    return 0 if row.state == "completed" else 1


def _json(value: Any) -> None:
    from relay.core.termsafe import json_text

    print(json_text(value), flush=True)
