"""Where the data folder is, without loading the settings (relay-cli's quick commands use it).

The data folder comes from platformdirs; ``RELAY_HOME`` overrides it (tests and scripts rely
on this), and a front end's flag (``relay-cli --home``) overrides both. It is the user's alone
(:func:`secure_home`; folders 0700, files 0600: :mod:`relay.core.fsutil`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from relay.core.fsutil import PRIVATE_DIR, private_dir, tighten_tree

#: the event store's file in the data folder
DB_FILE = "relay.db"
#: the data folder's folder of worktrees: their contents keep the repository's modes
WORKTREES_DIR = "worktrees"


def default_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = env.get("RELAY_HOME")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("relay", "relay"))


def secure_home(home: Path) -> str | None:
    """Make the data folder ``home`` private: made 0700 when missing; when it exists and
    others may enter it, it and everything in it are tightened (folders 0700, files 0600; a
    worktree's contents keep the repository's modes). Returns the one line saying so when
    something was tightened, else None. A private folder costs one ``stat``, and the notice
    is given once: the folder is private afterwards."""
    if not home.exists():
        private_dir(home)
        return None
    if os.name == "nt" or (home.stat().st_mode & 0o777) == PRIVATE_DIR:
        return None
    worktrees = home / WORKTREES_DIR
    changed = tighten_tree(home, keep=lambda folder: folder.parent == worktrees)
    return (f"The data folder {home} was readable by other users; it is private now "
            f"({changed} folders and files made 0700/0600).") if changed else None
