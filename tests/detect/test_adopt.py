"""Adopt: a detected session blocked by quota continues on another runtime from a signed brief,
in a worktree at the user's repository state (uncommitted changes included), the user's
working tree and index untouched."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.errors import ContractTamperedError, UnknownRuntimeError, WorktreeError
from relay.core.events import LimitHit
from relay.core.vault import Vault
from relay.detect import adopt as adopt_module
from relay.detect.adopt import adopt, adoption_reason
from relay.detect.model import DetectedSession
from relay.detect.stores.base import StoreRead
from relay.engine.engine import Engine
from relay.sessions.briefing import continuation_prompt
from relay.sessions.contract import ContractV2, read_envelope, render_markdown, write_envelope
from relay.sessions.snapshot import trailers_of
from relay.sessions.worktree import carry_uncommitted, create_worktree
from tests.conftest import make_repo

CAPTURES = "claude/captures"
#: f_usage_limit run1 (five-hour window): the transcript whose last turn hit the limit
LIMITED = "f_usage_limit/config/projects/CWD_ENCODED/8a2de846-6864-45b6-bc0a-af654af4dbe4.jsonl"
#: recorded lines spliced in before the limit: the agent's task list and a file it wrote
TASKS = "o_task_tools/config/projects/CWD_ENCODED/6494fa10-7460-4579-85af-83ce7ccfd013.jsonl"
WRITE = "b_write_tool/config/projects/CWD_ENCODED/f42cff74-5a06-4ead-9863-d54a6878b94f.jsonl"
PROMPT = "Add a greeting module and write tests for it"
LIMIT_TEXT = "You've hit your session limit · resets 12:05pm (UTC)"
BINARY = bytes(range(256)) * 4


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


# --- the user's repository and the detected session ------------------------------------

def user_repo(path: Path) -> Path:
    """A commit, then uncommitted work: a modification (unstaged), a staged one, a deletion,
    an untracked text file (the one the agent wrote), an untracked binary, an ignored log."""
    make_repo(path, {"README.md": "# demo\n", "app.py": "print('v1')\n", "old.txt": "old\n",
                     ".gitignore": "*.log\n"})
    (path / "app.py").write_text("print('v2: uncommitted')\n")
    (path / "README.md").write_text("# demo, staged\n")
    repo = pygit2.Repository(str(path))
    repo.index.add("README.md")
    repo.index.write()
    (path / "old.txt").unlink()
    (path / "hello.txt").write_text("hello world\n")
    (path / "data").mkdir()
    (path / "data" / "blob.bin").write_bytes(BINARY)
    (path / "debug.log").write_text("ignored\n")
    return path


def repo_state(path: Path) -> dict[str, Any]:
    """Everything of the user's checkout a carry must not change: every file's bytes and
    mode outside .git, the index file's bytes, HEAD, and git's status."""
    files = {}
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            full = Path(root, name)
            files[full.relative_to(path).as_posix()] = (full.read_bytes(), full.lstat().st_mode)
    repo = pygit2.Repository(str(path))
    return {"files": files, "index": (path / ".git" / "index").read_bytes(),
            "head": (path / ".git" / "HEAD").read_bytes(), "status": repo.status()}


def _lines(fixtures: Path, name: str) -> list[dict[str, Any]]:
    text = (fixtures / CAPTURES / name).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def claude_transcript(fixtures: Path, config: Path, cwd: Path) -> Path:
    """The f_usage_limit session's transcript, its cwd rewritten to ``cwd`` and its prompt to
    :data:`PROMPT`, with recorded task-list and Write lines spliced in before the limit."""
    base = _lines(fixtures, LIMITED)
    session_id = base[0]["sessionId"]
    tasks = [d for d in _lines(fixtures, TASKS) if d.get("type") in ("assistant", "user")
             and d["message"].get("stop_reason") != "end_turn"][1:]  # not its own prompt
    write = [d for d in _lines(fixtures, WRITE) if d.get("type") in ("assistant", "user")
             and d["message"].get("stop_reason") != "end_turn"][1:]
    limit_at = next(i for i, d in enumerate(base) if d.get("type") == "assistant")
    lines = base[:limit_at] + tasks + write + base[limit_at:]
    parent = None
    for line in lines:  # one chain, as Claude Code writes it
        line["sessionId"] = session_id
        if "uuid" in line:
            line["parentUuid"], parent = parent, line["uuid"]
        if line.get("type") == "last-prompt":
            line["leafUuid"] = parent
    text = json.dumps(lines).replace("<CWD>", str(cwd)).replace('"hi"', json.dumps(PROMPT))
    target = config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd)) / f"{session_id}.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text("".join(json.dumps(d) + "\n" for d in json.loads(text)))
    return target


@pytest.fixture
async def adopted_session(engine: Engine, fixtures_dir: Path,
                          tmp_path: Path) -> tuple[Path, DetectedSession, StoreRead]:
    """The user's repository, and the Claude session that worked in it as the detector sees
    it: its config folder is the wallet account claude:work, found by the session's id."""
    repo = user_repo(tmp_path / "project")
    config = tmp_path / "claude-work"
    transcript = claude_transcript(fixtures_dir, config, repo)
    await engine.accounts.add("claude", "work", config)
    detected, read = await engine.detector.find(transcript.stem)
    assert (detected.entry, detected.state, detected.repo) == ("claude:work", "blocked", str(repo))
    return repo, detected, read


# --- end to end ---------------------------------------------------------------------------

async def test_a_claude_session_blocked_by_quota_continues_on_codex(
        engine: Engine, adopted_session: tuple[Path, DetectedSession, StoreRead],
        fakes_on_path: Path, tmp_path: Path, relay_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo, detected, read = adopted_session
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    before = repo_state(repo)
    head = str(pygit2.Repository(str(repo)).head.target)

    adopted = await adopt(engine, detected, read, "codex")
    row = await engine.wait_session(adopted.session_id)

    # the new session completed on codex, in a worktree of the user's repository
    assert row.state == "completed", row.reason
    assert [(r.runtime, r.outcome) for r in await engine.runs(row.id)] == [("codex", "completed")]
    workdir = Path(row.workdir or "")
    assert workdir.is_relative_to(engine.config.worktrees_dir)
    assert row.branch == f"relay/{row.id}"
    worktree = pygit2.Repository(str(workdir))
    tip = worktree.head.peel(pygit2.Commit)
    # the run ended with a snapshot commit on top of the user's HEAD …
    assert [str(p) for p in tip.parent_ids] == [head]
    assert trailers_of(tip)["Relay-Kind"] == "run-end"
    # … holding the user's uncommitted state; the ignored file stays behind
    assert (workdir / "app.py").read_text() == "print('v2: uncommitted')\n"
    assert (workdir / "README.md").read_text() == "# demo, staged\n"
    assert (workdir / "hello.txt").read_text() == "hello world\n"
    assert (workdir / "data" / "blob.bin").read_bytes() == BINARY
    assert not (workdir / "old.txt").exists()
    assert not (workdir / "debug.log").exists()
    changed = {d.old_file.path if d.status_char() == "D" else d.new_file.path: d.status_char()
               for d in worktree.diff(worktree[head].peel(pygit2.Commit), tip).deltas}
    assert changed == {"app.py": "M", "README.md": "M", "old.txt": "D", "hello.txt": "A",
                       "data/blob.bin": "A"}
    assert worktree.status() == {}
    # the user's checkout is byte for byte as it was: files, index, HEAD, status
    assert repo_state(repo) == before
    # the codex agent ran there, told the continuation prompt
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    codex = next(c for c in calls if Path(c["argv"][0]).name == "codex")
    assert Path(codex["cwd"]).resolve() == workdir.resolve()
    brief = adopted.brief_path.read_text()
    assert codex["argv"][-1] == continuation_prompt(brief)

    # the contract is stored under the data folder, signed with the vault's key
    folder = adopted.contract_dir
    assert folder.parent == relay_home / "adopted" / f"claude-{detected.agent_session_id}"
    assert folder.name == adopted.contract_id
    assert adopted.brief_path == folder / "brief.md"
    key = Vault.open(engine.config).signing_key(create=False)
    contract = read_envelope(folder, key)
    assert isinstance(contract, ContractV2)
    assert brief == render_markdown(contract)
    # the header says the work is carried over uncommitted, not "committed as"
    assert "uncommitted changes carried over, not committed" in brief
    assert "is committed as" not in brief
    assert contract.session_id == detected.id
    assert contract.snapshot_commit_sha == head
    # … with the lifted intent: the request, the plan and what is left, why it was adopted
    assert contract.initial_prompt == contract.task_goal == PROMPT
    assert contract.plan == ["(in progress) Write tests"]
    assert contract.tasks_remaining == ["(in progress) Write tests"]
    opening = f"from the claude session {detected.id} in {repo}, which is blocked by a usage limit ("
    assert opening in contract.next_action
    assert LIMIT_TEXT in contract.next_action  # the detector's why, with the CLI's words
    assert "It was working on: Write tests." in contract.next_action
    assert "last message was: I'll create the file." in contract.next_action
    # … what it did and the files it left uncommitted, hashed as they are
    assert "Write: hello.txt" in contract.do_not_redo
    manifest = {f.path: f for f in contract.file_manifest}
    assert sorted(manifest) == ["README.md", "app.py", "data/blob.bin", "hello.txt"]
    assert all(f.modified for f in manifest.values())
    assert any("old.txt" in d for d in contract.decisions)
    assert "It ran as claude:work on claude-opus-4-8." in contract.decisions
    markdown = (folder / "envelope.md").read_text()
    for text in (PROMPT, "- [ ] (in progress) Write tests", "blocked by a usage limit",
                 "`hello.txt` modified"):
        assert text in markdown
    # the session records what it adopted, and says it carried the changes over
    assert (await engine.store.sessions.spec(row.id)).adopted_from == detected.id
    notices = [r.event.message for r in await engine.session_events(row.id)
               if r.event.kind == "notice"]
    assert any(n.startswith(f"Adopted {detected.id}, which is blocked") for n in notices)
    assert any("4 file(s) written, 1 deleted" in n for n in notices)


async def test_in_place_runs_in_the_repository_itself(
        engine: Engine, adopted_session: tuple[Path, DetectedSession, StoreRead],
        fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, detected, read = adopted_session
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")

    adopted = await adopt(engine, detected, read, "codex", in_place=True)
    row = await engine.wait_session(adopted.session_id)

    assert row.state == "completed", row.reason
    assert adopted.in_place
    assert Path(row.workdir or "").resolve() == repo.resolve()
    assert row.branch is None
    assert pygit2.Repository(str(repo)).list_worktrees() == []
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    codex = next(c for c in calls if Path(c["argv"][0]).name == "codex")
    assert Path(codex["cwd"]).resolve() == repo.resolve()
    contract = read_envelope(adopted.contract_dir, Vault.open(engine.config).signing_key())
    assert any("repository" in c and "itself" in c for c in contract.constraints)


async def test_a_tampered_contract_refuses_and_nothing_starts(
        engine: Engine, adopted_session: tuple[Path, DetectedSession, StoreRead],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, detected, read = adopted_session
    def write_then_tamper(folder: Path, *args: Any, **kwargs: Any) -> Any:
        signed = write_envelope(folder, *args, **kwargs)
        path = folder / "envelope.json"
        path.write_bytes(path.read_bytes().replace(b"Write tests", b"Delete the repo"))
        return signed

    monkeypatch.setattr(adopt_module, "write_envelope", write_then_tamper)
    with pytest.raises(ContractTamperedError, match="signature does not match"):
        await adopt(engine, detected, read, "codex")
    assert await engine.store.sessions.recent() == []
    assert not engine.config.worktrees_dir.exists()


async def test_a_folder_outside_any_repository_is_refused_with_a_hint(
        engine: Engine, adopted_session: tuple[Path, DetectedSession, StoreRead],
        tmp_path: Path) -> None:
    _, detected, read = adopted_session
    loose = tmp_path / "not-a-repo"
    loose.mkdir()
    detected.cwd = read.cwd = str(loose)
    detected.repo = None
    with pytest.raises(WorktreeError) as caught:
        await adopt(engine, detected, read, "codex")
    assert caught.value.message == (f"{loose}, where the claude session {detected.id} worked, "
                                    "is not in a git repository.")
    assert "git init" in (caught.value.hint or "")
    assert not (engine.config.home / "adopted").exists()
    assert await engine.store.sessions.recent() == []


async def test_an_unknown_runtime_is_refused_before_anything_is_written(
        engine: Engine, adopted_session: tuple[Path, DetectedSession, StoreRead]) -> None:
    _, detected, read = adopted_session
    with pytest.raises(UnknownRuntimeError):
        await adopt(engine, detected, read, "nosuch:work")
    assert not (engine.config.home / "adopted").exists()


async def test_a_session_in_a_subfolder_adopts_the_whole_repository(
        engine: Engine, adopted_session: tuple[Path, DetectedSession, StoreRead],
        fakes_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, detected, read = adopted_session
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    detected.cwd = str(repo / "data")
    adopted = await adopt(engine, detected, read, "codex")
    row = await engine.wait_session(adopted.session_id)
    assert row.state == "completed", row.reason
    assert adopted.repo.resolve() == repo.resolve()
    contract = read_envelope(adopted.contract_dir, Vault.open(engine.config).signing_key())
    assert "The previous agent worked in `data` of the repository." in contract.constraints


def test_the_reason_names_the_reset_time_when_the_detector_did_not() -> None:
    detected = DetectedSession(runtime="claude", agent_session_id="s", entry="claude",
                               source=Path("x"), state="blocked",
                               resets_at_ms=1_700_000_000_000)
    reason = adoption_reason(detected)
    assert re.fullmatch(r"is blocked by a usage limit \(resets (\d{4}-\d\d-\d\d )?\d\d:\d\d\)",
                        reason), reason
    limits = [LimitHit(limit="quota", message="out of quota"),
              LimitHit(limit="rate_limit", message="slow down")]
    assert adoption_reason(detected, limits).startswith("is blocked by a rate limit (resets ")
    detected.state, detected.why = "crashed", "a Bash call has no result"
    detected.resets_at_ms = None
    assert adoption_reason(detected) == "stopped in the middle of a turn (a Bash call has no result)"


# --- carrying the uncommitted state -------------------------------------------------------

async def test_carry_brings_every_kind_of_change_and_only_reads_the_user_checkout(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", "run.sh": "echo\n", "dir/x.txt": "x\n",
                                      "f": "a file that becomes a folder\n",
                                      "link": "placeholder\n", ".gitignore": "*.log\n",
                                      "sub/y.txt": "y\n"})
    (repo / "sub" / "y.txt").unlink()
    (repo / "sub").rmdir()
    (repo / "other").mkdir()
    (repo / "other" / "y.txt").write_text("not sub's\n")
    (repo / "sub").symlink_to("other")          # a folder became a symlink to another one
    (repo / "dir" / "x.txt").unlink()           # the folder goes away with its last file
    (repo / "f").unlink()
    (repo / "f").mkdir()
    (repo / "f" / "inside.txt").write_text("now a folder\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link").unlink()
    (repo / "link").symlink_to("a.txt")       # a file became a symlink (not followed)
    (repo / "new.bin").write_bytes(b"\x00\xff" * 10)
    (repo / "a.txt").write_text("staged\n")
    index = pygit2.Repository(str(repo)).index
    index.add("a.txt")
    index.write()
    (repo / "a.txt").write_text("staged, then changed again\n")  # the working tree wins
    (repo / "x.log").write_text("ignored\n")
    before = repo_state(repo)
    ws = await create_worktree(repo, tmp_path / "wt", "s1")

    carried = await carry_uncommitted(repo, ws.path)

    assert repo_state(repo) == before
    assert sorted(carried.written) == ["a.txt", "f/inside.txt", "link", "new.bin",
                                       "other/y.txt", "run.sh", "sub"]
    assert sorted(carried.deleted) == ["dir/x.txt", "f", "sub/y.txt"]
    assert carried.skipped == []
    assert (ws.path / "a.txt").read_text() == "staged, then changed again\n"
    assert not (ws.path / "dir").exists()
    assert (ws.path / "f" / "inside.txt").read_text() == "now a folder\n"
    assert os.readlink(ws.path / "link") == "a.txt"
    assert os.readlink(ws.path / "sub") == "other"
    assert (ws.path / "new.bin").read_bytes() == b"\x00\xff" * 10
    assert stat.S_IMODE((ws.path / "run.sh").stat().st_mode) & 0o111
    assert not (ws.path / "x.log").exists()
    # the worktree now shows what the user's checkout shows (all of it unstaged)
    flags = pygit2.Repository(str(ws.path)).status()
    assert set(flags) == set(before["status"])


async def test_carry_follows_a_head_that_moved_while_the_worktree_was_made(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "one\n"})
    ws = await create_worktree(repo, tmp_path / "wt", "s1")
    (repo / "a.txt").write_text("two\n")
    (repo / "b.txt").write_text("new in the commit\n")
    git = pygit2.Repository(str(repo))
    git.index.add_all()
    git.index.write()
    sig = pygit2.Signature("Relay Tests", "tests@relay.invalid")
    git.create_commit("HEAD", sig, sig, "two", git.index.write_tree(), [git.head.target])

    carried = await carry_uncommitted(repo, ws.path)

    assert sorted(carried.written) == ["a.txt", "b.txt"]
    assert (ws.path / "a.txt").read_text() == "two\n"
    assert (ws.path / "b.txt").read_text() == "new in the commit\n"


async def test_carry_with_nothing_uncommitted_changes_nothing(git_repo: Path,
                                                              tmp_path: Path) -> None:
    ws = await create_worktree(git_repo, tmp_path / "wt", "s1")
    carried = await carry_uncommitted(git_repo, ws.path)
    assert (carried.written, carried.deleted, carried.skipped) == ([], [], [])
    assert carried.summary(git_repo) == f"{git_repo} had no uncommitted changes to carry."
    assert pygit2.Repository(str(ws.path)).status() == {}
