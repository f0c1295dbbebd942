"""A goal becomes a graph through a chosen provider, then the same validation as a
hand-written one; the user reviews it before anything runs.

The planner is a Relay session (read-only permission, its own worktree, so the agent
can look at the code but not change it) asked to answer with one JSON object in the
pipeline format. The answer is parsed and validated (:func:`relay.pipelines.validate.problems`);
when it is not valid, the agent is asked once more in the same conversation with the
exact problems. (Decision: structured output by instruction and validation, which works
the same on every runtime; the CLIs' own schema flags — Claude's ``--json-schema``,
Codex's ``--output-schema`` — are not in the recorded fixtures, so they are not used.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from relay.core import jsonvalue
from relay.core.capabilities import Cap
from relay.core.errors import PipelineError, PipelineInvalidError, RelayError
from relay.core.models import PermissionPolicy, SessionSpec
from relay.core.pipeline_model import Pipeline, parse_pipeline
from relay.pipelines.executor import final_answer
from relay.pipelines.validate import problems
from relay.runtimes.registry import adapter_class

if TYPE_CHECKING:
    from relay.sessions.port import SessionControl

GOAL_MARKER = "Goal: "
FORMAT = """{
  "name": "short-kebab-name",
  "nodes": [
    {"id": "plan", "provider": "<runtime>", "task": "what this step does", "dependsOn": []},
    {"id": "implement", "provider": "<runtime>", "fallback": ["<runtime>"],
     "task": "... {{plan.output}} ...", "dependsOn": ["plan"],
     "verify": ["<command that must pass, e.g. pytest -q>"]}
  ]
}"""


@dataclass
class Plan:
    """What the planner produced: a valid pipeline, or the problems of its last answer."""

    pipeline: Pipeline | None
    session_id: str
    answer: str
    problems: list[str] = field(default_factory=list)
    attempts: int = 1


def prompt(goal: str, runtimes: list[str]) -> str:
    """The planning instruction (the goal on its own first line, which the demo runtime reads)."""
    return (  # the goal first: it is what the session's task column shows
        f"{GOAL_MARKER}{' '.join(goal.split())}\n\n"
        "You are Relay's pipeline planner. Split the goal above into a small graph of steps "
        "that coding agents will run, each in its own git worktree starting from the results "
        "of the steps it depends on. Look at the repository if that helps; do not change it.\n\n"
        f"Runtimes you may use as provider or fallback: {', '.join(runtimes)}.\n"
        "Rules: ids are short (letters, digits, '-' or '_', starting with a letter) and unique; "
        "dependsOn lists only ids in the graph and never forms a cycle; a task may quote a "
        "dependency's results as {{id.output}} (its final answer) or {{id.files}} (the files it "
        "changed); verify holds shell-free commands that must exit 0 for the step to count.\n"
        "Answer with exactly one JSON object in this format and nothing else:\n" + FORMAT)


def repair_prompt(found: list[str]) -> str:
    return ("That answer is not a valid pipeline:\n" + "\n".join(f"- {p}" for p in found)
            + "\nAnswer again with the corrected JSON object only.")


def extract(answer: str) -> Pipeline:
    """The pipeline in an answer: a fenced ```json block, else the outermost {...}."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", answer, re.DOTALL)
    text = fenced.group(1) if fenced else answer[answer.find("{"): answer.rfind("}") + 1]
    if not text:
        raise PipelineInvalidError("The planner's answer holds no JSON object.",
                                   ["expected one JSON object in the pipeline format"])
    try:
        raw = jsonvalue.loads(text)
    except json.JSONDecodeError as exc:
        raise PipelineInvalidError("The planner's answer is not valid JSON.",
                                   [f"{exc.msg} at line {exc.lineno}, column {exc.colno}"]) from None
    return parse_pipeline(raw, "the planner's answer")


def _check(answer: str, runtimes: list[str]) -> tuple[Pipeline | None, list[str]]:
    try:
        pipeline = extract(answer)
    except PipelineInvalidError as exc:
        return None, exc.problems
    found = [str(p) for p in problems(pipeline, runtimes)]
    return (None if found else pipeline), found


async def plan(engine: SessionControl, goal: str, repo: Path, runtime: str, model: str | None = None,
               runtimes: list[str] | None = None) -> Plan:
    """Ask ``runtime`` for a graph that reaches ``goal``; validated, never run."""
    if not goal.strip():
        raise PipelineError("The goal is empty.", "Say what the pipeline should achieve.")
    usable = runtimes or [runtime]
    spec = SessionSpec(repo=repo, task=prompt(goal, usable), runtime=runtime, model=model,
                       permission=PermissionPolicy.READ_ONLY, purpose="plan")
    session_id = await engine.start_session(spec)
    row = await engine.wait_session(session_id)
    if row.state != "completed":
        raise PipelineError(f"The planner session {session_id} {row.state}: {row.reason}.",
                            f"See `relay-cli show {session_id}`.")
    answer = await final_answer(engine, session_id)
    pipeline, found = _check(answer, usable)
    attempts = 1
    resumable = adapter_class(runtime)(None).capabilities.supports(Cap.RESUME)
    if pipeline is None and resumable and row.agent_session_id:
        attempts = 2
        try:
            await engine.continue_session(session_id, repair_prompt(found))
        except RelayError:
            return Plan(None, session_id, answer, found, attempts=1)
        await engine.wait_session(session_id)
        answer = await final_answer(engine, session_id)
        pipeline, found = _check(answer, usable)
    return Plan(pipeline, session_id, answer, found, attempts)
