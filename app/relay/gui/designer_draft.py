"""The designer's draft: a pipeline being drawn, and every edit the designer makes to it.

No Qt here. A :class:`Draft` holds one :class:`~relay.core.pipeline_model.Pipeline`. Its
methods *plan* edits: each returns an :class:`Edit` — the pipeline before and after, a
label for the undo menu, a merge key — without applying it, ``None`` when nothing would
change, or raises :class:`EditRefused` with the reason. The Qt layer pushes each edit on
a QUndoStack whose command calls :meth:`Draft.set` with ``after`` (redo) or ``before``
(undo), so every edit is undoable the same way.

Nodes are built with ``model_copy``/``model_construct`` (no validation), so a half-drawn
node — an empty task — can exist on the canvas; :meth:`Draft.problems` reports it with
everything :func:`relay.pipelines.validate.problems` finds, each naming node and field.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import ValidationError

from relay.core.pipeline_model import ID_PATTERN, Node, Pipeline, Position
from relay.pipelines.graph import Graph
from relay.pipelines.validate import Problem, problems

#: a node's size on the canvas, and the auto-layout's grid (scene units)
NODE_WIDTH = 180.0
NODE_HEIGHT = 88.0
COLUMN_STEP = NODE_WIDTH + 70.0
ROW_STEP = NODE_HEIGHT + 40.0

#: the node fields the side panel edits (the id is renamed, see :meth:`Draft.rename`)
EDITABLE = frozenset({"provider", "task", "fallback", "verify", "model", "account", "group",
                      "timeout", "retries", "permission"})
PIPELINE_EDITABLE = frozenset({"name", "description", "concurrency", "budget_usd"})

_ID = re.compile(ID_PATTERN)
_STRUCTURE = {
    "string_too_short": "is empty",
    "string_pattern_mismatch": "an id starts with a letter and has only letters, digits, '-' "
                               "and '_' (at most 64)",
    "extra_forbidden": "unknown field",
}


class EditRefused(Exception):
    """An edit that would break the graph; :attr:`reason` says why, in the user's words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Edit:
    """One undoable change: the whole pipeline before and after (both immutable)."""

    before: Pipeline
    after: Pipeline
    label: str
    #: consecutive edits with the same key become one undo step (a drag, typing a task)
    merge: str | None = None
    #: the nodes selected once the edit is done, and once it is undone
    select_after: tuple[str, ...] | None = None
    select_before: tuple[str, ...] | None = None
    #: only positions change: the problems stay as they are
    moves_only: bool = False


def new_pipeline(name: str) -> Pipeline:
    return Pipeline(name=name)


class Draft:
    """The pipeline on the canvas and the edits that can be made to it."""

    def __init__(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        self._problems = draft_problems(pipeline)

    @property
    def pipeline(self) -> Pipeline:
        return self._pipeline

    def set(self, pipeline: Pipeline, *, moves_only: bool = False,
            problems: list[Problem] | None = None) -> None:
        """Make ``pipeline`` the draft (an edit's ``after`` or ``before``); ``problems``:
        its :func:`draft_problems`, when they were found already (off the GUI thread)."""
        self._pipeline = pipeline
        if problems is not None:
            self._problems = list(problems)
        elif not moves_only:
            self._problems = draft_problems(pipeline)

    def problems(self) -> list[Problem]:
        """What keeps the draft from being saved or run (empty: it may)."""
        return list(self._problems)

    def ids(self) -> list[str]:
        return [n.id for n in self._pipeline.nodes]

    def node(self, node_id: str) -> Node:
        return self._pipeline.node(node_id)

    def has(self, node_id: str) -> bool:
        return any(n.id == node_id for n in self._pipeline.nodes)

    # -- nodes ----------------------------------------------------------------------

    def unique_id(self, base: str) -> str:
        """``base`` made a valid id that no node has yet (``claude``, ``claude-2``, …)."""
        stem = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-")[:56] or "step"
        if not stem[0].isalpha():
            stem = f"n{stem}"
        taken = set(self.ids())
        if stem not in taken:
            return stem
        n = 2
        while f"{stem}-{n}" in taken:
            n += 1
        return f"{stem}-{n}"

    def add_node(self, runtime: str, x: float, y: float) -> Edit:
        """A new node on ``runtime`` at (x, y); its task is left for the user to write."""
        node_id = self.unique_id(runtime)
        node = Node.model_construct(id=node_id, provider=runtime, task="",
                                    position=_pos(x, y))
        after = self._with_nodes([*self._pipeline.nodes, node])
        return Edit(self._pipeline, after, f"add {node_id}", select_after=(node_id,),
                    select_before=())

    def free_spot(self) -> tuple[float, float]:
        """Where a node added without a drop point goes: right of the rightmost node."""
        placed = [n.position for n in self._pipeline.nodes if n.position is not None]
        if not placed:
            return 0.0, 0.0
        right = max(placed, key=lambda p: (p.x, -p.y))
        return right.x + COLUMN_STEP, right.y

    def remove(self, node_ids: Iterable[str], edges: Iterable[tuple[str, str]] = ()) -> Edit | None:
        """Delete nodes (and every dependency on them) and ``(source, target)`` edges."""
        gone = set(node_ids)
        cut = {(s, t) for s, t in edges if s not in gone and t not in gone}
        nodes = []
        for node in self._pipeline.nodes:
            if node.id in gone:
                continue
            deps = [d for d in node.depends_on if d not in gone and (d, node.id) not in cut]
            nodes.append(node if deps == node.depends_on else
                         node.model_copy(update={"depends_on": deps}))
        after = self._with_nodes(nodes)
        if after == self._pipeline:
            return None
        what = sorted(gone & set(self.ids()))
        label = (f"delete {', '.join(what)}" if what else
                 "delete " + ", ".join(f"{s} → {t}" for s, t in sorted(cut)))
        return Edit(self._pipeline, after, label, select_after=(),
                    select_before=tuple(what))

    def move(self, positions: Mapping[str, tuple[float, float]],
             gesture: str | None = None) -> Edit | None:
        """Nodes at new positions; edits of one ``gesture`` (a drag) merge into one step."""
        nodes = [n.model_copy(update={"position": _pos(*positions[n.id])})
                 if n.id in positions else n for n in self._pipeline.nodes]
        after = self._with_nodes(nodes)
        if after == self._pipeline:
            return None
        moved = sorted(positions)
        label = f"move {moved[0]}" if len(moved) == 1 else f"move {len(moved)} nodes"
        return Edit(self._pipeline, after, label, merge=f"move:{gesture}" if gesture else None,
                    moves_only=True)

    def edit(self, node_id: str, field: str, value: Any) -> Edit | None:
        """One field of one node (``task``, ``fallback``, ``retries``…) set to ``value``."""
        if field not in EDITABLE:
            raise ValueError(f"not an editable node field: {field}")
        node = self.node(node_id)
        if getattr(node, field) == value:
            return None
        nodes = [n.model_copy(update={field: value}) if n.id == node_id else n
                 for n in self._pipeline.nodes]
        return Edit(self._pipeline, self._with_nodes(nodes), f"edit {node_id} {field}",
                    merge=f"edit:{node_id}:{field}")

    def edit_pipeline(self, field: str, value: Any) -> Edit | None:
        """The pipeline's own ``name``, ``description``, ``concurrency`` or ``budget_usd``."""
        if field not in PIPELINE_EDITABLE:
            raise ValueError(f"not an editable pipeline field: {field}")
        if field == "name" and not str(value).strip():
            raise EditRefused("A pipeline needs a name.")
        if getattr(self._pipeline, field) == value:
            return None
        after = self._pipeline.model_copy(update={field: value})
        return Edit(self._pipeline, after, f"edit pipeline {field}", merge=f"pipeline:{field}")

    def rename(self, old: str, new: str) -> Edit | None:
        """Node ``old`` called ``new``: its dependents and ``{{old.field}}`` references follow."""
        if new == old:
            return None
        if not _ID.match(new):
            raise EditRefused(f"{new!r} cannot be an id: it starts with a letter and has only "
                              "letters, digits, '-' and '_' (at most 64).")
        if self.has(new):
            raise EditRefused(f"There is already a node called {new!r}.")
        ref = re.compile(r"\{\{(\s*)" + re.escape(old) + r"\.([A-Za-z]+\s*)\}\}")
        nodes = []
        for node in self._pipeline.nodes:
            update: dict[str, Any] = {}
            if node.id == old:
                update["id"] = new
            if old in node.depends_on:
                update["depends_on"] = [new if d == old else d for d in node.depends_on]
            task = ref.sub(lambda m: "{{" + m.group(1) + new + "." + m.group(2) + "}}", node.task)
            if task != node.task:
                update["task"] = task
            nodes.append(node.model_copy(update=update) if update else node)
        return Edit(self._pipeline, self._with_nodes(nodes), f"rename {old} to {new}",
                    select_after=(new,), select_before=(old,))

    # -- dependencies ---------------------------------------------------------------

    def connect(self, source: str, target: str) -> Edit:
        """``target`` depends on ``source`` (an arrow from source's output to target's input).

        Raises:
            EditRefused: the same node, an unknown node, an arrow already there, or a
                dependency that would close a cycle (the reason names the path).
        """
        if source == target:
            raise EditRefused(f"{source!r} cannot depend on itself.")
        for node_id in (source, target):
            if not self.has(node_id):
                raise EditRefused(f"There is no node called {node_id!r}.")
        node = self.node(target)
        if source in node.depends_on:
            raise EditRefused(f"{target!r} already depends on {source!r}.")
        back = self.path(source, target)
        if back is not None:
            raise EditRefused(f"{target!r} cannot depend on {source!r}: {source!r} already "
                              f"depends on {target!r} ({' → '.join(back)}), so each would wait "
                              "for the other forever.")
        nodes = [n.model_copy(update={"depends_on": [*n.depends_on, source]})
                 if n.id == target else n for n in self._pipeline.nodes]
        return Edit(self._pipeline, self._with_nodes(nodes), f"connect {source} → {target}")

    def disconnect(self, source: str, target: str) -> Edit | None:
        return self.remove((), [(source, target)])

    def path(self, start: str, goal: str) -> list[str] | None:
        """A dependency path ``start`` → … → ``goal`` (each depends on the next), if any."""
        deps = {n.id: n.depends_on for n in self._pipeline.nodes}
        came_from: dict[str, str | None] = {start: None}  # breadth first, each node once
        todo = deque([start])
        while todo:
            here = todo.popleft()
            for dep in deps.get(here, ()):
                if dep == goal:
                    trail = [dep]
                    at: str | None = here
                    while at is not None:
                        trail.append(at)
                        at = came_from[at]
                    return trail[::-1]
                if dep not in came_from and dep in deps:
                    came_from[dep] = here
                    todo.append(dep)
        return None

    def edges(self) -> list[tuple[str, str]]:
        """Every ``(source, target)`` arrow between known nodes (target depends on source)."""
        known = set(self.ids())
        return [(d, n.id) for n in self._pipeline.nodes
                for d in dict.fromkeys(n.depends_on) if d in known and d != n.id]

    # -- layout ---------------------------------------------------------------------

    def layout(self) -> Edit | None:
        """Columns by depth (:meth:`Graph.layers`), each centred on the tallest one."""
        return self.move(layout_positions(self._pipeline))

    def _with_nodes(self, nodes: list[Node]) -> Pipeline:
        return self._pipeline.model_copy(update={"nodes": nodes})


def layout_positions(pipeline: Pipeline) -> dict[str, tuple[float, float]]:
    """Where auto-layout puts each node; nodes on a cycle go in a last column."""
    known = {n.id for n in pipeline.nodes}
    unique = list({n.id: n for n in pipeline.nodes}.values())
    clean = pipeline.model_copy(update={"nodes": [
        n.model_copy(update={"depends_on": [d for d in dict.fromkeys(n.depends_on)
                                            if d in known and d != n.id]}) for n in unique]})
    layers = Graph.of(clean).layers()
    placed = {node_id for layer in layers for node_id in layer}
    stuck = [n.id for n in unique if n.id not in placed]
    if stuck:
        layers.append(stuck)
    tallest = max((len(layer) for layer in layers), default=0)
    out: dict[str, tuple[float, float]] = {}
    for column, layer in enumerate(layers):
        top = (tallest - len(layer)) * ROW_STEP / 2
        for row, node_id in enumerate(layer):
            out[node_id] = (column * COLUMN_STEP, top + row * ROW_STEP)
    return out


def needs_layout(pipeline: Pipeline) -> bool:
    """A node has no position (a file written by hand or by the planner)."""
    return any(n.position is None for n in pipeline.nodes)


def placed(pipeline: Pipeline) -> Pipeline:
    """``pipeline`` with every node positioned (auto-layout) if any node has none."""
    if not needs_layout(pipeline):
        return pipeline
    where = layout_positions(pipeline)
    return pipeline.model_copy(update={"nodes": [
        n.model_copy(update={"position": _pos(*where[n.id])}) for n in pipeline.nodes]})


def draft_problems(pipeline: Pipeline) -> list[Problem]:
    """The format's own checks (an empty task, a bad id) and every validation rule."""
    try:
        Pipeline.model_validate(pipeline.model_dump(by_alias=True))
        found: list[Problem] = []
    except ValidationError as exc:
        found = [_structural(pipeline, err["loc"], err["type"], err["msg"])
                 for err in exc.errors()]
    return found + problems(pipeline)


class Checked(NamedTuple):
    """A pipeline read for the designer: laid out, and its problems found."""

    pipeline: Pipeline
    problems: list[Problem]


def checked(pipeline: Pipeline) -> Checked:
    """``pipeline`` as the designer opens it (a worker thread's job: a repository's file
    may hold thousands of steps)."""
    laid_out = placed(pipeline)
    return Checked(laid_out, draft_problems(laid_out))


def cycle_edges(found: Iterable[Problem]) -> set[tuple[str, str]]:
    """The ``(source, target)`` arrows on a cycle (``a, b, a``: a depends on b)."""
    out: set[tuple[str, str]] = set()
    for problem in found:
        for depender, dependency in zip(problem.cycle, problem.cycle[1:], strict=False):
            out.add((dependency, depender))
    return out


def _structural(pipeline: Pipeline, loc: tuple[int | str, ...], kind: str, msg: str) -> Problem:
    text = _STRUCTURE.get(kind, msg)
    if len(loc) >= 3 and loc[0] == "nodes" and isinstance(loc[1], int):
        node = pipeline.nodes[loc[1]].id if loc[1] < len(pipeline.nodes) else None
        field = _camel(str(loc[2]))
        if field == "task" and kind == "string_too_short":
            text = "is empty: say what this step should do"
        return Problem(node, field, text)
    return Problem(None, ".".join(_camel(str(p)) for p in loc) or "pipeline", text)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _pos(x: float, y: float) -> Position:
    return Position(x=round(x), y=round(y))
