"""carry_conversation over recorded transcripts (Claude) and rollouts (Codex).

The account folders are built from the captures in tests/fixtures; the real CLIs
resuming a carried conversation are in tests/integration/test_carryover_real.py.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from relay.core.agent_homes import ClaudeHome
from relay.sessions import carryover
from relay.sessions.carryover import CarryResult, carry_conversation
from tests.conftest import fixtures_root

CLAUDE = fixtures_root() / "claude" / "captures"
CODEX = fixtures_root() / "codex" / "captures"
SESSION = "22222222-2222-4222-8222-222222222222"        # g_resume's first session
SUBAGENT_SESSION = "96482de8-710f-4157-9d4d-d330bd3b204e"  # w_subagent
TASK_SESSION = "6494fa10-7460-4579-85af-83ce7ccfd013"    # o_task_tools
THREAD = "01a22bee-46dd-78e3-889b-43b6b667eb33"          # f_resume_by_id
ROLLOUT = f"sessions/2026/11/30/rollout-2026-11-30T10-09-25-{THREAD}.jsonl"


def tree(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (links not followed) with its bytes."""
    found: dict[str, bytes] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink():
                found[str(path.relative_to(root))] = path.read_bytes()
    return found


def claude_env(config: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(config)}


def codex_env(home: Path) -> dict[str, str]:
    return {"CODEX_HOME": str(home)}


def claude_account(config: Path, cwd: Path, capture: str, session: str) -> Path:
    """A Claude config folder holding one captured session (and its per-session state)."""
    captured = CLAUDE / capture / "config"
    transcript = ClaudeHome(config).transcript(cwd, session)
    transcript.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(captured / "projects" / "CWD_ENCODED" / f"{session}.jsonl", transcript)
    session_dir = captured / "projects" / "CWD_ENCODED" / session
    if session_dir.is_dir():
        shutil.copytree(session_dir, transcript.with_suffix(""))
    if (captured / "tasks" / session).is_dir():
        shutil.copytree(captured / "tasks" / session, config / "tasks" / session)
    shutil.copyfile(captured / ".claude.json", config / ".claude.json")
    return transcript


def codex_account(home: Path) -> Path:
    """A CODEX_HOME holding f_resume_by_id's rollout, a state db and credentials."""
    rollout = home / ROLLOUT
    rollout.parent.mkdir(parents=True)
    shutil.copyfile(CODEX / "f_resume_by_id" / ROLLOUT, rollout)
    (home / "auth.json").write_text('{"OPENAI_API_KEY": "sk-secret-a"}')
    (home / "state_5.sqlite").write_bytes(b"SQLite format 3\x00 (a stand-in)")
    (home / "config.toml").write_text('model = "gpt-5.5"\n')
    return rollout


def rel(paths: tuple[Path, ...], root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in paths}


# =========================================================================== Claude


def test_claude_copies_the_transcript_and_leaves_the_source_alone(tmp_path: Path,
                                                                    git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    source = claude_account(a, git_repo, "g_resume", SESSION)
    before = tree(a)

    result = carry_conversation("claude", SESSION, git_repo, claude_env(a), claude_env(b))

    assert result.possible, result.reason
    target = ClaudeHome(b).transcript(git_repo, SESSION)
    assert result.source == source
    assert result.target == target
    assert result.copied == (target,)
    assert result.replaced == ()
    assert target.read_bytes() == source.read_bytes()
    assert tree(a) == before                       # nothing in the source changed
    assert set(tree(b)) == {str(target.relative_to(b))}   # and only the transcript was added
    assert "Copied 1" in result.reason


def test_claude_carries_subagents_and_the_task_list_but_no_lock(tmp_path: Path,
                                                                 git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, git_repo, "w_subagent", SUBAGENT_SESSION)
    claude_account(a, git_repo, "o_task_tools", TASK_SESSION)

    sub = carry_conversation("claude", SUBAGENT_SESSION, git_repo, claude_env(a), claude_env(b))
    tasks = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(a), claude_env(b))

    assert sub.possible, sub.reason
    assert tasks.possible, tasks.reason
    project = ClaudeHome(b).transcript(git_repo, SUBAGENT_SESSION).parent
    assert {p.name for p in sub.copied} == {
        f"{SUBAGENT_SESSION}.jsonl", "agent-a163d17cca5a8b83d.jsonl",
        "agent-a163d17cca5a8b83d.meta.json"}
    assert (project / SUBAGENT_SESSION / "subagents" / "agent-a163d17cca5a8b83d.jsonl").is_file()
    assert sub.copied[-1].name == f"{SUBAGENT_SESSION}.jsonl"   # the transcript comes last
    assert tasks.target is not None
    assert rel(tasks.copied, b) == {f"tasks/{TASK_SESSION}/1.json", str(tasks.target.relative_to(b))}
    assert not (b / "tasks" / TASK_SESSION / ".lock").exists()
    assert a / "tasks" / TASK_SESSION / ".lock" in tasks.skipped
    assert not (b / ".claude.json").exists()      # the account's own settings stay its own


def test_claude_never_copies_credentials_or_follows_links(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    source = claude_account(a, git_repo, "w_subagent", SUBAGENT_SESSION)
    (a / ".credentials.json").write_text('{"claudeAiOauth": {"accessToken": "sk-ant-oat-A"}}')
    session_dir = source.with_suffix("")
    (session_dir / ".credentials.json").write_text("planted")
    (session_dir / "subagents" / "auth.json").write_text("planted")
    (session_dir / "creds-link.json").symlink_to(a / ".credentials.json")
    (session_dir / "linked-dir").symlink_to(a)
    b.mkdir()
    (b / ".credentials.json").write_text('{"claudeAiOauth": {"accessToken": "sk-ant-oat-B"}}')

    result = carry_conversation("claude", SUBAGENT_SESSION, git_repo, claude_env(a), claude_env(b))

    assert result.possible, result.reason
    copied = tree(b)
    assert not [name for name in copied if "auth.json" in name or "creds-link" in name
                or "linked-dir" in name or name.endswith("/.credentials.json")]
    assert (b / ".credentials.json").read_text() == '{"claudeAiOauth": {"accessToken": "sk-ant-oat-B"}}'
    assert b"sk-ant-oat-A" not in b"".join(copied.values())
    assert {session_dir / ".credentials.json", session_dir / "subagents" / "auth.json",
            session_dir / "creds-link.json", session_dir / "linked-dir"} <= set(result.skipped)


def test_claude_leaves_the_targets_other_files_alone(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, git_repo, "g_resume", SESSION)
    other = claude_account(b, git_repo, "g_resume", "b4686fc4-c074-43c9-9285-a2e49ace8858")
    (b / ".credentials.json").write_text("B's own")
    before = tree(b)

    result = carry_conversation("claude", SESSION, git_repo, claude_env(a), claude_env(b))

    assert result.possible, result.reason
    after = tree(b)
    assert {k: v for k, v in after.items() if k in before} == before
    assert set(after) - set(before) == rel(result.copied, b)
    assert other.is_file()


def test_claude_missing_transcript_is_reported(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    result = carry_conversation("claude", SESSION, git_repo, claude_env(a), claude_env(b))
    assert not result.possible
    assert result.reason.startswith("No transcript at ")
    assert str(ClaudeHome(a).transcript(git_repo, SESSION)) in result.reason
    assert not b.exists()


def test_claude_transcript_of_another_directory_is_named(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, tmp_path / "elsewhere", "g_resume", SESSION)
    result = carry_conversation("claude", SESSION, git_repo, claude_env(a), claude_env(b))
    assert not result.possible
    assert "another project folder" in result.reason
    assert "elsewhere" in result.reason


@pytest.mark.parametrize(("mangle", "expected"), [
    (lambda text: text.replace("\n", "\n{not json\n", 1), "is corrupt: line 2 is not valid JSON"),
    (lambda text: text + "[1, 2]\n", "is corrupt: line 10 is not a JSON object"),
    (lambda text: text[:-40], "is truncated"),
    (lambda text: "", "is empty"),
    (lambda text: "\n".join(line for line in text.splitlines()
                            if '"type":"user"' not in line and '"type":"assistant"' not in line)
     + "\n", "holds no message of session"),
])
def test_claude_damaged_transcripts_are_refused_and_nothing_is_written(
        tmp_path: Path, git_repo: Path, mangle: Callable[[str], str], expected: str) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    source = claude_account(a, git_repo, "w_subagent", SUBAGENT_SESSION)
    assert len(source.read_text().splitlines()) == 9
    source.write_text(mangle(source.read_text()))
    result = carry_conversation("claude", SUBAGENT_SESSION, git_repo, claude_env(a), claude_env(b))
    assert not result.possible
    assert expected in result.reason, result.reason
    assert result.copied == ()
    assert not b.exists()


def test_claude_source_transcript_that_is_a_link_is_refused(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    source = claude_account(a, git_repo, "g_resume", SESSION)
    real = tmp_path / "real.jsonl"
    source.rename(real)
    source.symlink_to(real)
    result = carry_conversation("claude", SESSION, git_repo, claude_env(a), claude_env(b))
    assert not result.possible
    assert "not a regular file" in result.reason


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "not-a-uuid", SESSION + "\n", ""])
def test_claude_malformed_session_id(tmp_path: Path, git_repo: Path, bad_id: str) -> None:
    result = carry_conversation("claude", bad_id, git_repo, claude_env(tmp_path / "a"),
                                claude_env(tmp_path / "b"))
    assert not result.possible
    assert "is not a Claude Code session id" in result.reason
    assert not (tmp_path / "b").exists()


def test_carrying_twice_changes_nothing_the_second_time(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, git_repo, "o_task_tools", TASK_SESSION)
    first = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(a), claude_env(b))
    stamps = {p: p.stat().st_mtime_ns for p in first.copied}
    second = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(a), claude_env(b))
    assert first.possible
    assert second.possible
    assert (second.copied, second.replaced) == ((), ())
    assert second.reason == "The target account already has this conversation."
    assert {p: p.stat().st_mtime_ns for p in first.copied} == stamps


def test_round_trip_brings_an_older_copy_up_to_date(tmp_path: Path, git_repo: Path) -> None:
    """A → B, B continues (appends, updates its task list), B → A: A's copy is updated."""
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, git_repo, "o_task_tools", TASK_SESSION)
    there = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(a), claude_env(b))
    assert there.possible
    assert there.target is not None
    continued = there.target.read_text() + there.target.read_text().splitlines()[-1] + "\n"
    there.target.write_text(continued)
    (b / "tasks" / TASK_SESSION / "1.json").write_text('{"id": "1", "status": "completed"}')

    back = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(b), claude_env(a))

    assert back.possible, back.reason
    assert back.copied == ()
    assert set(back.replaced) == {a / "tasks" / TASK_SESSION / "1.json",
                                  ClaudeHome(a).transcript(git_repo, TASK_SESSION)}
    assert ClaudeHome(a).transcript(git_repo, TASK_SESSION).read_text() == continued
    assert "completed" in (a / "tasks" / TASK_SESSION / "1.json").read_text()
    assert not list(a.rglob("*.tmp"))


def test_a_target_that_went_further_is_left_alone(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, git_repo, "o_task_tools", TASK_SESSION)
    there = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(a), claude_env(b))
    assert there.target is not None
    further = there.target.read_text() + there.target.read_text().splitlines()[-1] + "\n"
    there.target.write_text(further)
    (b / "tasks" / TASK_SESSION / "1.json").write_text("B's newer list")

    again = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(a), claude_env(b))

    assert again.possible, again.reason
    assert "continued further" in again.reason
    assert (again.copied, again.replaced) == ((), ())
    assert there.target.read_text() == further
    assert (b / "tasks" / TASK_SESSION / "1.json").read_text() == "B's newer list"


def test_a_different_conversation_under_the_same_id_is_a_conflict(tmp_path: Path,
                                                                 git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, git_repo, "o_task_tools", TASK_SESSION)
    target = ClaudeHome(b).transcript(git_repo, TASK_SESSION)
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps({"type": "user", "sessionId": TASK_SESSION,
                                  "message": {"content": "other"}}) + "\n")
    before = tree(b)

    result = carry_conversation("claude", TASK_SESSION, git_repo, claude_env(a), claude_env(b))

    assert not result.possible
    assert "already has a different transcript" in result.reason
    assert result.target == target
    assert tree(b) == before                       # not even the task list was copied


def test_same_folder_needs_no_copy(tmp_path: Path, git_repo: Path) -> None:
    a = tmp_path / "a"
    claude_account(a, git_repo, "g_resume", SESSION)
    before = tree(a)
    result = carry_conversation("claude", SESSION, git_repo, claude_env(a),
                                claude_env(tmp_path / "." / "a"))
    assert result.possible
    assert "same folder" in result.reason
    assert tree(a) == before


def test_a_write_error_is_reported_not_raised(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    claude_account(a, git_repo, "g_resume", SESSION)
    b.mkdir()
    (b / "projects").write_text("a file where the projects folder should be")
    result = carry_conversation("claude", SESSION, git_repo, claude_env(a), claude_env(b))
    assert not result.possible
    assert result.reason.startswith("Cannot "), result.reason


def test_unknown_runtime_is_not_possible(tmp_path: Path, git_repo: Path) -> None:
    result = carry_conversation("gemini", SESSION, git_repo, {}, {})
    assert result == CarryResult("gemini", SESSION, False, result.reason)
    assert "'gemini' has no native carry-over" in result.reason


def test_a_new_file_is_never_overwritten_even_in_a_race(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    target.write_text("appeared meanwhile")
    with pytest.raises(carryover._Appeared):
        carryover._create_atomic(target, b"carried\n")
    assert target.read_text() == "appeared meanwhile"
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]   # no temporary file left


# =========================================================================== Codex


def test_codex_copies_the_rollout_only(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    source = codex_account(a)
    before = tree(a)

    result = carry_conversation("codex", THREAD, git_repo, codex_env(a), codex_env(b))

    assert result.possible, result.reason
    assert result.source == source
    assert result.target == b / ROLLOUT
    assert result.copied == (b / ROLLOUT,)
    assert (b / ROLLOUT).read_bytes() == source.read_bytes()
    assert set(tree(b)) == {ROLLOUT}              # no auth.json, no state db, no config
    assert tree(a) == before


def test_codex_home_defaults_to_home_dot_codex(tmp_path: Path, git_repo: Path) -> None:
    codex_account(tmp_path / "home-a" / ".codex")
    result = carry_conversation("codex", THREAD, git_repo, {"HOME": str(tmp_path / "home-a")},
                                {"HOME": str(tmp_path / "home-b")})
    assert result.possible, result.reason
    assert (tmp_path / "home-b" / ".codex" / ROLLOUT).is_file()


def test_codex_missing_rollout(tmp_path: Path, git_repo: Path) -> None:
    result = carry_conversation("codex", THREAD, git_repo, codex_env(tmp_path / "a"),
                                codex_env(tmp_path / "b"))
    assert not result.possible
    assert result.reason.startswith(f"No rollout of Codex thread {THREAD}")


def test_codex_rollout_of_another_thread_is_refused(tmp_path: Path, git_repo: Path) -> None:
    a = tmp_path / "a"
    source = codex_account(a)
    source.write_text(source.read_text().replace(f'"id": "{THREAD}"', '"id": "someone-else"')
                      .replace(f'"session_id": "{THREAD}"', '"session_id": "someone-else"'))
    result = carry_conversation("codex", THREAD, git_repo, codex_env(a), codex_env(tmp_path / "b"))
    assert not result.possible
    assert "does not start with the session_meta of thread" in result.reason


def test_codex_corrupt_rollout_is_refused(tmp_path: Path, git_repo: Path) -> None:
    a = tmp_path / "a"
    source = codex_account(a)
    lines = source.read_text().splitlines(keepends=True)
    lines[5] = lines[5][: len(lines[5]) // 2] + "\n"
    source.write_text("".join(lines))
    result = carry_conversation("codex", THREAD, git_repo, codex_env(a), codex_env(tmp_path / "b"))
    assert not result.possible
    assert "is corrupt: line 6 is not valid JSON" in result.reason
    assert not (tmp_path / "b").exists()


def test_codex_second_rollout_of_the_same_thread_is_a_conflict(tmp_path: Path,
                                                              git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    codex_account(a)
    elsewhere = b / "sessions/2026/12/01" / Path(ROLLOUT).name.replace("10-09-25", "11-00-00")
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text("{}\n")
    result = carry_conversation("codex", THREAD, git_repo, codex_env(a), codex_env(b))
    assert not result.possible
    assert "already has a rollout of thread" in result.reason
    assert result.target == elsewhere
    assert not (b / ROLLOUT).exists()


def test_codex_round_trip_updates_the_older_rollout(tmp_path: Path, git_repo: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    codex_account(a)
    there = carry_conversation("codex", THREAD, git_repo, codex_env(a), codex_env(b))
    assert there.possible
    with (b / ROLLOUT).open("a") as fh:
        fh.write('{"timestamp": "2026-11-30T11:00:00.000Z", "type": "event_msg", '
                 '"payload": {"type": "task_started"}}\n')
    back = carry_conversation("codex", THREAD, git_repo, codex_env(b), codex_env(a))
    assert back.possible, back.reason
    assert back.replaced == (a / ROLLOUT,)
    assert (a / ROLLOUT).read_bytes() == (b / ROLLOUT).read_bytes()
    assert (a / "auth.json").read_text() == '{"OPENAI_API_KEY": "sk-secret-a"}'
