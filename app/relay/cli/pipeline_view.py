"""Rich tables and JSON for relay-cli pipeline."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.markup import escape

from relay.cli.hints import cli
from relay.cli.tables import Column, FitTable
from relay.core.pipeline_model import Pipeline
from relay.pipelines.ledger import LogEntry, RunInfo, StepInfo
from relay.pipelines.present import STATE_MARK, log_text, run_summary, step_summary, worker

_COLOUR = {"succeeded": "green", "failed": "red", "running": "cyan", "skipped": "dim",
           "cancelled": "yellow", "waiting": "dim", "cancelling": "yellow"}
#: log lines `run` prints as it goes (the rest are in `status --log`)
_SHOWN = ("claimed", "takeover", "saved", "fence_refused", "lease_lost", "lease_released",
          "retry", "failed", "skipped", "cancelled", "run_succeeded", "run_failed",
          "run_cancelled", "session")


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone().strftime("%H:%M:%S")


def log_line(entry: LogEntry, me: tuple[int, str] | None, verbose: bool = False) -> str | None:
    """One log entry for the terminal; ``me``: a pid and what to call it ("this process",
    "the host") in place of ``pid N``."""
    if not verbose and entry.kind not in _SHOWN:
        return None
    colour = {"saved": "green", "fence_refused": "bold red", "takeover": "yellow",
              "lease_lost": "red", "failed": "red", "retry": "yellow"}.get(entry.kind, "")
    text = escape(log_text(entry))
    if me is not None and worker(entry.owner) == f"pid {me[0]}":
        text = text.replace(f"pid {me[0]}", me[1])
    body = f"[{colour}]{text}[/]" if colour else text
    return f"[dim]{_clock(entry.ts_ms)}[/] {body}"


def log_json(entry: LogEntry) -> dict[str, Any]:
    return {"id": entry.id, "step": entry.node_id, "ts_ms": entry.ts_ms, "kind": entry.kind,
            "owner": entry.owner, "epoch": entry.epoch, "detail": entry.detail}


def steps_table(run: RunInfo, steps: list[StepInfo]) -> FitTable:
    table = FitTable(Column("step", figure=True), Column("state", figure=True),
                     Column("attempts", figure=True, justify="right"),
                     Column("session", figure=True), Column("cost", figure=True), "result",
                     title=f"{escape(run.name)} · run {run.id}")
    for step in steps:
        colour = _COLOUR.get(step.state, "")
        cost = "—" if step.cost_usd is None else f"${step.cost_usd:.4f}"
        table.add_row(escape(step.node_id),
                      f"[{colour}]{STATE_MARK.get(step.state, '')} {step.state}[/]",
                      str(step.attempt), step.session_id or "—", cost,
                      escape(step_summary(step))[:120])
    return table


def run_footer(run: RunInfo) -> str:
    colour = _COLOUR.get(run.state, "")
    line = f"[{colour}]Run {run.id} {run.state}[/]" + (f": {escape(run.reason)}" if run.reason else "")
    if run.result_commit:
        line += f"\nResult on branch relay/pipeline-{run.id} ({run.result_commit[:12]})."
    if not run.finished:
        line += f"\nTake it up again with `{escape(cli(f'pipeline resume {run.id}'))}`."
    return line


def runs_table(rows: list[tuple[RunInfo, list[StepInfo]]]) -> FitTable:
    table = FitTable(Column("run", figure=True), "pipeline", Column("state", figure=True),
                     "progress", Column("started", figure=True))
    for run, steps in rows:
        colour = _COLOUR.get(run.state, "")
        table.add_row(run.id, escape(run.name), f"[{colour}]{run.state}[/]",
                      escape(run_summary(run, steps).partition(": ")[2]), _clock(run.created_ms))
    return table


def run_json(run: RunInfo, steps: list[StepInfo]) -> dict[str, Any]:
    return {"id": run.id, "name": run.name, "repo": run.repo, "state": run.state,
            "reason": run.reason, "concurrency": run.concurrency, "budget_usd": run.budget_usd,
            "base_commit": run.base_commit, "result_commit": run.result_commit,
            "created_ms": run.created_ms, "ended_ms": run.ended_ms,
            "steps": [{"id": s.node_id, "state": s.state, "attempt": s.attempt, "epoch": s.epoch,
                       "saves": s.saves, "session": s.session_id, "cost_usd": s.cost_usd,
                       "error": s.error, "commit": s.outputs.commit, "files": list(s.outputs.files),
                       "output": s.outputs.output} for s in steps]}


def graph_table(pipeline: Pipeline) -> FitTable:
    table = FitTable(Column("step", figure=True), "provider", "after", "task", "verify",
                     title=escape(pipeline.name))
    for node in pipeline.nodes:
        chain = " → ".join(node.chain)
        table.add_row(escape(node.id), escape(chain), escape(", ".join(node.depends_on) or "—"),
                      escape(node.task if len(node.task) < 200 else node.task[:197] + "…"),
                      escape("; ".join(node.verify) or "—"))
    return table
