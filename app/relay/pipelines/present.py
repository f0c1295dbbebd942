"""Plain-text wording of runs, steps and lease-log lines (shared by the CLI and the window)."""

from __future__ import annotations

from relay.pipelines.ledger import LogEntry, RunInfo, StepInfo

STATE_MARK = {"waiting": "·", "running": "▶", "succeeded": "✓", "failed": "✗",
              "skipped": "–", "cancelled": "■"}


def worker(owner: str | None) -> str:
    """``host:pid:start:nonce`` → ``pid 1234``."""
    if not owner:
        return "—"
    parts = owner.split(":")
    return f"pid {parts[1]}" if len(parts) >= 2 and parts[1].isdigit() else owner


def log_text(entry: LogEntry) -> str:
    """One lease-log line in words."""
    who = worker(entry.owner)
    step = entry.node_id or "run"
    kind = entry.kind
    detail = entry.detail or ""
    match kind:
        case "claimed":
            return f"{step}: started by {who} ({detail})"
        case "takeover":
            return f"{step}: taken over by {who} — {detail}"
        case "session":
            return f"{step}: runs in session {detail}"
        case "saved":
            return f"{step}: result saved by {who} (epoch {entry.epoch}, {detail})"
        case "fence_refused":
            return f"{step}: write by {who} with epoch {entry.epoch} REFUSED — {detail}"
        case "lease_lost":
            return f"{step}: {who} lost its lease — {detail}"
        case "lease_released":
            return f"{step}: lease of {who} released — {detail}"
        case "retry":
            return f"{step}: failed, will retry — {detail}"
        case "failed" | "skipped" | "cancelled":
            return f"{step}: {kind} — {detail}"
        case "created":
            return f"run created ({detail})"
        case _ if kind.startswith("run_"):
            return f"run {kind[4:]}" + (f" — {detail}" if detail else "")
    return f"{step}: {kind} {detail}".strip()


def step_summary(step: StepInfo) -> str:
    """What a step has to show for itself: files, error, or where it is."""
    if step.state == "succeeded":
        files = step.outputs.files
        return (f"{len(files)} file(s): {', '.join(files[:4])}{'…' if len(files) > 4 else ''}"
                if files else "no files changed")
    if step.error:
        return step.error
    if step.state == "running":
        return f"attempt {step.attempt} by {worker(step.owner)}"
    return ""


def run_summary(run: RunInfo, steps: list[StepInfo]) -> str:
    done = sum(1 for s in steps if s.state == "succeeded")
    cost = sum(s.cost_usd or 0 for s in steps)
    priced = any(s.cost_usd is not None for s in steps)
    spend = f", ${cost:.4f}" if priced else ""
    return f"{run.state}: {done}/{len(steps)} steps done{spend}" + (
        f" — {run.reason}" if run.reason and run.state != "running" else "")
