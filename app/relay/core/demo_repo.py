"""A small throwaway git repository for the demo (``relay --demo``).

Qt-free and blocking (a few file writes and one commit): front ends call
:func:`make_demo_repo` from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from relay.core.errors import WorktreeError

_FILES = {
    "README.md": "# Relay demo project\n\nA tiny project the scripted demo agent works on.\n",
    "hello.py": 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n',
}


def make_demo_repo(path: Path) -> Path:
    """Create a git repository with one commit on ``main`` at ``path`` (must be empty).

    Returns:
        The repository path.

    Raises:
        WorktreeError: the folder is not empty or git refused.
    """
    path.mkdir(parents=True, exist_ok=True)
    if any(path.iterdir()):
        raise WorktreeError(f"{path} is not empty.",
                            "Pick an empty folder for the demo repository.")
    try:
        repo = pygit2.init_repository(str(path), initial_head="main")
        for name, text in _FILES.items():
            (path / name).write_text(text, encoding="utf-8")
        repo.index.add_all()
        repo.index.write()
        tree = repo.index.write_tree()
        sig = pygit2.Signature("Relay Demo", "demo@relay.invalid")
        repo.create_commit("HEAD", sig, sig, "Initial commit", tree, [])
    except (pygit2.GitError, OSError) as exc:
        raise WorktreeError(f"Could not create the demo repository at {path}: {exc}.",
                            "Check that the folder is writable.") from exc
    return path
