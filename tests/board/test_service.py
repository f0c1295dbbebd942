"""The board's service over a real relay.db: every method, each write committed with its
BoardChanged event (published after commit), compare-and-set, errors with hints."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pygit2
import pytest

from relay.board.service import BoardService
from relay.core.errors import (
    BoardError,
    ProjectNotFoundError,
    TaskNotFoundError,
    VersionConflictError,
)
from relay.core.events import BOARD_SESSION, BoardChanged, ToolCall
from relay.core.guard import Environment, EnvRefs
from relay.core.models import SessionSpec
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine
from tests.board.conftest import Published
from tests.conftest import make_repo


async def stored_board_events(engine: Engine) -> list[BoardChanged]:
    records = await engine.store.events_after(0, session_id=BOARD_SESSION, limit=10_000)
    return [r.event for r in records if isinstance(r.event, BoardChanged)]


async def test_project_for_finds_the_git_root_and_creates_the_project_once(
        engine: Engine, repo: Path, published: Published) -> None:
    (repo / "src" / "deep").mkdir(parents=True)
    first = await engine.board.project_for(repo / "src" / "deep")
    again = await engine.board.project_for(repo)
    assert first == again
    assert first.repo == str(repo.resolve())
    assert first.slug == "shop-app"
    assert await engine.board.projects() == [first]
    assert [e.action for e in await stored_board_events(engine)] == ["created"]
    assert published.kinds() == ["board_changed"]


async def test_a_linked_worktree_belongs_to_its_main_repository(
        engine: Engine, repo: Path, tmp_path: Path) -> None:
    git = pygit2.Repository(str(repo))
    git.add_worktree("feature", str(tmp_path / "wt-feature"))
    project = await engine.board.project_for(tmp_path / "wt-feature")
    assert project.repo == str(repo.resolve())


async def test_two_repositories_of_one_name_get_distinct_slugs(
        engine: Engine, tmp_path: Path) -> None:
    a = await engine.board.project_for(make_repo(tmp_path / "a" / "shop"))
    b = await engine.board.project_for(make_repo(tmp_path / "b" / "shop"))
    assert (a.slug, b.slug) == ("shop", "shop-2")


async def test_a_folder_outside_git_is_a_clear_error(engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(BoardError) as caught:
        await engine.board.project_for(tmp_path / "plain")
    assert caught.value.hint
    assert "git repository" in caught.value.hint


async def test_tasks_are_numbered_per_project_and_each_write_is_an_event(
        engine: Engine, repo: Path, published: Published) -> None:
    board = engine.board
    one = await board.create_task(str(repo), "First", next_step="write the spec")
    two = await board.create_task("shop-app", "Second", stage="dev", actor="agent:x")
    assert (one.key, two.key) == ("SHOP-APP-1", "SHOP-APP-2")
    assert one.version == 1
    assert one.stage == "plan"
    assert one.next_step == "write the spec"
    events = await stored_board_events(engine)
    assert [(e.entity, e.action, e.task) for e in events] == [
        ("project", "created", None), ("task", "created", "SHOP-APP-1"),
        ("task", "created", "SHOP-APP-2")]
    assert events[-1].actor == "agent:x"
    assert events[-1].fields["stage"] == "dev"
    # published only after commit: every published record is in the store already
    stored_ids = {r.id for r in await engine.store.events_after(0, session_id=BOARD_SESSION)}
    assert {r.id for r in published.records} == stored_ids


async def test_update_task_bumps_the_version_and_refuses_a_stale_one(
        engine: Engine, repo: Path) -> None:
    board = engine.board
    task = await board.create_task(str(repo), "Title")
    updated = await board.update_task(task.key, expected_version=1, waiting_on="review",
                                      branch="feat/x")
    assert (updated.version, updated.waiting_on, updated.branch) == (2, "review", "feat/x")
    with pytest.raises(VersionConflictError) as caught:
        await board.update_task(task.key, expected_version=1, title="Other")
    assert "version 1" in caught.value.message
    assert caught.value.hint
    unchanged = (await board.task(task.key)).card.task
    assert unchanged.title == "Title"
    assert unchanged.version == 2
    same = await board.update_task(task.key, waiting_on="review")  # nothing changes
    assert same.version == 2
    with pytest.raises(BoardError, match="no field"):
        await board.update_task(task.key, stage="dev")
    with pytest.raises(BoardError, match="empty"):
        await board.update_task(task.key, title="  ")


async def test_set_stage_moves_the_task_with_from_and_to(engine: Engine, repo: Path) -> None:
    board = engine.board
    task = await board.create_task(str(repo), "Ship")
    moved = await board.set_stage(task.key.lower(), "test", note="CI green", actor="owner")
    assert moved.stage == "test"
    assert moved.version == 2
    assert moved.stage_ms >= task.stage_ms
    last = (await stored_board_events(engine))[-1]
    assert (last.action, last.fields["from"], last.fields["to"], last.fields["note"]) == (
        "stage", "plan", "test", "CI green")
    with pytest.raises(BoardError, match="not a stage") as caught:
        await board.set_stage(task.key, "shipped")
    assert caught.value.hint
    assert "plan" in caught.value.hint


async def test_unknown_tasks_and_projects_are_not_found(engine: Engine, repo: Path) -> None:
    with pytest.raises(TaskNotFoundError):
        await engine.board.task("SHOP-99")
    with pytest.raises(TaskNotFoundError):
        await engine.board.set_stage("not a key", "dev")
    with pytest.raises(ProjectNotFoundError):
        await engine.board.cards("nope")
    with pytest.raises(ProjectNotFoundError):
        await engine.board.environments("nope")


async def test_reports_decisions_and_the_card(engine: Engine, repo: Path) -> None:
    board = engine.board
    task = await board.create_task(str(repo), "Build")
    await board.add_report(task.key, "Started", "the body", author="agent:s1", session="s1")
    latest = await board.add_report(task.key, "Half way", author="agent:s1")
    decision = await board.add_decision(task.key, "Use SQLite", decided_by="owner")
    detail = await board.task(task.key)
    assert [r.summary for r in detail.reports] == ["Started", "Half way"]
    assert detail.reports[0].body == "the body"
    assert detail.reports[0].session_ref == "s1"
    assert detail.decisions == [decision]
    assert detail.card.last_report == latest
    assert [e.entity for e in await stored_board_events(engine)][-3:] == [
        "report", "report", "decision"]


async def test_cards_filter_by_project_and_leave_done_out(engine: Engine, repo: Path,
                                                          tmp_path: Path) -> None:
    board = engine.board
    a = await board.create_task(str(repo), "Open")
    b = await board.create_task(str(repo), "Finished", stage="done")
    other = await board.create_task(str(make_repo(tmp_path / "other")), "Elsewhere")
    assert {c.task.key for c in await board.cards()} == {a.key, b.key, other.key}
    assert [c.task.key for c in await board.cards("shop-app", done=False)] == [a.key]


async def test_comments_and_their_acknowledgement(engine: Engine, repo: Path) -> None:
    board = engine.board
    task = await board.create_task(str(repo), "Talk")
    first = await board.comment(task.key, "Please use the new API")
    second = await board.comment(task.key, "And add a test")
    await board.comment(task.key, "On it", author="agent:s1", author_kind="agent")
    assert (await board.task(task.key)).card.open_comments == 2
    assert [c.id for c in await board.comments(task.key, unread=True)] == [first.id, second.id]
    assert await board.ack_comments(task.key, [first.id], session="s1") == 1
    assert await board.ack_comments(task.key, [first.id], session="s1") == 0  # once only
    assert [c.id for c in await board.comments(task.key, unread=True)] == [second.id]
    assert await board.ack_comments(task.key, None, session=None) == 1
    assert await board.comments(task.key, unread=True) == []
    acked = [e for e in await stored_board_events(engine) if e.action == "acked"]
    assert acked[0].actor == "agent:s1"
    assert acked[0].fields["ids"] == [first.id]
    with pytest.raises(BoardError, match="no comment 999"):
        await board.ack_comments(task.key, [999], session=None)
    with pytest.raises(BoardError, match="empty"):
        await board.comment(task.key, "   ")


async def test_link_and_unlink_sessions(engine: Engine, repo: Path) -> None:
    board = engine.board
    task = await board.create_task(str(repo), "Linked", session="claude-1")
    link = await board.link(task.key, "claude-2", actor="agent:claude-2")
    assert (link.session_ref, link.kind) == ("claude-2", "claude")
    await board.link(task.key, "claude-2", actor="owner")  # already linked: no second link
    card = (await board.task(task.key)).card
    assert [s.session_ref for s in card.sessions] == ["claude-1", "claude-2"]
    await board.unlink(task.key, "claude-1", actor="owner")
    assert [s.session_ref for s in (await board.task(task.key)).card.sessions] == ["claude-2"]
    with pytest.raises(BoardError, match="not linked"):
        await board.unlink(task.key, "claude-1", actor="owner")
    with pytest.raises(BoardError, match="not a session id"):
        await board.link(task.key, "bad id; drop", actor="owner")
    links = [e for e in await stored_board_events(engine) if e.entity == "link"]
    assert [e.action for e in links] == ["created", "deleted"]


async def test_a_relay_session_links_as_relay_and_its_plan_is_its_latest_todo_call(
        engine: Engine, repo: Path) -> None:
    spec = SessionSpec(repo=str(repo), task="do it", runtime="demo")
    session_id = "abcdef012345"
    await engine.writer.write(WriteOp(session_id, statements=[
        engine.store.sessions.insert(session_id, spec, simulated=True, owner_pid=0)]))
    await engine.writer.write(WriteOp(session_id, event=ToolCall(
        call_id="c1", name="TodoWrite", input={"todos": [
            {"content": "Write tests", "status": "in_progress", "activeForm": "Writing"},
            {"content": "Ship", "status": "pending", "activeForm": "Shipping"}]})))
    task = await engine.board.create_task(str(repo), "Relay-run", session=session_id)
    card = (await engine.board.task(task.key)).card
    assert card.sessions[0].kind == "relay"
    assert card.sessions[0].relay_state is not None
    assert card.plan == [{"content": "Write tests", "status": "in_progress"},
                         {"content": "Ship", "status": "pending"}]


async def test_environments_and_the_guard_policy(engine: Engine, repo: Path,
                                                 tmp_path: Path) -> None:
    board = engine.board
    project = await board.project_for(repo)
    prod = Environment("prod", "live", "ask", EnvRefs(kube_contexts=("prod-eu",)), "careful")
    assert await board.set_environment(project.slug, prod) == prod
    stage = Environment("staging", "test", "full", EnvRefs(ssh_hosts=("stage.example.com",)))
    await board.set_environment(project.slug, stage)
    await board.set_environment(project.slug, Environment("prod", "live", "none",
                                                          EnvRefs(kube_contexts=("prod-eu",))))
    envs = await board.environments(project.slug)
    assert [(e.name, e.level) for e in envs] == [("prod", "none"), ("staging", "full")]
    assert envs[1].refs.ssh_hosts == ("stage.example.com",)
    policy = await board.guard_policy(repo / "README.md", repo)
    assert policy.repo == str(repo.resolve())
    assert len(policy.environments) == 2
    await board.remove_environment(project.slug, "staging")
    assert [e.name for e in await board.environments(project.slug)] == ["prod"]
    with pytest.raises(BoardError, match="no environment"):
        await board.remove_environment(project.slug, "staging")
    with pytest.raises(BoardError):
        await board.set_environment(project.slug, Environment(
            "db", "live", "read", EnvRefs(urls=("postgres://admin:hunter2-Secret-99@db.example.com/x",))))
    with pytest.raises(BoardError, match="not an environment name"):
        await board.set_environment(project.slug, Environment("a b", "live", "read"))
    unknown = make_repo(tmp_path / "no-project")
    assert (await board.guard_policy(unknown)).environments == ()
    assert [e.entity for e in await stored_board_events(engine)].count("environment") == 4


async def test_the_board_survives_a_restart(relay_home: Path, repo: Path) -> None:
    from relay.core.config import load_config

    first = await Engine.open(load_config())
    try:
        task = await first.board.create_task(str(repo), "Persisted")
        await first.board.hook({"session_id": "c-1", "hook_event_name": "Notification",
                                "cwd": str(repo), "message": "Claude needs your permission",
                                "notification_type": "permission_prompt"})
    finally:
        await first.close()
    second = await Engine.open(load_config())
    try:
        assert isinstance(second.board, BoardService)
        assert (await second.board.task(task.key)).card.task.title == "Persisted"
        live = second.board.live_states().get("c-1")
        assert live is not None
        assert (live.state, live.needs) == ("needs_input", "permission")
    finally:
        await second.close()


async def test_hooked_sessions_no_hook_reported_on_for_two_weeks_are_let_go_of(
        relay_home: Path, repo: Path) -> None:
    from relay.core.config import load_config
    from relay.core.store.sql import now_ms

    first = await Engine.open(load_config())
    try:
        for sid in ("old-1", "new-1"):
            await first.board.hook({"session_id": sid, "hook_event_name": "SessionStart",
                                    "cwd": str(repo), "source": "startup"})
        await first.writer.write(WriteOp(BOARD_SESSION, statements=[(
            "UPDATE hooked_sessions SET updated_ms=? WHERE agent_session_id='old-1'",
            (now_ms() - 15 * 24 * 3600 * 1000,))]))
    finally:
        await first.close()
    second = await Engine.open(load_config())
    try:
        assert [s.agent_session_id for s in second.board.live_states().all()] == ["new-1"]
        async with second.store.conn.execute("SELECT agent_session_id FROM hooked_sessions") as cur:
            assert [r[0] for r in await cur.fetchall()] == ["new-1"]
    finally:
        await second.close()


def test_the_temporary_folder_is_scratch_unless_the_worktree_lies_in_it(tmp_path: Path) -> None:
    import tempfile

    from relay.board.service import scratch_folders
    temp = str(Path(tempfile.gettempdir()).resolve())
    assert scratch_folders(Path("/home/u/proj")) == (temp,)
    assert scratch_folders(tmp_path) == ()  # a checkout under the temporary folder


async def test_sessions_without_a_task_are_the_hooked_ones_no_open_link_names(
        engine: Engine, repo: Path, tmp_path: Path) -> None:
    board = engine.board
    other = make_repo(tmp_path / "Other")
    project = await board.project_for(repo)
    other_project = await board.project_for(other)
    elsewhere = tmp_path / "no-git"
    elsewhere.mkdir()
    for sid, cwd in (("c-linked", repo), ("c-free", repo / "src"), ("c-other", other),
                     ("c-ended", repo), ("c-nowhere", elsewhere), ("c-stale", repo)):
        await board.hook({"session_id": sid, "hook_event_name": "SessionStart",
                          "cwd": str(cwd), "source": "startup"})
    await board.hook({"session_id": "c-ended", "hook_event_name": "SessionEnd",
                      "cwd": str(repo), "reason": "exit"})
    stale = board.live.get("c-stale")
    assert stale is not None
    board.live.put(replace(stale, updated_ms=stale.updated_ms - 25 * 3600 * 1000))
    await board.create_task(project.slug, "Linked", session="c-linked")

    found = await board.unlinked()
    assert {s.agent_session_id for s in found} == {"c-nowhere", "c-other", "c-free"}
    times = [s.updated_ms for s in found]
    assert times == sorted(times, reverse=True)  # newest first
    assert [s.agent_session_id for s in await board.unlinked(project.slug)] == ["c-free"]
    assert [s.agent_session_id for s in await board.unlinked(other_project.slug)] == ["c-other"]
    with pytest.raises(ProjectNotFoundError):
        await board.unlinked("nothing")

    task = await board.create_task(other_project.slug, "Other work")
    await board.link(task.key, "c-other", actor="agent:c-other")
    assert {s.agent_session_id for s in await board.unlinked()} == {"c-nowhere", "c-free"}
    await board.unlink(task.key, "c-other", actor="owner")  # an ended link frees it again
    assert "c-other" in [s.agent_session_id for s in await board.unlinked()]


def test_a_folder_belongs_to_the_innermost_project_holding_it() -> None:
    from relay.board.model import Project, project_of

    outer, inner = Project("mono", "mono", "/src/mono"), Project("lib", "lib", "/src/mono/lib")
    assert project_of("/src/mono/lib/x", [outer, inner]) == inner
    assert project_of("/src/mono/app", [inner, outer]) == outer
    assert project_of("/src/monorail", [outer, inner]) is None
    assert project_of("", [outer]) is None
