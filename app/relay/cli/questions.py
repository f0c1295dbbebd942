"""The agent asks: relay-cli prompts on a terminal, says how to answer elsewhere otherwise,
and fails clearly in --json mode (it cannot ask anyone there); ``relay-cli answer``.

On a terminal the options are numbered and the user types a number (or free text for a
question); Enter alone leaves the question open for another terminal or the window. The
line is read without blocking the stream (:func:`relay.cli.prompt.read_line`): Ctrl-C
cancels the session and exits 130 at once; Ctrl-D (the input ended) stops the session and
the command ends with one line, exit 2.
Without a terminal the question and the ``relay-cli answer`` command that answers it are
printed, and the run waits. With ``--json`` the run stops: the question is in the JSON
stream, the session is stopped, and stderr says how to run it so it does not ask.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Protocol

from rich.console import Console
from rich.markup import escape

from relay.cli.hints import cli
from relay.cli.prompt import read_line
from relay.core.config import Config
from relay.core.errors import NoAnswerError, RelayError
from relay.core.events import NeedsInput

#: reads one line from the user without blocking the event loop (NoAnswerError: Ctrl-D)
Reader = Callable[[str], Awaitable[str]]


def answer_command(session_id: str, event: NeedsInput) -> str:
    first = event.options[0].id if event.options else '--text "…"'
    return cli(f"answer {session_id} {event.request_id} {first}")


class Answering(Protocol):
    """What answers and stops: the host's client, or an engine (the same method names)."""

    async def cancel_session(self, session_id: str) -> None: ...

    async def answer_input(self, session_id: str, request_id: str, option_id: str | None = None,
                           text: str | None = None) -> str: ...


class Questions:
    """What ``relay-cli run`` does when the agent it follows asks something."""

    def __init__(self, engine: Answering, console: Console, as_json: bool,
                 interactive: bool | None = None, reader: Reader = read_line) -> None:
        self.engine, self.console, self.as_json = engine, console, as_json
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.reader = reader
        #: why the run was stopped (--json cannot ask), once it was
        self.stopped: str | None = None
        #: the input ended at the prompt (Ctrl-D): the session was stopped; the command
        #: ends with this once the session has
        self.no_answer: NoAnswerError | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def asked(self, session_id: str, event: NeedsInput) -> None:
        """A question arrived (live, not replayed): handle it without blocking the stream."""
        if not event.replay:
            self.ask(session_id, event)

    def ask(self, session_id: str, event: NeedsInput) -> None:
        """A question this run has not seen yet (a client reads its session's stream from
        the store first, so its questions may come marked as replayed): handle it."""
        task = asyncio.create_task(self._handle(session_id, event))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, session_id: str, event: NeedsInput) -> None:
        if self.as_json:
            self.stopped = (f"The agent asks ({event.prompt}) and --json cannot ask anyone. "
                            f"Run with --approvals read_only or deny, or without --json, or "
                            f"answer from another terminal in time: "
                            f"{answer_command(session_id, event)}")
            print(json.dumps({"error": "needs_input", "session": session_id,
                              "request": event.request_id, "message": self.stopped}),
                  file=sys.stderr, flush=True)
            await self.engine.cancel_session(session_id)
            return
        for n, option in enumerate(event.options, start=1):
            self.console.print(f"    {n}. {escape(option.label)}", highlight=False)
        if not self.interactive:
            self.console.print(f"  answer with: {escape(answer_command(session_id, event))}",
                               highlight=False)
            return
        await self._prompt(session_id, event)

    async def _prompt(self, session_id: str, event: NeedsInput) -> None:
        hint = f"1-{len(event.options)}" if event.options else "your answer"
        while True:
            try:
                line = (await self.reader(f"  answer ({hint}, Enter: later)> ")).strip()
            except NoAnswerError as exc:  # Ctrl-D: nobody answers here; stop, say so once
                self.no_answer = NoAnswerError(f"{exc.message} The session was stopped.")
                await self.engine.cancel_session(session_id)
                return
            if not line:
                self.console.print(f"  left open: {escape(answer_command(session_id, event))}",
                                   highlight=False)
                return
            option_id, text = _parse(line, event)
            if option_id is None and text is None:
                self.console.print(f"  type a number from {hint}", highlight=False)
                continue
            try:
                said = await self.engine.answer_input(session_id, event.request_id, option_id,
                                                      text)
            except RelayError as exc:  # answered elsewhere meanwhile, or withdrawn
                self.console.print(f"  {escape(exc.message)}", highlight=False)
                return
            self.console.print(f"  {escape(said)}", highlight=False)
            return

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _parse(line: str, event: NeedsInput) -> tuple[str | None, str | None]:
    """A number picks an option; free text answers a question without options."""
    if event.options:
        if line.isdigit() and 1 <= int(line) <= len(event.options):
            return event.options[int(line) - 1].id, None
        match = next((o for o in event.options if line in (o.id, o.label)), None)
        return (match.id if match else None), None
    return None, line


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    answer = sub.add_parser("answer", help="answer a question a running agent asks "
                                           "(without REQUEST: list the open ones)")
    answer.add_argument("session")
    answer.add_argument("request", nargs="?")
    answer.add_argument("option", nargs="?", help="the option's id (or its number)")
    answer.add_argument("--text", help="a free-text answer to a question")
    answer.add_argument("--json", action="store_true")


async def answer(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli.commands import session_api

    async with session_api(config, args.connect, args.token) as api:
        row = await api.get_session(args.session)
        open_now = await api.open_questions(row.id)
        if args.request is None:
            if args.json:
                sys.stdout.write(json.dumps([q.model_dump(mode="json") for q in open_now]) + "\n")
            elif not open_now:
                console.print(f"Session {row.id} asks nothing ({row.state}).", highlight=False)
            for q in [] if args.json else open_now:
                console.print(f"{q.request_id}: {escape(q.prompt)}", highlight=False)
                for n, choice in enumerate(q.options, start=1):
                    console.print(f"    {n}. [{choice.id}] {choice.label}", markup=False,
                                  highlight=False)
            return 0
        option: str | None = args.option
        asked = next((q for q in open_now if q.request_id == args.request), None)
        if option is not None and asked is not None and asked.options:
            option = _parse(option, asked)[0] or option  # a number or label → its option id
        said = await api.answer_input(row.id, args.request, option, args.text)
        console.print(escape(said), highlight=False)
        return 0
