"""Real git repositories for the diff view's tests and benchmark (pygit2, no fakes).

:func:`recorded_repo` commits, one commit each: a modification of a Python file
(two hunks), an addition (TypeScript), a deletion (JavaScript), a rename with a
small edit (Rust) and a changed binary file. :func:`long_repo` commits a change
of about ``lines`` changed lines across several files (the 10,000-line diff).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from relay.history.diffmodel import FileDiff, from_pygit2

_SIG = pygit2.Signature("Relay Tests", "tests@relay.invalid", 1_700_000_000, 0)

APP_PY = [
    "import os",
    "",
    "",
    "def greet(name):",
    '    """Say hello."""',
    "    return 'hello ' + name",
    "",
    "",
    *[f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(8)],
    "def main():",
    "    # the entry point",
    "    print(greet('world'))",
    "    return 0",
]
APP_PY_TEXT = "\n".join(APP_PY) + "\n"
LIB_RS = "\n".join(["// a library", "pub fn add(a: u32, b: u32) -> u32 {", "    a + b", "}",
                    *[f"pub fn n{i}() -> u32 {{ {i} }}" for i in range(10)]]) + "\n"
GONE_JS = "function gone() {\n  return 42;\n}\n"
NEW_TS = "export const answer: number = 42;\n// added\nexport function f(): string {\n" \
         "  return \"hi\";\n}\n"
PNG_1 = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) + b"\x00" * 64
PNG_2 = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(255, -1, -1)) + b"\x00" * 64


@dataclass(frozen=True)
class Recorded:
    path: Path
    base: str
    #: one commit per change: modify, add, delete, rename, binary
    commits: dict[str, str]

    @property
    def tip(self) -> str:
        return self.commits["binary"]

    def diff(self, old: str, new: str) -> list[FileDiff]:
        return diff_of(self.path, old, new)

    def whole(self) -> list[FileDiff]:
        return self.diff(self.base, self.tip)


def _commit(repo: pygit2.Repository, message: str) -> str:
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    parents = [] if repo.head_is_unborn else [repo.head.target]
    return str(repo.create_commit("HEAD", _SIG, _SIG, message, tree, parents))


def _write(root: Path, name: str, data: str | bytes) -> None:
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        target.write_bytes(data)
    else:
        target.write_text(data)


def recorded_repo(path: Path) -> Recorded:
    path.mkdir(parents=True, exist_ok=True)
    repo = pygit2.init_repository(str(path), initial_head="main")
    for name, data in (("app.py", APP_PY_TEXT), ("src/old_name.rs", LIB_RS),
                       ("web/gone.js", GONE_JS), ("logo.png", PNG_1)):
        _write(path, name, data)
    base = _commit(repo, "initial")
    commits: dict[str, str] = {}
    modified = APP_PY_TEXT.replace("    return 'hello ' + name", "    return f'hello {name}!'")
    modified = modified.replace("    print(greet('world'))",
                                "    for who in ('world', 'relay'):\n        print(greet(who))")
    _write(path, "app.py", modified)
    commits["modify"] = _commit(repo, "modify app.py")
    _write(path, "web/new.ts", NEW_TS)
    commits["add"] = _commit(repo, "add new.ts")
    (path / "web" / "gone.js").unlink()
    repo.index.remove("web/gone.js")
    commits["delete"] = _commit(repo, "delete gone.js")
    (path / "src" / "old_name.rs").rename(path / "src" / "new_name.rs")
    repo.index.remove("src/old_name.rs")
    _write(path, "src/new_name.rs", LIB_RS.replace("    a + b", "    a.wrapping_add(b)"))
    commits["rename"] = _commit(repo, "rename old_name.rs")
    _write(path, "logo.png", PNG_2)
    commits["binary"] = _commit(repo, "new logo")
    return Recorded(path, base, commits)


def long_repo(path: Path, lines: int = 10_000, files: int = 10) -> tuple[Path, str, str]:
    """A repository whose last commit changes about ``lines`` lines over ``files`` Python files.

    Each file is rewritten on every other line (so the diff alternates deletions,
    additions and context, the hardest case for side-by-side alignment).
    Returns (path, old commit, new commit).
    """
    path.mkdir(parents=True, exist_ok=True)
    repo = pygit2.init_repository(str(path), initial_head="main")
    per_file = max(lines // files // 3, 1)  # a changed line is one deletion and one addition
    for f in range(files):
        body = [f"def f_{f}_{i}(x):  # line {i}\n    return x + {i}\n" for i in range(per_file)]
        _write(path, f"pkg/module_{f}.py", "".join(body))
    old = _commit(repo, "before")
    for f in range(files):
        body = [f"def f_{f}_{i}(x):  # line {i}\n    return x * {i} - 1\n"
                for i in range(per_file)]
        _write(path, f"pkg/module_{f}.py", "".join(body))
    new = _commit(repo, "after")
    return path, old, new


def diff_of(path: Path, old: str, new: str) -> list[FileDiff]:
    repo = pygit2.Repository(str(path))
    return from_pygit2(repo.diff(old, new))
