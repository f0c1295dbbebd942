"""Native carry-over with the real CLIs: a conversation started under account A resumes
under account B after :func:`relay.sessions.carryover.carry_conversation`.

Each account is its own state folder (``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``) with its
own API key, so the mock sees which account made each request. Every test first checks
that B cannot resume before the carry (so the carry is what makes it work), then that
B's resumed request re-sends A's earlier turns under the same session id, and that A's
files were not touched.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from relay.runtimes.claude_input import user_line
from relay.runtimes.codex import CodexAdapter, find_rollout
from relay.sessions.carryover import carry_conversation
from tests.fakes import mock_anthropic, mock_openai
from tests.integration.helpers import (
    CODEX_API_KEY,
    claude_env,
    claude_transcript,
    codex_env,
    of_type,
    only,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    real_codex_fixture,  # noqa: F401  (fixture "real_codex")
    run_cli,
)

pytestmark = pytest.mark.integration

KEY_A, KEY_B = "test-key-account-a", "test-key-account-b"
BRIEF = "# Continuation contract\nYou continue task RELAY-CARRY-BRIEF-5150 for another account.\n"


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    """Every text of a Messages API ``messages`` list, in order."""
    found: list[str] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            found.append(content)
            continue
        found += [str(b["text"]) for b in content if isinstance(b, dict) and "text" in b]
    return found


# =========================================================================== Claude Code


def test_claude_conversation_resumes_under_another_account(real_claude: Path, git_repo: Path,
                                                           tmp_path: Path) -> None:
    brief = tmp_path / "brief.md"
    brief.write_text(BRIEF)
    script = {"turns": [{"text": "Noted: the word is PINEAPPLE."},
                        {"text": "The word was PINEAPPLE."}]}
    with mock_anthropic.serve(script) as mock:
        env_a = claude_env(tmp_path / "a", mock, extra={"ANTHROPIC_API_KEY": KEY_A})
        env_b = claude_env(tmp_path / "b", mock, extra={"ANTHROPIC_API_KEY": KEY_B,
                                                        "RELAY_CLAUDE_BIN": str(real_claude)})
        session = str(uuid.uuid4())
        first = run_cli([real_claude, "-p", "Remember the word PINEAPPLE", "--output-format",
                         "stream-json", "--verbose", "--session-id", session],
                        env=env_a, cwd=git_repo)
        assert first.returncode == 0, first.describe()
        source = claude_transcript(env_a, git_repo, session)
        source_bytes = source.read_bytes()

        # The real CLI under B does not know the session before the carry …
        resume = ClaudeAdapter(env_b).build_argv(RunRequest(
            prompt="What was the word?", cwd=git_repo, resume_id=session, brief_file=brief))
        prompt = user_line("What was the word?").decode()  # the adapter's first stdin line
        refused = run_cli(resume, env=env_b, cwd=git_repo, stdin=prompt)
        assert refused.returncode == 1, refused.describe()
        assert f"No conversation found with session ID: {session}" in refused.stderr

        carried = carry_conversation("claude", session, git_repo, env_a, env_b)
        assert carried.possible, carried.reason
        assert carried.target == claude_transcript(env_b, git_repo, session)

        # … and resumes it after the carry, as account B, with the brief appended.
        second = run_cli(resume, env=env_b, cwd=git_repo, stdin=prompt)
        requests = mock.message_requests()

    assert second.returncode == 0, second.describe()
    events = second.events()
    assert only(events, "system", "init", run=second)["session_id"] == session
    result = only(events, "result", run=second)
    assert result["is_error"] is False, second.describe()
    assert result["result"] == "The word was PINEAPPLE."

    assert [r["headers"]["x-api-key"] for r in requests] == [KEY_A, KEY_B]
    resumed = requests[1]
    assert resumed["headers"]["X-Claude-Code-Session-Id"] == session
    texts = _texts(resumed["body"]["messages"])
    # A's turns, then B's prompt: the real CLI accepted the carried transcript
    earlier = [i for i, t in enumerate(texts) if "Remember the word PINEAPPLE" in t]
    answer = texts.index("Noted: the word is PINEAPPLE.")
    latest = [i for i, t in enumerate(texts) if "What was the word?" in t]
    assert earlier, texts
    assert latest, texts
    assert earlier[0] < answer < latest[-1]
    assert BRIEF.strip() in resumed["body"]["system"][-1]["text"]

    assert source.read_bytes() == source_bytes          # A's transcript is untouched
    grown = claude_transcript(env_b, git_repo, session).read_bytes()
    assert grown.startswith(source_bytes)
    assert len(grown) > len(source_bytes)               # B appended to its own copy
    assert not (Path(env_b["CLAUDE_CONFIG_DIR"]) / ".credentials.json").exists()


def test_claude_round_trip_back_to_the_first_account(real_claude: Path, git_repo: Path,
                                                     tmp_path: Path) -> None:
    """A → B → A: the turn added under B reaches A's resumed request."""
    script = {"turns": [{"text": "Noted: PINEAPPLE."}, {"text": "Noted: MANGO."},
                        {"text": "PINEAPPLE and MANGO."}]}
    flags = ["--output-format", "stream-json", "--verbose"]
    with mock_anthropic.serve(script) as mock:
        env_a = claude_env(tmp_path / "a", mock, extra={"ANTHROPIC_API_KEY": KEY_A})
        env_b = claude_env(tmp_path / "b", mock, extra={"ANTHROPIC_API_KEY": KEY_B})
        session = str(uuid.uuid4())
        runs = [run_cli([real_claude, "-p", "Remember PINEAPPLE", *flags, "--session-id", session],
                        env=env_a, cwd=git_repo)]
        assert carry_conversation("claude", session, git_repo, env_a, env_b).possible
        runs.append(run_cli([real_claude, "-p", "Remember MANGO", *flags, "--resume", session],
                            env=env_b, cwd=git_repo))
        back = carry_conversation("claude", session, git_repo, env_b, env_a)
        runs.append(run_cli([real_claude, "-p", "Both words?", *flags, "--resume", session],
                            env=env_a, cwd=git_repo))
        requests = mock.message_requests()

    for run in runs:
        assert run.returncode == 0, run.describe()
    assert back.possible, back.reason
    assert back.replaced == (claude_transcript(env_a, git_repo, session),)
    assert [r["headers"]["x-api-key"] for r in requests] == [KEY_A, KEY_B, KEY_A]
    texts = _texts(requests[2]["body"]["messages"])
    assert "Noted: PINEAPPLE." in texts
    assert "Noted: MANGO." in texts
    assert only(runs[2].events(), "result", run=runs[2])["result"] == "PINEAPPLE and MANGO."


# =========================================================================== Codex


def _codex_texts(body: dict[str, Any]) -> list[str]:
    return [str(c.get("text")) for item in body["input"] if item.get("type") == "message"
            for c in item["content"]]


def test_codex_thread_resumes_under_another_account(real_codex: Path, git_repo: Path,
                                                    tmp_path: Path) -> None:
    script = {"turns": [{"text": "B's own thread."}, {"text": "Noted: the word is PINEAPPLE."},
                        {"text": "The word was PINEAPPLE."}]}
    with mock_openai.serve(script) as mock:
        env_a = codex_env(tmp_path / "a", mock)                         # MOCK_API_KEY = CODEX_API_KEY
        env_b = codex_env(tmp_path / "b", mock, extra={"MOCK_API_KEY": "sk-mock-account-b",
                                                       "RELAY_CODEX_BIN": str(real_codex)})
        # B is an account in use: its state database already records a thread of its own.
        own = run_cli([real_codex, "exec", "--json", "--skip-git-repo-check", "-C", git_repo,
                       "--", "B's own work"], env=env_b, cwd=git_repo)
        assert own.returncode == 0, own.describe()
        first = run_cli([real_codex, "exec", "--json", "--skip-git-repo-check", "--sandbox",
                         "workspace-write", "-C", git_repo, "--", "Remember the word PINEAPPLE"],
                        env=env_a, cwd=git_repo)
        assert first.returncode == 0, first.describe()
        thread = only(first.events(), "thread.started", run=first)["thread_id"]
        source = find_rollout(Path(env_a["CODEX_HOME"]), thread)
        assert source is not None
        source_bytes = source.read_bytes()

        resume = CodexAdapter(env_b).build_argv(RunRequest(
            prompt="What was the word?", cwd=git_repo, resume_id=thread))
        prompt = user_line("What was the word?").decode()  # the adapter's first stdin line
        refused = run_cli(resume, env=env_b, cwd=git_repo, stdin=prompt)
        assert refused.returncode == 1, refused.describe()
        assert f"no rollout found for thread id {thread}" in refused.stderr

        carried = carry_conversation("codex", thread, git_repo, env_a, env_b)
        assert carried.possible, carried.reason
        assert carried.copied == (Path(env_b["CODEX_HOME"]) / source.relative_to(env_a["CODEX_HOME"]),)

        second = run_cli(resume, env=env_b, cwd=git_repo, stdin=prompt)
        requests = mock.response_requests()

    assert second.returncode == 0, second.describe()
    events = second.events()
    assert only(events, "thread.started", run=second)["thread_id"] == thread
    answers = [e["item"]["text"] for e in of_type(events, "item.completed")
               if e["item"]["type"] == "agent_message"]
    assert answers == ["The word was PINEAPPLE."]

    assert [r["headers"]["authorization"] for r in requests] == [
        "Bearer sk-mock-account-b", f"Bearer {CODEX_API_KEY}", "Bearer sk-mock-account-b"]
    resumed = requests[2]
    assert resumed["headers"]["session-id"] == thread
    texts = _codex_texts(resumed["body"])
    assert texts.index("Remember the word PINEAPPLE") < texts.index(
        "Noted: the word is PINEAPPLE.") < texts.index("What was the word?")
    assert texts[-1] == "What was the word?"

    assert source.read_bytes() == source_bytes          # A's rollout is untouched
    assert not (Path(env_b["CODEX_HOME"]) / "auth.json").exists()


def test_codex_round_trip_back_to_the_first_account(real_codex: Path, git_repo: Path,
                                                    tmp_path: Path) -> None:
    """A → B → A: A's state database already knows the thread; the updated rollout wins."""
    script = {"turns": [{"text": "Noted: PINEAPPLE."}, {"text": "Noted: MANGO."},
                        {"text": "PINEAPPLE and MANGO."}]}
    with mock_openai.serve(script) as mock:
        env_a = codex_env(tmp_path / "a", mock)
        env_b = codex_env(tmp_path / "b", mock, extra={"MOCK_API_KEY": "sk-mock-account-b"})
        first = run_cli([real_codex, "exec", "--json", "--skip-git-repo-check", "-C", git_repo,
                         "--", "Remember PINEAPPLE"], env=env_a, cwd=git_repo)
        thread = only(first.events(), "thread.started", run=first)["thread_id"]
        assert carry_conversation("codex", thread, git_repo, env_a, env_b).possible
        second = run_cli([real_codex, "exec", "resume", "--json", "--skip-git-repo-check", "--",
                          thread, "Remember MANGO"], env=env_b, cwd=git_repo)
        back = carry_conversation("codex", thread, git_repo, env_b, env_a)
        third = run_cli([real_codex, "exec", "resume", "--json", "--skip-git-repo-check", "--",
                         thread, "Both words?"], env=env_a, cwd=git_repo)
        requests = mock.response_requests()

    for run in (first, second, third):
        assert run.returncode == 0, run.describe()
    assert back.possible, back.reason
    assert len(back.replaced) == 1
    texts = _codex_texts(requests[2]["body"])
    assert "Noted: PINEAPPLE." in texts
    assert "Noted: MANGO." in texts
    assert texts[-1] == "Both words?"
    assert requests[2]["headers"]["authorization"] == f"Bearer {CODEX_API_KEY}"
    assert json.loads(third.stdout.splitlines()[0])["thread_id"] == thread
