"""Where each agent CLI keeps its files: its home folder and the paths in it Relay uses.

Every module that looks for a CLI's folder, transcripts, settings or credentials asks here.
Each function takes the environment (default ``os.environ``) and, for tests, the user's
home folder; ``cwd`` anchors a relative value (a process's own view; :mod:`relay.detect`
passes the process's working folder). A record's ``root`` is the folder an account of that
CLI *is* (``relay.core.accounts``): build one from an account's folder directly.

One answer per CLI, from what the pinned release really does: ``tests/fixtures/<cli>/NOTES.md``
and, where the captures could not show it (every capture sets the variable), the CLI's own
code in the pinned package.

**Claude Code 2.1.197** — ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``. One folder.
    NOTES §3: with ``CLAUDE_CONFIG_DIR`` "everything persistent goes there", nothing is
    written to ``HOME``; §9 lists its files; §13: transcripts are
    ``$CLAUDE_CONFIG_DIR/projects/<cwd, every character outside [A-Za-z0-9] → '-'>/<id>.jsonl``.
    The binary: ``(process.env.CLAUDE_CONFIG_DIR ?? path.join(os.homedir(), ".claude"))``.
    Decided where Relay's copies disagreed: the variable is **one path**, not a
    comma-separated list (the list is another tool's convention; Claude Code takes ``a,b``
    as a folder of that name), there is **no** ``$XDG_CONFIG_HOME/claude`` fallback (the
    2.1.197 binary never names it), and ``~`` is not expanded (the value is used as it is).
    In it: ``projects/``, ``sessions/<pid>.json`` (running processes), ``tasks/<id>/``,
    ``file-history/<id>/``, ``settings.json``, ``.credentials.json`` (Linux; macOS keeps the
    login in its keychain). The global state file ``.claude.json`` is in the folder only
    when the variable is set, else it is ``~/.claude.json`` beside it (Relay does not read it).
**Codex 0.171.0** — ``$CODEX_HOME``, else ``~/.codex``.
    NOTES "On-disk session files": rollouts ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-
    <thread id>.jsonl`` (and ``archived_sessions/``), the SQLite state beside them; "What an
    adapter must do" 2: state is isolated with ``CODEX_HOME``; ``config.toml`` and
    ``auth.json`` (``relay.core.accounts``) are in it. The binary canonicalizes the value (it
    must exist) and expands no ``~``.
**Gemini CLI 0.61.0** — home is ``$GEMINI_CLI_HOME``, else the user's home; the state is
    ``<home>/.gemini``. NOTES "Session files": ``~/.gemini/tmp/<project>/chats/session-<time>-
    <id8>.jsonl``, ``projects.json`` mapping a cwd to its project folder, ``history/``;
    "Pointing gemini-cli at a custom endpoint": ``~/.gemini/settings.json`` (and the
    workspace's ``<cwd>/.gemini/settings.json``). The bundle's ``homedir()``:
    ``process.env["GEMINI_CLI_HOME"]`` if non-empty, else ``os.homedir()``; no ``~``. So an
    account folder is either the ``.gemini`` folder (its parent goes into the variable) or
    the folder holding it (:meth:`GeminiHome.for_folder`).
**Pi 0.73.1** — ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``.
    NOTES "Session files": ``~/.pi/agent/sessions/--<cwd, "/" → "-">--/<time>_<id>.jsonl``;
    "Custom endpoint": ``models.json`` and ``settings.json`` in it (or under
    ``PI_CODING_AGENT_DIR``); ``auth.json`` beside them. Pi's ``config.js`` expands a leading
    ``~`` or ``~/`` in the variable (``expandTildePath``) — the only CLI that does. Not
    followed: ``PI_CODING_AGENT_SESSION_DIR`` / the ``sessionDir`` setting, which put every
    session of every cwd in one other folder (no Relay account sets them).

The user's home is what the CLIs' ``os.homedir()`` gives: ``$HOME``, on Windows
``%USERPROFILE%``, else the account's own. An empty variable counts as unset (Gemini and Pi
skip an empty one, Codex refuses it; Claude would take ``""`` as its cwd; Relay never sets one
empty). The editors' folders (:func:`app_config_base`, :func:`cline_data_dir`,
:func:`continue_dir`) follow ``docs/detect-formats.md`` (public sources, not run here).

Standard library only: ``relay-cli doctor`` and the window's start-up import this.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: the variable that points each CLI at its folder (what a Relay account sets)
CLAUDE_ENV = "CLAUDE_CONFIG_DIR"
CODEX_ENV = "CODEX_HOME"
GEMINI_ENV = "GEMINI_CLI_HOME"
PI_ENV = "PI_CODING_AGENT_DIR"
HOME_ENV: dict[str, str] = {"claude": CLAUDE_ENV, "codex": CODEX_ENV, "gemini": GEMINI_ENV,
                            "pi": PI_ENV}

#: the login files in the folders (never copied, never read by Relay)
CLAUDE_CREDENTIALS = ".credentials.json"
CODEX_AUTH = "auth.json"
PI_AUTH = "auth.json"
#: the name of Gemini CLI's state folder, in a home folder and in a workspace
GEMINI_DIR = ".gemini"

_NOT_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


def user_home(env: Mapping[str, str] | None = None, *, platform: str | None = None) -> Path:
    """The home folder the CLIs see: ``$HOME`` (``%USERPROFILE%`` on Windows), else ours."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    value = env.get("USERPROFILE" if platform == "win32" else "HOME")
    return Path(value) if value else Path.home()


def _configured(env: Mapping[str, str], var: str, cwd: Path | str | None) -> Path | None:
    """The folder ``var`` names (None when unset or empty), a relative one under ``cwd``."""
    value = env.get(var)
    if not value:
        return None
    path = Path(value)
    return Path(cwd) / path if cwd is not None and not path.is_absolute() else path


# -- Claude Code --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaudeHome:
    """Claude Code's configuration folder (``CLAUDE_CONFIG_DIR``)."""

    root: Path

    @property
    def projects(self) -> Path:
        """``projects/``: one folder of transcripts per working folder."""
        return self.root / "projects"

    @property
    def settings(self) -> Path:
        return self.root / "settings.json"

    @property
    def credentials(self) -> Path:
        return self.root / CLAUDE_CREDENTIALS

    def project_dir(self, cwd: Path | str) -> Path:
        """The transcripts folder of ``cwd`` (resolved, as the CLI sees it)."""
        return self.projects / _NOT_ALPHANUMERIC.sub("-", str(Path(cwd).resolve()))

    def transcript(self, cwd: Path | str, session_id: str) -> Path:
        """``projects/<cwd encoded>/<session_id>.jsonl`` (it may not exist)."""
        return self.project_dir(cwd) / f"{session_id}.jsonl"

    def pid_file(self, pid: int) -> Path:
        """``sessions/<pid>.json``: what a running process is working on (2.1.x)."""
        return self.root / "sessions" / f"{pid}.json"

    def tasks(self, session_id: str) -> Path:
        return self.root / "tasks" / session_id

    def file_history(self, session_id: str) -> Path:
        return self.root / "file-history" / session_id


def claude_home(env: Mapping[str, str] | None = None, *, home: Path | None = None,
                cwd: Path | str | None = None) -> ClaudeHome:
    """``$CLAUDE_CONFIG_DIR``, else ``<home>/.claude``."""
    env = os.environ if env is None else env
    root = _configured(env, CLAUDE_ENV, cwd)
    return ClaudeHome(root if root is not None else (home or user_home(env)) / ".claude")


# -- Codex --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CodexHome:
    """Codex's ``CODEX_HOME``."""

    root: Path

    @property
    def sessions(self) -> Path:
        """``sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``."""
        return self.root / "sessions"

    @property
    def rollout_dirs(self) -> tuple[Path, Path]:
        """Where rollouts are: ``sessions/`` and ``archived_sessions/`` (same layout)."""
        return self.sessions, self.root / "archived_sessions"

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def auth(self) -> Path:
        return self.root / CODEX_AUTH


def codex_home(env: Mapping[str, str] | None = None, *, home: Path | None = None,
               cwd: Path | str | None = None) -> CodexHome:
    """``$CODEX_HOME``, else ``<home>/.codex``."""
    env = os.environ if env is None else env
    root = _configured(env, CODEX_ENV, cwd)
    return CodexHome(root if root is not None else (home or user_home(env)) / ".codex")


# -- Gemini CLI ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GeminiHome:
    """Gemini CLI's state folder: the ``.gemini`` folder in its home."""

    root: Path

    @classmethod
    def for_folder(cls, folder: Path) -> GeminiHome:
        """The state an account folder stands for: the folder itself when it is named
        ``.gemini``, else the ``.gemini`` in it (what the CLI uses with ``cli_home``)."""
        return cls(folder if folder.name == GEMINI_DIR else folder / GEMINI_DIR)

    @classmethod
    def found_in(cls, folder: Path) -> GeminiHome:
        """The state to read in ``folder``: :meth:`for_folder`, or ``folder`` itself when it
        already holds ``tmp/`` under another name (a copy of one)."""
        home = cls.for_folder(folder)
        return cls(folder) if home.root != folder and (folder / "tmp").is_dir() else home

    @property
    def cli_home(self) -> Path:
        """What ``GEMINI_CLI_HOME`` must be for the CLI to use this state folder."""
        return self.root.parent

    @property
    def settings(self) -> Path:
        return self.root / "settings.json"

    @property
    def projects_file(self) -> Path:
        """``projects.json``: ``{"projects": {cwd: project folder name}}``."""
        return self.root / "projects.json"

    @property
    def tmp(self) -> Path:
        """``tmp/<project>/chats/session-<time>-<id8>.jsonl`` (and older ``.json``)."""
        return self.root / "tmp"


def gemini_home(env: Mapping[str, str] | None = None, *, home: Path | None = None,
                cwd: Path | str | None = None) -> GeminiHome:
    """``<$GEMINI_CLI_HOME, else home>/.gemini``."""
    env = os.environ if env is None else env
    root = _configured(env, GEMINI_ENV, cwd)
    return GeminiHome((root if root is not None else home or user_home(env)) / GEMINI_DIR)


def gemini_workspace_settings(cwd: Path | str) -> Path:
    """A workspace's own settings, read over the user's: ``<cwd>/.gemini/settings.json``."""
    return Path(cwd) / GEMINI_DIR / "settings.json"


# -- Pi -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PiHome:
    """Pi's agent folder (``PI_CODING_AGENT_DIR``)."""

    root: Path

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def session_dirs(self) -> tuple[Path, Path, Path]:
        """Where an account folder may hold Pi's sessions when read: the agent folder's
        ``sessions/``, or that of the ``~/.pi`` or home folder registered instead of it."""
        return self.sessions, self.root / "agent" / "sessions", \
            self.root / ".pi" / "agent" / "sessions"

    def session_folder(self, cwd: Path | str) -> Path:
        """``sessions/--<cwd without its leading "/", "/" "\\" ":" → "-">--`` (Pi's rule)."""
        text = re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", str(cwd)))
        return self.sessions / f"--{text}--"

    @property
    def settings(self) -> Path:
        return self.root / "settings.json"

    @property
    def models(self) -> Path:
        """``models.json``: custom providers (their ``apiKey`` names a variable)."""
        return self.root / "models.json"

    @property
    def auth(self) -> Path:
        return self.root / PI_AUTH


def pi_home(env: Mapping[str, str] | None = None, *, home: Path | None = None,
            cwd: Path | str | None = None) -> PiHome:
    """``$PI_CODING_AGENT_DIR`` (a leading ``~`` / ``~/`` expanded), else ``<home>/.pi/agent``."""
    env = os.environ if env is None else env
    value = env.get(PI_ENV, "")
    if value == "~" or value.startswith("~/"):
        return PiHome((home or user_home(env)) / value[2:])
    root = _configured(env, PI_ENV, cwd)
    return PiHome(root if root is not None else (home or user_home(env)) / ".pi" / "agent")


# -- any of them ----------------------------------------------------------------------------


def config_folder(runtime: str, env: Mapping[str, str] | None = None, *,
                  home: Path | None = None, cwd: Path | str | None = None) -> Path | None:
    """The folder a ``runtime`` process with ``env`` keeps its state in — its account folder:
    Claude's config folder, ``CODEX_HOME``, Gemini's ``.gemini``, Pi's agent folder (None
    for a runtime without one)."""
    if runtime == "claude":
        return claude_home(env, home=home, cwd=cwd).root
    if runtime == "codex":
        return codex_home(env, home=home, cwd=cwd).root
    if runtime == "gemini":
        return gemini_home(env, home=home, cwd=cwd).root
    if runtime == "pi":
        return pi_home(env, home=home, cwd=cwd).root
    return None


def default_folders(env: Mapping[str, str] | None = None, *,
                    home: Path | None = None) -> list[tuple[str, Path]]:
    """Each CLI's folder in ``env``, whether it exists or not."""
    found = ((runtime, config_folder(runtime, env, home=home)) for runtime in HOME_ENV)
    return [(runtime, folder) for runtime, folder in found if folder is not None]


# -- the editors ----------------------------------------------------------------------------


def app_config_base(env: Mapping[str, str] | None = None, *, platform: str | None = None,
                    home: Path | None = None) -> Path:
    """Where desktop apps (VS Code and its forks) keep their ``<App>/User`` folders:
    ``~/Library/Application Support`` on macOS, ``%APPDATA%`` on Windows, else
    ``$XDG_CONFIG_HOME`` or ``~/.config``."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    home = home or user_home(env, platform=platform)
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config")


def cline_data_dir(env: Mapping[str, str] | None = None, *, home: Path | None = None) -> Path:
    """Cline's CLI data: ``$CLINE_DATA_DIR``, else ``<$CLINE_DIR or ~/.cline>/data``."""
    env = os.environ if env is None else env
    if env.get("CLINE_DATA_DIR"):
        return Path(env["CLINE_DATA_DIR"])
    return Path(env.get("CLINE_DIR") or (home or user_home(env)) / ".cline") / "data"


def continue_dir(env: Mapping[str, str] | None = None, *, home: Path | None = None) -> Path:
    """Continue's global folder: ``$CONTINUE_GLOBAL_DIR``, else ``~/.continue``."""
    env = os.environ if env is None else env
    return Path(env.get("CONTINUE_GLOBAL_DIR") or (home or user_home(env)) / ".continue")
