"""The continuation brief (``RunRequest.brief_file``) reaches the agent's system prompt.

Claude Code 2.1.197: ``--append-system-prompt-file <path>`` (new and resumed sessions).
Codex 0.171.0: ``-c developer_instructions=<TOML string>`` for a new thread; nothing on
``exec resume`` (codex ignores new developer instructions there — pinned below).

Unit tests check the argv; the fakes check what a run passes; the tests marked
``integration`` run the adapters' argv with the real pinned CLIs against the loopback
mocks and look at the model request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import ContractError
from relay.core.events import SessionEnded
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import BRIEF_FLAG, ClaudeAdapter
from relay.runtimes.claude_input import user_line
from relay.runtimes.codex import (
    BRIEF_CONFIG_KEY,
    MAX_BRIEF_ARG,
    CodexAdapter,
    toml_string,
    user_developer_instructions,
)
from tests.conftest import FAKES_DIR
from tests.fakes import mock_anthropic, mock_openai
from tests.integration.helpers import (
    claude_env,
    codex_env,
    only,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    real_codex_fixture,  # noqa: F401  (fixture "real_codex")
    run_cli,
)
from tests.runtimes.run_helpers import collect

BRIEF = ("# Continuation contract\n\nYou take over task RELAY-BRIEF-7731 from another agent.\n"
         "Done: \"parser\" & tests; next: C:\\path\\to\\file, `x = 1`\ttabbed.\n"
         "Ünïcode — ok ✓ 🚀 and a triple quote \"\"\" and 'single'.\n")


@pytest.fixture
def brief(tmp_path: Path) -> Path:
    path = tmp_path / "brief" / "envelope.md"
    path.parent.mkdir()
    path.write_text(BRIEF, encoding="utf-8")
    return path


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def config_values(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-c"]


def developer_instructions(argv: list[str]) -> str | None:
    """The decoded ``developer_instructions`` a codex argv sets (as codex parses -c)."""
    found = [v for v in config_values(argv) if v.startswith(f"{BRIEF_CONFIG_KEY}=")]
    assert len(found) <= 1, argv
    if not found:
        return None
    value = tomllib.loads(found[0])[BRIEF_CONFIG_KEY]
    assert isinstance(value, str)
    return value


# =========================================================================== Claude argv


def test_claude_new_session_appends_the_brief_file(fakes_on_path: Path, brief: Path,
                                                   git_repo: Path) -> None:
    argv = ClaudeAdapter().build_argv(RunRequest(prompt="Continue the task.", cwd=git_repo,
                                                 brief_file=brief))
    assert option(argv, BRIEF_FLAG) == str(brief)
    assert argv.count(BRIEF_FLAG) == 1
    assert "--append-system-prompt" not in argv            # exclusive with the file flag
    assert "Continue the task." not in argv                # the prompt goes to stdin as it is
    assert option(argv, "--session-id") is not None


def test_claude_resume_appends_the_brief_file_too(fakes_on_path: Path, brief: Path,
                                                  git_repo: Path) -> None:
    sid = str(uuid.uuid4())
    argv = ClaudeAdapter().build_argv(RunRequest(prompt="go on", cwd=git_repo, resume_id=sid,
                                                 brief_file=brief))
    assert option(argv, "--resume") == sid
    assert option(argv, BRIEF_FLAG) == str(brief)


def test_claude_relative_brief_is_taken_from_the_cwd(fakes_on_path: Path, git_repo: Path) -> None:
    argv = ClaudeAdapter().build_argv(RunRequest(prompt="p", cwd=git_repo,
                                                 brief_file=Path(".relay/brief.md")))
    assert option(argv, BRIEF_FLAG) == str(git_repo / ".relay" / "brief.md")


def test_claude_without_a_brief_has_no_flag(fakes_on_path: Path, git_repo: Path) -> None:
    argv = ClaudeAdapter().build_argv(RunRequest(prompt="p", cwd=git_repo))
    assert not [a for a in argv if a.startswith("--append-system-prompt")]


def test_brief_injection_is_declared_per_runtime() -> None:
    assert ClaudeAdapter.brief_injection(resuming=False) == BRIEF_FLAG
    assert ClaudeAdapter.brief_injection(resuming=True) == BRIEF_FLAG
    assert CodexAdapter.brief_injection(resuming=False) == "-c developer_instructions"
    assert CodexAdapter.brief_injection(resuming=True) is None


def test_claude_missing_brief_is_refused_before_the_start(git_repo: Path, tmp_path: Path) -> None:
    request = RunRequest(prompt="p", cwd=git_repo, brief_file=tmp_path / "gone.md")
    with pytest.raises(ContractError, match=r"gone\.md does not exist"):
        ClaudeAdapter().preflight(request)


# =========================================================================== the fake claude


@pytest.fixture
def fake_claude(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake on PATH, its own CLAUDE_CONFIG_DIR and an argv log; returns the log path."""
    log = tmp_path / "fake-claude.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    monkeypatch.delenv("RELAY_FAKE_INJECT_MALFORMED", raising=False)
    return log


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_a_claude_run_hands_the_brief_to_the_cli(fake_claude: Path, brief: Path,
                                                       git_repo: Path) -> None:
    events = await collect(ClaudeAdapter(), RunRequest(prompt="Continue.", cwd=git_repo,
                                                       brief_file=brief))
    assert isinstance(events[-1], SessionEnded)
    assert events[-1].outcome == "completed", events[-1]
    [entry] = logged(fake_claude)
    assert option(entry["argv"], BRIEF_FLAG) == str(brief)
    assert entry["append_system_prompt"] == BRIEF


def run_fake_claude(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(FAKES_DIR / "bin" / "claude"), *args], cwd=cwd,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=30, check=False)


def test_the_fake_refuses_a_missing_brief_like_the_real_cli(fake_claude: Path,
                                                            git_repo: Path) -> None:
    env = dict(os.environ)
    done = run_fake_claude("-p", "hi", "--output-format", "stream-json", "--verbose",
                           BRIEF_FLAG, "rel/nope.md", cwd=git_repo, env=env)
    assert done.returncode == 1
    assert done.stdout == ""
    # the text 2.1.197 prints (relative paths resolved against the cwd)
    assert done.stderr == f"Error: Append system prompt file not found: {git_repo}/rel/nope.md\n"


def test_the_fake_refuses_both_append_options(fake_claude: Path, brief: Path,
                                              git_repo: Path) -> None:
    done = run_fake_claude("-p", "hi", "--append-system-prompt", "x", BRIEF_FLAG, str(brief),
                           cwd=git_repo, env=dict(os.environ))
    assert done.returncode == 1
    assert done.stderr == ("Error: Cannot use both --append-system-prompt and "
                           "--append-system-prompt-file. Please use only one.\n")


# =========================================================================== Codex argv


@pytest.fixture
def codex_on_path(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake codex, an isolated CODEX_HOME and an argv log; returns the CODEX_HOME."""
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("RELAY_FAKE_LOG", str(tmp_path / "fake-codex.log"))
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    return home


def test_codex_new_thread_gets_the_brief_as_developer_instructions(
        codex_on_path: Path, brief: Path, git_repo: Path) -> None:
    argv = CodexAdapter().build_argv(RunRequest(prompt="Continue.", cwd=git_repo,
                                                brief_file=brief))
    assert developer_instructions(argv) == BRIEF
    assert argv[-2:] == ["--", "Continue."]                # the prompt is left as it is
    assert argv.index("-c") < argv.index("-C") < argv.index("--")


def test_codex_keeps_the_users_own_developer_instructions(
        codex_on_path: Path, brief: Path, git_repo: Path, tmp_path: Path) -> None:
    account = tmp_path / "account-b"
    account.mkdir()
    (account / "config.toml").write_text(
        'model = "gpt-5.5"\ndeveloper_instructions = """Always answer in English."""\n')
    request = RunRequest(prompt="p", cwd=git_repo, brief_file=brief,
                         extra_env={"CODEX_HOME": str(account)})   # the account's own folder
    argv = CodexAdapter().build_argv(request)
    assert developer_instructions(argv) == "Always answer in English.\n\n" + BRIEF


def test_codex_resume_injects_nothing(codex_on_path: Path, brief: Path, git_repo: Path) -> None:
    argv = CodexAdapter().build_argv(RunRequest(prompt="go on", cwd=git_repo, resume_id="t-1",
                                                brief_file=brief))
    assert developer_instructions(argv) is None
    assert argv[-3:] == ["--", "t-1", "go on"]


def test_codex_without_a_brief_has_no_developer_instructions(codex_on_path: Path,
                                                             git_repo: Path) -> None:
    assert developer_instructions(CodexAdapter().build_argv(RunRequest(prompt="p",
                                                                       cwd=git_repo))) is None


def test_codex_missing_or_oversized_brief_is_refused(codex_on_path: Path, git_repo: Path,
                                                     tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="Cannot read the continuation brief"):
        CodexAdapter().preflight(RunRequest(prompt="p", cwd=git_repo,
                                            brief_file=tmp_path / "gone.md"))
    big = tmp_path / "big.md"
    big.write_text("x" * MAX_BRIEF_ARG)
    with pytest.raises(ContractError, match="too large"):
        CodexAdapter().preflight(RunRequest(prompt="p", cwd=git_repo, brief_file=big))
    # a resumed thread does not use the brief, so it is not checked
    CodexAdapter().preflight(RunRequest(prompt="p", cwd=git_repo, resume_id="t-1",
                                        brief_file=tmp_path / "gone.md"))


@pytest.mark.parametrize("text", [
    BRIEF, "", 'a "quoted" \\ backslash', "tab\there\r\nCRLF", "bell\x07 nul\x00 del\x7f esc\x1b",
    "'''", '"""', "emoji 🚀 astral 𝔘", "key = value\n[table]\n",
])
def test_toml_string_round_trips(text: str) -> None:
    assert tomllib.loads(f"k = {toml_string(text)}")["k"] == text


def test_toml_string_replaces_a_lone_surrogate() -> None:
    encoded = toml_string("a\udcffb")
    assert tomllib.loads(f"k = {encoded}")["k"] == "a\ufffdb"


def test_user_developer_instructions_never_raises(tmp_path: Path) -> None:
    assert user_developer_instructions(tmp_path / "missing") == ""
    (tmp_path / "config.toml").write_text("this is = not [valid toml")
    assert user_developer_instructions(tmp_path) == ""
    (tmp_path / "config.toml").write_text("developer_instructions = 42\n")
    assert user_developer_instructions(tmp_path) == ""


async def test_a_codex_run_hands_the_brief_to_the_cli(codex_on_path: Path, brief: Path,
                                                      git_repo: Path, tmp_path: Path) -> None:
    events = await collect(CodexAdapter(), RunRequest(prompt="Continue.", cwd=git_repo,
                                                      brief_file=brief))
    assert isinstance(events[-1], SessionEnded)
    assert events[-1].outcome == "completed", events[-1]
    [entry] = logged(tmp_path / "fake-codex.log")
    assert developer_instructions(entry["argv"]) == BRIEF


# =========================================================================== the real CLIs


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    assert isinstance(system, list), body.get("system")
    return "\n".join(str(block.get("text", "")) for block in system)


def _messages_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


@pytest.mark.integration
def test_real_claude_puts_the_brief_in_the_system_prompt(real_claude: Path, brief: Path,
                                                         git_repo: Path, tmp_path: Path) -> None:
    with mock_anthropic.serve({"turns": [{"text": "Taking over."}]}) as mock:
        env = claude_env(tmp_path, mock, extra={"RELAY_CLAUDE_BIN": str(real_claude)})
        argv = ClaudeAdapter(env).build_argv(RunRequest(prompt="Continue the task.", cwd=git_repo,
                                                        brief_file=brief))
        run = run_cli(argv, env=env, cwd=git_repo,
                      stdin=user_line("Continue the task.").decode())  # the adapter's stdin
        requests = mock.message_requests()

    assert run.returncode == 0, run.describe()
    assert only(run.events(), "result", run=run)["result"] == "Taking over."
    assert len(requests) == 1
    body = requests[0]["body"]
    appended_to = body["system"][-1]["text"]
    # appended to the default prompt, before its trailing gitStatus section
    assert BRIEF.strip() in appended_to
    assert "gitStatus:" not in appended_to or (
        appended_to.index(BRIEF.strip()) < appended_to.index("gitStatus:"))
    assert "You are an interactive agent" in _system_text(body)   # the default prompt stays
    assert "RELAY-BRIEF-7731" not in _messages_text(body)        # the brief is not a message
    assert "Continue the task." in _messages_text(body)


@pytest.mark.integration
def test_real_codex_gets_the_brief_as_a_developer_message(real_codex: Path, brief: Path,
                                                          git_repo: Path, tmp_path: Path) -> None:
    with mock_openai.serve({"turns": [{"text": "Taking over."}]}) as mock:
        env = codex_env(tmp_path, mock, extra={"RELAY_CODEX_BIN": str(real_codex)})
        argv = CodexAdapter(env).build_argv(RunRequest(prompt="Continue the task.", cwd=git_repo,
                                                       brief_file=brief))
        run = run_cli(argv, env=env, cwd=git_repo)
        requests = mock.response_requests()

    assert run.returncode == 0, run.describe()
    assert len(requests) == 1
    messages = [i for i in requests[0]["body"]["input"] if i.get("type") == "message"]
    base, developer = messages[0], messages[1]
    assert base["role"] == developer["role"] == "developer"
    assert "RELAY-BRIEF-7731" not in json.dumps(base)               # codex's own prompt stays
    assert len(base["content"][0]["text"]) > 1000
    assert developer["content"][0]["text"] == BRIEF                 # verbatim through TOML
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"][0]["text"] == "Continue the task."


@pytest.mark.integration
def test_real_codex_resume_ignores_new_developer_instructions(real_codex: Path, git_repo: Path,
                                                              tmp_path: Path) -> None:
    """Why CodexAdapter injects nothing on resume: 0.171.0 keeps the thread's first ones."""
    with mock_openai.serve({"turns": [{"text": "One."}, {"text": "Two."}]}) as mock:
        env = codex_env(tmp_path, mock)
        first = run_cli([real_codex, "exec", "--json", "--skip-git-repo-check",
                         "-c", 'developer_instructions="FIRST-DEV-MARKER"', "-C", git_repo,
                         "--", "one"], env=env, cwd=git_repo)
        assert first.returncode == 0, first.describe()
        thread = only(first.events(), "thread.started", run=first)["thread_id"]
        second = run_cli([real_codex, "exec", "resume", "--json", "--skip-git-repo-check",
                          "-c", 'developer_instructions="SECOND-DEV-MARKER"', "--", thread, "two"],
                         env=env, cwd=git_repo)
        requests = mock.response_requests()

    assert second.returncode == 0, second.describe()
    resumed = json.dumps(requests[1]["body"]["input"])
    assert "FIRST-DEV-MARKER" in resumed
    assert "SECOND-DEV-MARKER" not in resumed
