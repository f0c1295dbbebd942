"""relay-cli pipeline: validate, list, run, trust, status, resume, cancel, plan, import,
export, crash-demo.

``validate`` and ``list`` show every command a pipeline runs (its ``verify`` lines). ``run``
asks before the first run of a file whose commands were not accepted yet (remembered per
SHA-256 of the file, in the data folder): on a terminal it lists them and asks; without
one it refuses unless ``--trust`` is given (nobody could answer: the answer is no).
``trust`` accepts a file's commands without running it (for MCP clients, scripts).

``run``, ``resume``, ``status``, ``cancel``, ``trust`` and ``plan`` go through the data
folder's host (:mod:`relay.cli.hosted`): the host drives a run and ``run`` prints each step's
progress from the run's lease log (so it shows the work of other engines on the same run
too). Ctrl-C leaves the run to a live host; a run this process hosted is left unfinished —
``pipeline resume RUN`` takes it up again. ``validate``, ``list``, ``import`` and ``export``
read and write the pipeline files themselves; ``crash-demo`` runs its own two engines on a
throwaway database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from relay.cli import pipeline_view as view
from relay.cli.argtypes import delay, int_between, seconds, usd_amount
from relay.cli.hints import cli
from relay.cli.hosted import host_api
from relay.cli.prompt import ask
from relay.cli.tables import Column, FitTable
from relay.core.config import Config
from relay.core.errors import (
    HostGoneError,
    PipelineError,
    PipelineInvalidError,
    PipelineUntrustedError,
)
from relay.pipelines import files, trust
from relay.pipelines.ledger import RunInfo
from relay.pipelines.validate import problems
from relay.runtimes.registry import adapter_class, available_runtimes

if TYPE_CHECKING:
    from relay.api.client import RelayClient
    from relay.api.client_features import PipelinesClient


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pipe = sub.add_parser("pipeline", help="multi-agent pipelines: DAGs of Relay sessions")
    act = pipe.add_subparsers(dest="pipeline_command", required=True, metavar="ACTION")
    validate = act.add_parser("validate", help="check a pipeline file (every problem, by node)")
    validate.add_argument("file", type=Path)
    listing = act.add_parser("list", help="the pipelines in the repository's .relay/pipelines.json")
    listing.add_argument("--repo", type=Path, default=Path.cwd())
    listing.add_argument("--json", action="store_true")
    run = act.add_parser("run", help="run a pipeline (by name, or a JSON file) to the end")
    run.add_argument("pipeline", metavar="NAME|FILE")
    run.add_argument("--repo", type=Path, default=Path.cwd())
    run.add_argument("--concurrency", type=int_between(1, 64), metavar="N", help="steps at once (1–64)")
    run.add_argument("--budget", type=usd_amount, metavar="USD", help="stop starting steps at this cost")
    run.add_argument("--json", action="store_true", help="print the lease log as JSON lines")
    run.add_argument("--trust", action="store_true",
                     help="accept the file's commands without asking (check them first: "
                          "`pipeline validate FILE` lists them)")
    accept = act.add_parser("trust", help="accept the commands of a pipeline file (each version "
                                          "once) so runs, also over MCP, do not ask")
    accept.add_argument("pipeline", metavar="NAME|FILE")
    accept.add_argument("--repo", type=Path, default=Path.cwd())
    status = act.add_parser("status", help="recent runs, or one run's steps")
    status.add_argument("run", nargs="?", help="a run id (a unique prefix is enough)")
    status.add_argument("--log", action="store_true", help="also the run's lease log")
    status.add_argument("--json", action="store_true")
    resume = act.add_parser("resume", help="take up an unfinished run (after a crash or Ctrl-C)")
    resume.add_argument("run")
    resume.add_argument("--json", action="store_true")
    cancel = act.add_parser("cancel", help="cancel a run: running steps stop, the rest never start")
    cancel.add_argument("run")
    plan = act.add_parser("plan", help="turn a goal into a pipeline through an agent (reviewed, "
                                       "not run)")
    plan.add_argument("goal")
    plan.add_argument("--provider", default="demo", choices=available_runtimes(),
                      help="the runtime that plans (default: the scripted demo)")
    plan.add_argument("--model")
    plan.add_argument("--repo", type=Path, default=Path.cwd())
    plan.add_argument("--use", action="append", metavar="RUNTIME",
                      help="runtimes the graph may use (default: the planner's own)")
    plan.add_argument("--save", action="store_true", help="store it in .relay/pipelines.json")
    plan.add_argument("--out", type=Path, help="write it to this JSON file")
    plan.add_argument("--json", action="store_true")
    imp = act.add_parser("import", help="add the pipelines of a JSON file to the repository's")
    imp.add_argument("file", type=Path)
    imp.add_argument("--repo", type=Path, default=Path.cwd())
    exp = act.add_parser("export", help="write one of the repository's pipelines to a file")
    exp.add_argument("name")
    exp.add_argument("file", type=Path)
    exp.add_argument("--repo", type=Path, default=Path.cwd())
    demo = act.add_parser("crash-demo", help="two engines, one database: the first is killed "
                                             "mid-step and the second takes over")
    demo.add_argument("--lease", type=seconds, default=3.0, help="the lease in seconds (default 3)")
    demo.add_argument("--step-delay", type=delay, default=0.25,
                      help="seconds between the demo agent's events (default 0.25)")


async def dispatch(config: Config, args: argparse.Namespace, console: Console) -> int:
    command = args.pipeline_command
    if command == "validate":
        return _validate(args.file, console)
    if command == "list":
        return _list(args.repo, console, args.json)
    if command == "import":
        return _import(args.file, args.repo, console)
    if command == "export":
        pipeline = files.resolve(args.name, args.repo.resolve())
        files.export(pipeline, args.file)
        console.print(f"Wrote {pipeline.name} to {args.file}.")
        return 0
    if command == "crash-demo":
        from relay.pipelines.crash_demo import run_demo

        return await run_demo(console.print, lease_s=args.lease, step_delay=args.step_delay)
    if command in ("run", "trust"):
        pipeline, source = trust.load(args.pipeline, args.repo.resolve())
    if command == "run":
        async def start(client: RelayClient) -> str:
            await _ask_trust(client.pipelines, source, args, console)
            return await client.pipelines.start(pipeline, args.repo, args.concurrency,
                                                args.budget)
        return await _run_and_follow(config, args, console, start)
    if command == "resume":
        return await _run_and_follow(config, args, console,
                                     lambda client: client.pipelines.resume(args.run))
    async with host_api(config, args) as attached:
        client = attached.client
        pipes = client.pipelines
        if command == "trust":
            return await _trust(pipes, source, console)
        if command == "status":
            return await _status(pipes, args.run, args.log, args.json, console)
        if command == "cancel":
            run = await pipes.cancel(args.run)
            final = await pipes.wait(run.id)
            console.print(f"Run {final.id}: {final.state}.")
            return 0
        if command == "plan":
            return await _plan(pipes, args, console)
        raise PipelineError(f"Unknown action {command!r}.")


def _commands_lines(pipeline_commands: list[trust.Command]) -> list[str]:
    """``  runs: node verify[0]: line`` for each command (escaped for rich)."""
    return [f"  runs: {escape(c.node)} {c.field}: [bold]{escape(c.line)}[/]"
            for c in pipeline_commands]


def _validate(path: Path, console: Console) -> int:
    found = files.read_file(path)
    bad = 0
    for pipeline in found:
        issues = problems(pipeline)
        if issues:
            bad += 1
            console.print(f"[red]✗[/] {escape(pipeline.name)}: {len(issues)} problem(s)")
            for issue in issues:
                console.print(f"  - {escape(str(issue))}")
        else:
            console.print(f"[green]✓[/] {escape(pipeline.name)}: {len(pipeline.nodes)} steps, valid")
        for line in _commands_lines(trust.commands([pipeline])):
            console.print(line, highlight=False)
    ran = trust.commands(found)
    if ran:
        console.print(f"{len(ran)} command(s) run in the steps' worktrees, without a shell; "
                      f"`{escape(cli('pipeline run'))}` asks before the first run of this "
                      "version of the file.", highlight=False)
    if bad:
        raise PipelineInvalidError(f"{bad} of {len(found)} pipeline(s) in {path} are not valid.",
                                   [], "Fix the problems listed above.")
    return 0


def _list(repo: Path, console: Console, as_json: bool) -> int:
    found = files.list_pipelines(repo.resolve())
    if as_json:
        print(json.dumps([{"name": p.name, "nodes": len(p.nodes),
                           "problems": [str(x) for x in problems(p)],
                           "commands": [{"node": c.node, "field": c.field, "line": c.line,
                                         "argv": c.argv} for c in trust.commands([p])]}
                          for p in found]))
        return 0
    if not found:
        console.print(f"No pipelines in {files.pipelines_path(repo.resolve())}. Draw one in the "
                      f"window's designer, `{escape(cli('pipeline import FILE'))}`, or "
                      "`pipeline plan`.")
        return 0
    table = FitTable("name", Column("steps", figure=True, justify="right"),
                     Column("valid", figure=True), "commands it runs", "description")
    for p in found:
        issues = problems(p)
        ran = "\n".join(f"{c.node}: {c.line}" for c in trust.commands([p]))
        table.add_row(escape(p.name), str(len(p.nodes)),
                      "yes" if not issues else f"[red]{len(issues)} problem(s)[/]",
                      escape(ran) or "—", escape(p.description))
    console.print(table)
    return 0


async def _ask_trust(pipes: PipelinesClient, source: trust.Source, args: argparse.Namespace,
                     console: Console) -> None:
    """Before a run: accept the file's commands — ``--trust``, or the user's yes at the
    terminal; with no terminal to ask at, refuse (nobody could answer)."""
    if not await pipes.needs_trust(source):
        return
    name = args.pipeline
    again = cli(f"pipeline run {name} --trust")
    if args.trust:
        await pipes.trust(source)
        return
    if not (sys.stdin.isatty() and not args.json):
        await pipes.require_trust(source, f"Check them, then run `{again}` (or accept "
                                          f"them once: `{cli(f'pipeline trust {name}')}`).")
    found = source.commands
    console.print(f"[bold]{escape(str(source.path))}[/] runs {len(found)} command(s) you have "
                  "not accepted yet (the file is new or changed since):", highlight=False)
    for command in found:
        console.print(f"  {escape(command.pipeline)} · {escape(command.node)} · {command.field}: "
                      f"[bold]{escape(command.line)}[/]", highlight=False)
    answer = ask("Run them? Relay remembers the answer for this version of the file [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise PipelineUntrustedError("Not run: the pipeline's commands were not accepted.", [],
                                     f"Run it again and answer y, or `{again}`.")
    await pipes.trust(source)


async def _trust(pipes: PipelinesClient, source: trust.Source, console: Console) -> int:
    found = source.commands
    if not found:
        console.print(f"{escape(str(source.path))} runs no commands: nothing to accept.",
                      highlight=False)
        return 0
    for command in found:
        console.print(f"  {escape(command.pipeline)} · {escape(command.node)} · {command.field}: "
                      f"[bold]{escape(command.line)}[/]", highlight=False)
    await pipes.trust(source)
    console.print(f"Accepted the {len(found)} command(s) of {escape(str(source.path))} (sha256 "
                  f"{source.digest[:12]}…): its runs will not ask until the file changes.",
                  highlight=False)
    return 0


def _import(path: Path, repo: Path, console: Console) -> int:
    for pipeline in files.read_file(path):
        target = files.save(repo.resolve(), pipeline)
        console.print(f"Imported {escape(pipeline.name)} into {target}.")
    return 0


@dataclass
class _Followed:
    """How far ``_follow`` got: the run, the last log entry printed, whether the header was."""

    run_id: str | None = None
    after: int = 0
    headed: bool = False


async def _run_and_follow(config: Config, args: argparse.Namespace, console: Console,
                          start: Callable[[RelayClient], Awaitable[str]]) -> int:
    """Start (or resume) a run in the host and follow its log to the end.

    The run is the host's, held step by step by leases: when the host is killed under it
    and nobody hosts any more, this process becomes the host — recovering, it takes the
    run over once the dead host's lease on the step under way has expired — and follows on
    from the last entry it printed."""
    followed = _Followed()
    recover = False
    while True:
        try:
            async with host_api(config, args, recover=recover) as attached:
                if followed.run_id is None:
                    followed.run_id = await start(attached.client)
                return await _follow(attached.client, followed, console, args.json)
        except HostGoneError:
            if getattr(args, "connect", None) or recover:
                raise
            recover = True
            if not args.json:
                console.print("The host stopped: this process hosts now and takes the run "
                              "over when the stopped host's lease expires.")


async def _follow(client: RelayClient, followed: _Followed, console: Console,
                  as_json: bool) -> int:
    pipes = client.pipelines
    assert followed.run_id is not None
    run, _steps = await pipes.status(followed.run_id)
    if not as_json and not followed.headed:
        followed.headed = True
        console.print(f"[bold]Relay[/] pipeline {escape(run.name)} · run {run.id} · "
                      f"{len(run.pipeline.nodes)} steps · up to {run.concurrency} at once")
        simulated = [n.id for n in run.pipeline.nodes
                     if any(adapter_class(e.partition(":")[0]).simulated for e in n.chain)]
        if simulated:
            console.print(f"[reverse] SIMULATION [/] steps {', '.join(simulated)} run on the "
                          "scripted demo runtime: their agents' work is simulated.")
    host = (await client.status()).pid
    me = (host, "this process" if host == os.getpid() else "the host")
    done = asyncio.ensure_future(pipes.wait(run.id))
    try:
        while True:
            finished = done.done()  # then this read has the run's last entries
            for entry in await pipes.log(run.id, followed.after):
                followed.after = entry.id
                if as_json:
                    print(json.dumps(view.log_json(entry)), flush=True)
                else:
                    line = view.log_line(entry, me)
                    if line:
                        console.print(line)
            if finished:
                break
            await asyncio.wait([done], timeout=0.2)
    finally:
        done.cancel()
    final: RunInfo = done.result()
    if not as_json:
        _, steps = await pipes.status(run.id)
        console.print(view.steps_table(final, steps))
        console.print(view.run_footer(final))
    return 0 if final.state == "succeeded" else 1


async def _status(pipes: PipelinesClient, run_id: str | None, with_log: bool, as_json: bool,
                  console: Console) -> int:
    if run_id is None:
        rows = [(r, (await pipes.status(r.id))[1]) for r in await pipes.runs()]
        if as_json:
            print(json.dumps([view.run_json(r, steps) for r, steps in rows]))
        elif not rows:
            console.print("No pipeline runs yet. Start one with "
                          f"`{cli('pipeline run NAME')}`.", markup=False)
        else:
            console.print(view.runs_table(rows))
        return 0
    run, steps = await pipes.status(run_id)
    log = await pipes.log(run.id) if with_log or as_json else []
    if as_json:
        out: dict[str, Any] = view.run_json(run, steps)
        out["log"] = [view.log_json(e) for e in log]
        print(json.dumps(out))
        return 0
    console.print(view.steps_table(run, steps))
    console.print(view.run_footer(run))
    for entry in log:
        console.print(view.log_line(entry, None, verbose=True) or "")
    return 0


async def _plan(pipes: PipelinesClient, args: argparse.Namespace, console: Console) -> int:
    repo = args.repo.resolve()
    started = time.monotonic()
    result = await pipes.plan(args.goal, repo, args.provider, args.model,
                              runtimes=args.use or [args.provider])
    if result.pipeline is None:
        raise PipelineInvalidError(
            f"The planner's answer is not a valid pipeline (session {result.session_id}, "
            f"{result.attempts} attempt(s)).", result.problems,
            f"See the answer with `relay-cli show {result.session_id}`, or try another provider.")
    pipeline = result.pipeline
    if args.json:
        print(json.dumps(pipeline.to_json_obj()))
    else:
        sim = " (the scripted demo: a SIMULATION)" if adapter_class(args.provider).simulated else ""
        console.print(f"[bold]Plan[/] from {args.provider}{sim} in "
                      f"{time.monotonic() - started:.1f} s (session {result.session_id}) — "
                      "review it before running:")
        console.print(view.graph_table(pipeline))
    if args.out:
        files.export(pipeline, args.out)
        console.print(f"Wrote {args.out}.", highlight=False)
    if args.save:
        target = files.save(repo, pipeline)
        console.print(f"Saved as {escape(pipeline.name)} in {target}. Run it with "
                      f"`{escape(cli(f'pipeline run {pipeline.name}'))}`.", highlight=False)
    elif not args.json and not args.out:
        console.print(f"Not saved: add --save (or --out FILE), then `{cli('pipeline run')}`.",
                      highlight=False, markup=False)
    sys.stdout.flush()
    return 0
