"""Each CLI's home folder, against the layout the recorded captures left on disk.

A fake home is built from a capture's folder (``tests/fixtures/<cli>/captures/…``, the
placeholders ``CWD_ENCODED`` / ``--<CWD_ENCODED>--`` renamed for a real working folder),
then every lookup must find the recorded files. The decisions where Relay's copies
disagreed are pinned here (the module docstring gives the evidence).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from relay.core.agent_homes import (
    HOME_ENV,
    ClaudeHome,
    CodexHome,
    GeminiHome,
    PiHome,
    app_config_base,
    claude_home,
    cline_data_dir,
    codex_home,
    config_folder,
    continue_dir,
    default_folders,
    gemini_home,
    gemini_workspace_settings,
    pi_home,
    user_home,
)
from tests.conftest import fixtures_root

CAPTURES = fixtures_root()
CLAUDE_SESSION = "11111111-1111-4111-8111-111111111111"   # claude a_text_stream_json
CODEX_THREAD = "01a22bed-0904-78e3-b9c9-4d5201b401bf"     # codex a_text
PI_SESSION = "01a22bed-19b4-73fa-94a8-d48b4ab47f75"       # pi a2_text_plain


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    folder = tmp_path / "srv" / "my_proj" / "repo"
    folder.mkdir(parents=True)
    return folder


def claude_capture(target: Path, cwd: Path) -> Path:
    """claude a_text_stream_json's config folder as ``target``, its project folder renamed."""
    shutil.copytree(CAPTURES / "claude" / "captures" / "a_text_stream_json" / "config", target)
    (target / "projects" / "CWD_ENCODED").rename(ClaudeHome(target).project_dir(cwd))
    return target


def codex_capture(target: Path) -> Path:
    capture = CAPTURES / "codex" / "captures" / "a_text"
    shutil.copytree(capture / "sessions", target / "sessions")
    shutil.copy(capture / "config.toml", target / "config.toml")
    return target


def gemini_capture(target: Path) -> Path:
    capture = CAPTURES / "gemini" / "captures" / "a_text_stream_json"
    shutil.copytree(capture / "dot_gemini", target)
    shutil.copy(capture / "settings.json", target / "settings.json")
    return target


def pi_capture(target: Path, cwd: Path) -> Path:
    """pi a2_text_plain's ``~/.pi/agent`` as ``target``, its session folder renamed."""
    shutil.copytree(CAPTURES / "pi" / "captures" / "a2_text_plain" / "dot_pi" / "agent", target)
    (target / "sessions" / "--<CWD_ENCODED>--").rename(PiHome(target).session_folder(cwd))
    return target


# -- the user's home ------------------------------------------------------------------------


def test_the_user_home_is_home_or_userprofile_on_windows(tmp_path: Path) -> None:
    env = {"HOME": "/h", "USERPROFILE": "C:/Users/u"}
    assert user_home(env, platform="linux") == Path("/h")
    assert user_home(env, platform="darwin") == Path("/h")
    assert user_home(env, platform="win32") == Path("C:/Users/u")
    assert user_home({}, platform="linux") == Path.home()
    assert user_home({"HOME": ""}, platform="linux") == Path.home()


# -- Claude Code ----------------------------------------------------------------------------


def test_claude_default_home_finds_the_recorded_transcript(tmp_path: Path, cwd: Path) -> None:
    home = tmp_path / "home"
    claude_capture(home / ".claude", cwd)
    found = claude_home({"HOME": str(home)})
    assert found.root == home / ".claude"
    assert found.transcript(cwd, CLAUDE_SESSION).is_file()
    assert f'"sessionId":"{CLAUDE_SESSION}"' in found.transcript(cwd, CLAUDE_SESSION).read_text()
    assert found.projects.is_dir()
    assert (found.settings, found.credentials) == (home / ".claude" / "settings.json",
                                                   home / ".claude" / ".credentials.json")
    assert found.pid_file(42) == home / ".claude" / "sessions" / "42.json"
    assert found.tasks("s") == home / ".claude" / "tasks" / "s"
    assert found.file_history("s") == home / ".claude" / "file-history" / "s"


def test_claude_config_dir_is_the_whole_home(tmp_path: Path, cwd: Path) -> None:
    config = claude_capture(tmp_path / "work-claude", cwd)
    found = claude_home({"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(config)})
    assert found.root == config
    assert found.transcript(cwd, CLAUDE_SESSION).is_file()


def test_claude_project_folder_encoding() -> None:
    # NOTES §9: /srv/my_proj/repo → -srv-my-proj-repo
    assert ClaudeHome(Path("/cfg")).transcript(Path("/srv/my_proj/repo"), "s-1") == \
        Path("/cfg/projects/-srv-my-proj-repo/s-1.jsonl")


def test_claude_decisions_one_folder_no_list_no_xdg_no_tilde(tmp_path: Path) -> None:
    """Where Relay's copies disagreed: CLAUDE_CONFIG_DIR is one path (a comma is part of
    the name), there is no $XDG_CONFIG_HOME/claude fallback, ``~`` is not expanded."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert claude_home({"CLAUDE_CONFIG_DIR": f"{a},{b}"}).root == Path(f"{a},{b}")
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    (xdg / "claude" / "projects").mkdir(parents=True)          # only the XDG folder exists
    assert claude_home({"HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}).root == home / ".claude"
    assert claude_home({"HOME": str(home), "CLAUDE_CONFIG_DIR": "~/c"}).root == Path("~/c")
    assert claude_home({"HOME": str(home), "CLAUDE_CONFIG_DIR": ""}).root == home / ".claude"


# -- Codex ------------------------------------------------------------------------------------


def test_codex_default_home_finds_the_recorded_rollout(tmp_path: Path) -> None:
    home = tmp_path / "home"
    codex_capture(home / ".codex")
    found = codex_home({"HOME": str(home)})
    assert found.root == home / ".codex"
    (rollout,) = found.sessions.glob(f"*/*/*/rollout-*-{CODEX_THREAD}.jsonl")
    assert rollout.read_text().startswith('{"timestamp"')
    assert found.config.is_file()
    assert found.rollout_dirs == (home / ".codex" / "sessions", home / ".codex" / "archived_sessions")
    assert found.auth == home / ".codex" / "auth.json"


def test_codex_home_variable(tmp_path: Path) -> None:
    folder = codex_capture(tmp_path / "codex-work")
    found = codex_home({"HOME": str(tmp_path / "home"), "CODEX_HOME": str(folder)})
    assert found == CodexHome(folder)
    assert list(found.sessions.glob(f"*/*/*/rollout-*-{CODEX_THREAD}.jsonl"))
    assert codex_home({"HOME": "/h", "CODEX_HOME": ""}).root == Path("/h/.codex")


# -- Gemini CLI ---------------------------------------------------------------------------------


def test_gemini_default_home_finds_the_recorded_chat(tmp_path: Path) -> None:
    home = tmp_path / "home"
    gemini_capture(home / ".gemini")
    found = gemini_home({"HOME": str(home)})
    assert found.root == home / ".gemini"
    (chat,) = found.tmp.glob("*/chats/session-*.jsonl")
    assert chat.parent.parent.name == "repo"
    assert '"repo"' in found.projects_file.read_text()
    assert found.settings.is_file()
    assert found.cli_home == home


def test_gemini_cli_home_holds_the_gemini_folder(tmp_path: Path) -> None:
    account = tmp_path / "gemini-work"
    gemini_capture(account / ".gemini")
    found = gemini_home({"HOME": str(tmp_path / "home"), "GEMINI_CLI_HOME": str(account)})
    assert found.root == account / ".gemini"
    assert list(found.tmp.glob("*/chats/*.jsonl"))
    assert gemini_workspace_settings(Path("/w")) == Path("/w/.gemini/settings.json")


def test_gemini_account_folders(tmp_path: Path) -> None:
    # registered as the .gemini folder or as the folder holding it: the same state
    holder = tmp_path / "acct"
    state = holder / ".gemini"
    assert GeminiHome.for_folder(holder) == GeminiHome.for_folder(state) == GeminiHome(state)
    assert GeminiHome(state).cli_home == holder          # what GEMINI_CLI_HOME is set to
    # read leniently: a state folder copied under another name (as the captures are)
    copy = gemini_capture(tmp_path / "dot_gemini")
    assert GeminiHome.found_in(copy) == GeminiHome(copy)
    assert GeminiHome.for_folder(copy) == GeminiHome(copy / ".gemini")
    assert GeminiHome.found_in(holder) == GeminiHome(state)


# -- Pi ---------------------------------------------------------------------------------------


def test_pi_default_home_finds_the_recorded_session(tmp_path: Path, cwd: Path) -> None:
    home = tmp_path / "home"
    pi_capture(home / ".pi" / "agent", cwd)
    found = pi_home({"HOME": str(home)})
    assert found.root == home / ".pi" / "agent"
    (session,) = found.session_folder(cwd).glob(f"*_{PI_SESSION}.jsonl")
    assert session.read_text().startswith('{"type":"session"')
    assert (found.settings.is_file(), found.models.is_file(), found.auth.is_file()) == \
        (True, True, True)


def test_pi_session_folder_encoding() -> None:
    # NOTES "Session files": /a/b/repo → --a-b-repo--
    assert PiHome(Path("/p")).session_folder(Path("/a/b/repo")) == Path("/p/sessions/--a-b-repo--")


def test_pi_agent_dir_variable_with_pi_own_tilde_rule(tmp_path: Path, cwd: Path) -> None:
    home = tmp_path / "home"
    agent = pi_capture(home / "pi-work", cwd)
    assert pi_home({"HOME": str(home), "PI_CODING_AGENT_DIR": str(agent)}).root == agent
    # Pi expands a leading ~ or ~/ (expandTildePath); the only CLI that does
    assert pi_home({"HOME": str(home), "PI_CODING_AGENT_DIR": "~/pi-work"}).root == agent
    assert pi_home({"HOME": str(home), "PI_CODING_AGENT_DIR": "~"}).root == home
    assert pi_home({"HOME": str(home), "PI_CODING_AGENT_DIR": "~x"}).root == Path("~x")


def test_pi_session_dirs_read_from_an_agent_dir_a_dot_pi_or_a_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CAPTURES / "pi" / "captures" / "a2_text_plain" / "dot_pi", home / ".pi")
    for folder in (home / ".pi" / "agent", home / ".pi", home):
        assert [d for d in PiHome(folder).session_dirs if d.is_dir()] == \
            [home / ".pi" / "agent" / "sessions"]


# -- any of them --------------------------------------------------------------------------------


def test_config_folder_per_runtime_with_a_process_cwd() -> None:
    env = {"HOME": "/home/u"}
    assert config_folder("claude", env) == Path("/home/u/.claude")
    assert config_folder("codex", env) == Path("/home/u/.codex")
    assert config_folder("gemini", env) == Path("/home/u/.gemini")
    assert config_folder("pi", env) == Path("/home/u/.pi/agent")
    assert config_folder("aider", env) is None
    # a relative value is the process's: under its working folder
    assert config_folder("claude", {**env, "CLAUDE_CONFIG_DIR": "cfg"}, cwd="/w") == Path("/w/cfg")
    assert config_folder("claude", {**env, "CLAUDE_CONFIG_DIR": "~/c"}, cwd="/w") == Path("/w/~/c")
    assert config_folder("gemini", {**env, "GEMINI_CLI_HOME": "/g"}) == Path("/g/.gemini")
    assert config_folder("pi", {**env, "PI_CODING_AGENT_DIR": "~/p"}, cwd="/w") == Path("/home/u/p")
    assert config_folder("codex", {**env, "CODEX_HOME": "/x"}, home=Path("/other")) == Path("/x")


def test_default_folders_and_the_variables(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert default_folders({}, home=home) == [
        ("claude", home / ".claude"), ("codex", home / ".codex"), ("gemini", home / ".gemini"),
        ("pi", home / ".pi" / "agent")]
    assert HOME_ENV == {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME",
                        "gemini": "GEMINI_CLI_HOME", "pi": "PI_CODING_AGENT_DIR"}


# -- the editors ----------------------------------------------------------------------------------


def test_editor_folders() -> None:
    home = Path("/h")
    assert app_config_base({}, platform="linux", home=home) == Path("/h/.config")
    assert app_config_base({"XDG_CONFIG_HOME": "/x"}, platform="linux", home=home) == Path("/x")
    assert app_config_base({}, platform="darwin", home=home) == \
        Path("/h/Library/Application Support")
    assert app_config_base({"APPDATA": "/r"}, platform="win32", home=home) == Path("/r")
    assert app_config_base({}, platform="win32", home=home) == Path("/h/AppData/Roaming")
    assert cline_data_dir({}, home=home) == Path("/h/.cline/data")
    assert cline_data_dir({"CLINE_DIR": "/c"}, home=home) == Path("/c/data")
    assert cline_data_dir({"CLINE_DATA_DIR": "/d", "CLINE_DIR": "/c"}, home=home) == Path("/d")
    assert continue_dir({}, home=home) == Path("/h/.continue")
    assert continue_dir({"CONTINUE_GLOBAL_DIR": "/k"}, home=home) == Path("/k")
