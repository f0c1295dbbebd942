"""Reading Gemini CLI's own files: its folder, the auth type it will use, a session's chat."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from relay.runtimes.gemini_files import (
    API_KEY_AUTH,
    GATEWAY_AUTH,
    auth_from_env,
    auth_setup,
    chat_state,
    find_chat,
    read_chat,
)
from tests.conftest import fixtures_root

CAPTURES = fixtures_root() / "gemini" / "captures"
PIN = {"security": {"auth": {"selectedType": "gemini-api-key"}}}


def capture_home(scenario: str, tmp_path: Path) -> Path:
    """A copy of the capture's ``~/.gemini`` as ``<home>/.gemini``; returns the home."""
    home = tmp_path / scenario
    shutil.copytree(CAPTURES / scenario / "dot_gemini", home / ".gemini")
    return home


def write_settings(folder: Path, settings: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings))


# ---------------------------------------------------------------------------
# Folder and auth
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("env", "expected"), [
    ({}, None),
    ({"GEMINI_API_KEY": "k"}, API_KEY_AUTH),
    # the trap: a base URL makes it "gateway", ahead of the key
    ({"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1"}, GATEWAY_AUTH),
    ({"GOOGLE_GENAI_USE_GCA": "true", "GEMINI_API_KEY": "k"}, "oauth-personal"),
    ({"GOOGLE_GENAI_USE_VERTEXAI": "true"}, "vertex-ai"),
    ({"GEMINI_CLI_USE_COMPUTE_ADC": "true"}, "compute-default-credentials"),
])
def test_auth_from_the_environment_follows_gemini_cli(env: dict[str, str],
                                                      expected: str | None) -> None:
    assert auth_from_env(env) == expected


def test_a_pinned_type_wins_over_the_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_settings(home / ".gemini", PIN)
    env = {"GEMINI_CLI_HOME": str(home), "GOOGLE_GEMINI_BASE_URL": "http://x"}
    setup = auth_setup(env, tmp_path / "repo")
    assert setup is not None
    assert (setup.selected, setup.effective) == (API_KEY_AUTH, API_KEY_AUTH)
    assert setup.settings_path == home / ".gemini" / "settings.json"


def test_the_workspace_settings_win_over_the_users(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    write_settings(home / ".gemini", {"security": {"auth": {"selectedType": "oauth-personal"}}})
    write_settings(repo / ".gemini", {"security": {"auth": {"useExternal": True,
                                                            "selectedType": "gateway"}}})
    setup = auth_setup({"HOME": str(home)}, repo)
    assert setup is not None
    assert (setup.selected, setup.use_external) == ("gateway", True)


def test_no_settings_and_no_environment_is_no_auth(tmp_path: Path) -> None:
    setup = auth_setup({"HOME": str(tmp_path)}, tmp_path / "repo")
    assert setup is not None
    assert (setup.selected, setup.effective) == (None, None)


def test_settings_that_are_not_json_leave_the_verdict_to_gemini(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text('{ // a comment\n "a": 1 }')
    assert auth_setup({"HOME": str(tmp_path)}, tmp_path / "repo") is None


# ---------------------------------------------------------------------------
# Chats
# ---------------------------------------------------------------------------


def test_find_and_read_a_resumed_chat(tmp_path: Path) -> None:
    home = capture_home("f_resume_latest", tmp_path)
    sid = "12f9aa18-f5b4-4ac2-9527-b6e0d84f2a11"
    chat = find_chat(home / ".gemini", sid)
    assert chat is not None
    assert chat.name.endswith(f"-{sid[:8]}.jsonl")
    state = read_chat(chat)
    assert state is not None
    assert (state.resumable, state.rolled_back) == (True, None)
    assert (state.last_answer, state.model) == ("Still PINEAPPLE.", "gemini-2.5-pro")


def test_find_chat_checks_the_whole_id(tmp_path: Path) -> None:
    home = capture_home("f_resume_latest", tmp_path)
    assert find_chat(home / ".gemini", "12f9aa18-0000-4000-8000-000000000000") is None
    assert find_chat(home / ".gemini", "latest") is None
    assert find_chat(tmp_path / "nowhere", "12f9aa18-f5b4-4ac2-9527-b6e0d84f2a11") is None


@pytest.mark.parametrize("scenario", ["d_429_daily_quota", "c2_429_rate_limit_exhausted"])
def test_a_failed_first_prompt_is_rolled_back_and_leaves_nothing_to_resume(
        scenario: str, tmp_path: Path) -> None:
    home = capture_home(scenario, tmp_path)
    (chat,) = (home / ".gemini" / "tmp").glob("*/chats/*.jsonl")
    state = read_chat(chat)
    assert state is not None
    assert (state.resumable, state.rolled_back, state.last_answer) == (False, "Say hello", None)


def test_a_failed_later_prompt_is_rolled_back_but_the_session_resumes() -> None:
    records: list[dict[str, Any]] = [
        {"sessionId": "s", "projectHash": "h"},
        {"$set": {"messages": [{"id": "ctx", "type": "user",
                                "content": [{"text": "<session_context>..."}]}]}},
        {"id": "u1", "type": "user", "content": [{"text": "First"}]},
        {"id": "g1", "type": "gemini", "content": "First answer.", "model": "m"},
        {"sessionId": "s", "projectHash": "h"},
        {"id": "u2", "type": "user", "content": [{"text": "Second"}]},
        {"$set": {"messages": [{"id": "ctx", "type": "user", "content": "<session_context>"},
                               {"id": "u1", "type": "user", "content": [{"text": "First"}]},
                               {"id": "g1", "type": "gemini", "content": "First answer."}]}},
    ]
    state = chat_state(records)
    assert (state.resumable, state.rolled_back) == (True, "Second")
    assert state.last_answer == "First answer."


def test_the_last_answer_follows_the_last_prompt_and_merges_rewrites() -> None:
    records: list[dict[str, Any]] = [
        {"id": "u1", "type": "user", "content": [{"text": "Do it"}]},
        {"id": "g1", "type": "gemini", "content": "Working."},
        {"id": "g1", "type": "gemini", "content": "Working.", "toolCalls": [{"id": "t"}]},
        {"id": "r1", "type": "user", "content": [{"functionResponse": {"id": "t"}}]},
        {"id": "g2", "type": "gemini", "content": "", "model": "m"},
        {"id": "g3", "type": "gemini", "content": [{"text": "Done."}], "model": "m2"},
    ]
    state = chat_state(records)
    assert (state.last_answer, state.model) == ("Done.", "m2")
    asked_again = chat_state([*records, {"id": "u2", "type": "user", "content": "Next?"}])
    assert asked_again.last_answer is None  # no reply to the last prompt yet


def test_rewind_drops_the_later_messages() -> None:
    records: list[dict[str, Any]] = [{"id": "u1", "type": "user", "content": "One"},
               {"id": "g1", "type": "gemini", "content": "A"},
               {"$rewindTo": "u1"}]
    assert chat_state(records).resumable is False


@pytest.mark.parametrize("scenario", sorted(p.name for p in CAPTURES.iterdir()
                                            if (p / "dot_gemini" / "tmp").is_dir()))
def test_every_captured_chat_reads(scenario: str, tmp_path: Path) -> None:
    chats = list((CAPTURES / scenario / "dot_gemini" / "tmp").glob("*/chats/*.jsonl"))
    for chat in chats:
        assert read_chat(chat) is not None
