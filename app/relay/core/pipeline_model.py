"""The pipeline format: seed 000's JSON, with a model, account, concurrency group,
timeout and retries per node.

    {"name": "feature",
     "concurrency": 2,
     "nodes": [{"id": "build", "provider": "claude", "task": "implement the endpoint",
                "dependsOn": [], "fallback": ["codex"], "verify": ["go test ./..."]},
               {"id": "review", "provider": "codex", "dependsOn": ["build"],
                "task": "Review {{build.files}}: {{build.output}}"}]}

Field names are the JSON's (camelCase); Python uses snake_case. Unknown fields are
rejected so a typo never silently drops a setting. A verify entry is one command line
split like a POSIX shell would split it (quotes respected) but run **without** a shell:
pipes, ``&&`` and globbing are not interpreted — write ``["sh", "-c", "..."]`` style
commands as ``sh -c '...'`` when you need them.

A pipeline file usually comes with a repository, written by anyone: the ``MAX_*`` limits
bound what reading and validating one may cost (its size, its nesting, its steps, the
length of a task's template). Each refusal names the limit.
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from relay.core.errors import PipelineInvalidError
from relay.core.models import Delay, PermissionPolicy, Seconds, Usd

ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"

#: a pipeline file larger than this is not read
MAX_FILE_BYTES = 4 * 1024 * 1024
#: JSON arrays and objects inside each other (a pipeline file needs six)
MAX_NESTING = 32
#: steps in one pipeline
MAX_STEPS = 5_000
#: characters in one step's task (its template)
MAX_TASK_CHARS = 128 * 1024


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                              frozen=True)


class Position(_Camel):
    """Where the designer draws a node (not used by the scheduler)."""

    x: float = Field(default=0.0, allow_inf_nan=False)
    y: float = Field(default=0.0, allow_inf_nan=False)


class Node(_Camel):
    """One step: a full Relay session on ``provider`` (then ``fallback``) running ``task``."""

    id: str = Field(pattern=ID_PATTERN)
    provider: str = Field(min_length=1)
    task: str = Field(min_length=1, max_length=MAX_TASK_CHARS)
    depends_on: list[str] = Field(default_factory=list)
    #: ``runtime[:account]`` entries tried after ``provider`` on a limit or a failure
    fallback: list[str] = Field(default_factory=list)
    #: acceptance commands, each one command line (split, never given to a shell)
    verify: list[str] = Field(default_factory=list)
    model: str | None = None
    #: the wallet account label for ``provider`` (``claude`` + ``work`` → ``claude:work``)
    account: str | None = None
    #: steps of one group share the group's concurrency limit (``Pipeline.groups``)
    group: str | None = None
    #: seconds one attempt may take before it is stopped and counted as failed
    timeout: Seconds | None = None
    #: attempts after the first when a step fails (backoff doubles from the pipeline's)
    retries: int = Field(default=0, ge=0, le=10)
    permission: PermissionPolicy = PermissionPolicy.WORKSPACE
    position: Position | None = None

    @property
    def entry(self) -> str:
        """The first chain entry: ``provider`` with its account."""
        if self.account and ":" not in self.provider:
            return f"{self.provider}:{self.account}"
        return self.provider

    @property
    def chain(self) -> list[str]:
        return [self.entry, *self.fallback]

    def verify_argv(self) -> list[list[str]]:
        """The acceptance commands as argument arrays (validated before any run)."""
        return [shlex.split(line) for line in self.verify]


class Pipeline(_Camel):
    """A named graph of nodes."""

    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    nodes: list[Node] = Field(default_factory=list, max_length=MAX_STEPS)
    #: steps running at once (the CLI's --concurrency overrides it)
    concurrency: int = Field(default=4, ge=1, le=64)
    #: group name → steps of that group running at once
    groups: dict[str, int] = Field(default_factory=dict)
    #: the run stops starting steps once its sessions cost this much (USD)
    budget_usd: Usd | None = None
    #: first retry waits this long; each further retry twice as long
    backoff: Delay = 5.0

    @field_validator("groups")
    @classmethod
    def _positive_groups(cls, value: dict[str, int]) -> dict[str, int]:
        for name, limit in value.items():
            if limit < 1:
                raise ValueError(f"group {name!r} must allow at least 1 step at once")
        return value

    def node(self, node_id: str) -> Node:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def to_json_obj(self) -> dict[str, Any]:
        """The pipeline as the JSON the file holds (defaults left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def _where(raw: object, loc: tuple[int | str, ...]) -> str:
    """``('nodes', 1, 'dependsOn', 0)`` → ``node 'test' (nodes[1]) field dependsOn[0]``."""
    if len(loc) >= 2 and loc[0] == "nodes" and isinstance(loc[1], int):
        node_id = None
        if isinstance(raw, dict):
            nodes = raw.get("nodes")
            if isinstance(nodes, list) and loc[1] < len(nodes) and isinstance(nodes[loc[1]], dict):
                node_id = nodes[loc[1]].get("id")
        who = f"node {node_id!r} (nodes[{loc[1]}])" if isinstance(node_id, str) else f"nodes[{loc[1]}]"
        rest = loc[2:]
        if not rest:
            return who
        field = str(rest[0]) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest[1:])
        return f"{who} field {field}"
    return "pipeline field " + ".".join(str(p) for p in loc) if loc else "pipeline"


def parse_pipeline(raw: object, source: str = "pipeline") -> Pipeline:
    """A :class:`Pipeline` from parsed JSON; every structural problem names node and field."""
    if not isinstance(raw, dict):
        raise PipelineInvalidError(f"{source} is not a pipeline.",
                                   ["expected a JSON object with \"name\" and \"nodes\""])
    nodes = raw.get("nodes")
    if isinstance(nodes, list) and len(nodes) > MAX_STEPS:
        raise PipelineInvalidError(f"{source} is not a valid pipeline.",
                                   [f"pipeline field nodes: {len(nodes):,} steps; a pipeline "
                                    f"has at most {MAX_STEPS:,}"],
                                   "Split it into smaller pipelines.")
    try:
        return Pipeline.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown field (check its spelling)"
            elif err["type"] == "string_too_long" and err["loc"][-1:] == ("task",):
                msg = (f"{len(str(err['input'])):,} characters; a task has at most "
                       f"{MAX_TASK_CHARS:,} characters")
            elif err["type"] == "value_error":  # a field's own rule (relay.core.numbers)
                msg = str(err["ctx"]["error"]) if "ctx" in err else msg.removeprefix("Value error, ")
            elif err["type"] == "string_pattern_mismatch":
                msg = ("an id starts with a letter and has only letters, digits, '-' and '_' "
                       "(at most 64)")
            problems.append(f"{_where(raw, tuple(err['loc']))}: {msg}")
        raise PipelineInvalidError(f"{source} is not a valid pipeline.", problems) from None
