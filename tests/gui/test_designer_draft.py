"""The designer's Qt-free draft: every edit planned, refused with a reason, or laid out."""

from __future__ import annotations

import subprocess
import sys

import pytest

from relay.core.pipeline_model import Pipeline
from relay.gui.designer_draft import (
    COLUMN_STEP,
    ROW_STEP,
    Draft,
    Edit,
    EditRefused,
    cycle_edges,
    new_pipeline,
    placed,
)


def applied(draft: Draft, edit: Edit | None) -> Draft:
    assert edit is not None
    draft.set(edit.after)
    return draft


def chain() -> Draft:
    """plan → implement → review, all on demo."""
    return Draft(Pipeline.model_validate({"name": "feature", "nodes": [
        {"id": "plan", "provider": "demo", "task": "plan it"},
        {"id": "implement", "provider": "demo", "dependsOn": ["plan"],
         "task": "implement {{plan.output}}"},
        {"id": "review", "provider": "demo", "dependsOn": ["implement"],
         "task": "review {{ implement.files }} after {{plan.output}}"},
    ]}))


def test_new_nodes_get_unique_ids_from_their_runtime_and_an_empty_task() -> None:
    draft = Draft(new_pipeline("p"))
    first = draft.add_node("claude", 10.4, 20.6)
    applied(draft, first)
    applied(draft, draft.add_node("claude", 0, 0))
    applied(draft, draft.add_node("9lives", 0, 0))
    assert draft.ids() == ["claude", "claude-2", "n9lives"]
    node = draft.node("claude")
    assert node.position is not None
    assert (node.position.x, node.position.y) == (10, 21)
    assert first.select_after == ("claude",)
    assert first.before.nodes == []
    assert [str(p) for p in draft.problems() if p.node == "claude"] == [
        "node 'claude' field task: is empty: say what this step should do"]


def test_connecting_adds_a_dependency_and_refuses_cycles_with_the_path() -> None:
    draft = chain()
    with pytest.raises(EditRefused, match=r"'plan' cannot depend on 'review': 'review' already "
                                          r"depends on 'plan' \(review → implement → plan\)"):
        draft.connect("review", "plan")
    with pytest.raises(EditRefused, match="cannot depend on itself"):
        draft.connect("plan", "plan")
    with pytest.raises(EditRefused, match="already depends on 'plan'"):
        draft.connect("plan", "implement")
    with pytest.raises(EditRefused, match="no node called 'ghost'"):
        draft.connect("ghost", "plan")
    applied(draft, draft.connect("plan", "review"))
    assert draft.node("review").depends_on == ["implement", "plan"]
    assert ("plan", "review") in draft.edges()
    assert draft.problems() == []


def test_removing_a_node_removes_the_arrows_to_it_and_an_arrow_alone() -> None:
    draft = chain()
    edit = draft.remove(["implement"])
    assert edit is not None
    assert edit.label == "delete implement"
    applied(draft, edit)
    assert draft.ids() == ["plan", "review"]
    assert draft.node("review").depends_on == []
    assert draft.edges() == []
    draft = chain()
    applied(draft, draft.disconnect("plan", "implement"))
    assert draft.node("implement").depends_on == []
    assert draft.disconnect("plan", "implement") is None  # nothing to do


def test_renaming_follows_into_dependencies_and_references() -> None:
    draft = chain()
    applied(draft, draft.rename("plan", "design"))
    assert draft.ids() == ["design", "implement", "review"]
    assert draft.node("implement").depends_on == ["design"]
    assert draft.node("implement").task == "implement {{design.output}}"
    assert draft.node("review").task == "review {{ implement.files }} after {{design.output}}"
    assert draft.problems() == []  # review's reference to design is reachable through implement
    with pytest.raises(EditRefused, match="cannot be an id"):
        draft.rename("design", "2fast")
    with pytest.raises(EditRefused, match="already a node called 'review'"):
        draft.rename("design", "review")
    assert draft.rename("design", "design") is None


def test_moves_of_one_gesture_share_a_merge_key_and_change_no_problem() -> None:
    draft = chain()
    edit = draft.move({"plan": (100, 50)}, "drag-1")
    assert edit is not None
    assert edit.merge == "move:drag-1"
    assert edit.moves_only
    assert draft.move({}, "drag-1") is None


def test_auto_layout_puts_nodes_in_columns_by_depth() -> None:
    draft = Draft(Pipeline.model_validate({"name": "fan", "nodes": [
        {"id": "a", "provider": "demo", "task": "a", "position": {"x": 500, "y": 9}},
        {"id": "b", "provider": "demo", "task": "b", "dependsOn": ["a"]},
        {"id": "c", "provider": "demo", "task": "c", "dependsOn": ["a"]},
        {"id": "d", "provider": "demo", "task": "d", "dependsOn": ["b", "c"]},
    ]}))
    applied(draft, draft.layout())
    where = {n.id: (n.position.x, n.position.y) for n in draft.pipeline.nodes if n.position}
    assert where == {"a": (0, ROW_STEP / 2), "b": (COLUMN_STEP, 0), "c": (COLUMN_STEP, ROW_STEP),
                     "d": (2 * COLUMN_STEP, ROW_STEP / 2)}
    assert draft.layout() is None  # already laid out


def test_a_cycle_is_a_problem_whose_arrows_are_known_and_laid_out_last() -> None:
    loop = Pipeline.model_validate({"name": "loop", "nodes": [
        {"id": "start", "provider": "demo", "task": "s"},
        {"id": "a", "provider": "demo", "task": "a", "dependsOn": ["start", "b"]},
        {"id": "b", "provider": "demo", "task": "b", "dependsOn": ["a"]},
    ]})
    draft = Draft(placed(loop))
    cycle = [p for p in draft.problems() if p.cycle]
    assert len(cycle) == 1
    assert cycle[0].node == "a"
    assert cycle_edges(draft.problems()) == {("b", "a"), ("a", "b")}
    xs = {n.id: n.position.x for n in draft.pipeline.nodes if n.position}
    assert xs == {"start": 0, "a": COLUMN_STEP, "b": COLUMN_STEP}


def test_pipeline_fields_are_edits_too() -> None:
    draft = chain()
    applied(draft, draft.edit_pipeline("name", "shipping"))
    assert draft.pipeline.name == "shipping"
    with pytest.raises(EditRefused, match="needs a name"):
        draft.edit_pipeline("name", "  ")
    applied(draft, draft.edit("plan", "fallback", ["codex", "claude:work"]))
    assert draft.node("plan").chain == ["demo", "codex", "claude:work"]
    assert draft.edit("plan", "fallback", ["codex", "claude:work"]) is None
    with pytest.raises(ValueError, match="not an editable node field"):
        draft.edit("plan", "depends_on", [])


def test_the_draft_and_the_backend_import_without_qt() -> None:
    """The designer's model layer is Qt-free, like the core (the views are on top)."""
    probe = ("import sys\n"
             "class Block:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name.split('.')[0] in ('PySide6', 'shiboken6', 'qasync'):\n"
             "            raise ImportError('Qt is blocked: ' + name)\n"
             "sys.meta_path.insert(0, Block())\n"
             "import relay.gui.designer_draft, relay.gui.pipeline_backend\n"
             "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
