"""The guard's rules that hold in every environment: force pushes, publishing, and writing or
deleting outside the worktree.

* ``git push --force`` / ``-f`` / ``--force-with-lease`` / a ``+refspec`` → ask;
* publishing a package or an image (``npm|pnpm|yarn publish``, ``twine upload``, ``cargo
  publish``, ``gem push``, ``docker|podman push``, ``gh release create``, ``poetry|uv|flit|
  hatch publish``; not with ``--dry-run``) → ask;
* deleting outside the worktree (``rm``, ``mv``'s sources, ``find … -delete``, a ``Write``
  that replaces…) → deny; writing outside it (``cp``/``install``/``ln`` targets, ``touch``,
  ``mkdir``, ``tee``, ``dd of=``, a ``>`` redirection; a ``Write``/``Edit``/… tool's file)
  → ask: the user may mean it (``~/.bashrc``), an agent rarely should. ``cd`` is followed
  for relative paths; ``~`` and ``$HOME`` count as outside; other ``$VARIABLES`` are not
  judged. ``/dev/null`` and the other ``/dev`` streams are open, and so are the policy's
  scratch folders (the system's temporary folder — unless the worktree itself lies in it,
  where other checkouts cannot be told apart from scratch files).

Each rule gives ``(decision, reason, rule)``; :mod:`relay.core.guard` makes the verdict.
Pure: no I/O (paths are compared as text, symlinks are not followed).
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Sequence

from relay.core.guard_shell import Command

Flag = tuple[str, str, str]  # (decision, reason, rule)

_PUBLISH = {
    ("npm", "publish"), ("pnpm", "publish"), ("yarn", "publish"), ("yarn", "npm"),
    ("twine", "upload"), ("cargo", "publish"), ("gem", "push"), ("docker", "push"),
    ("podman", "push"), ("poetry", "publish"), ("uv", "publish"), ("flit", "publish"),
    ("hatch", "publish"), ("gh", "release"), ("buildah", "push"), ("dotnet", "nuget"),
}
_STREAMS = re.compile(r"^/dev/(null|stdout|stderr|stdin|tty|fd/\d+)$")
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "srm", "trash", "trash-put"})
_CREATORS = frozenset({"touch", "mkdir", "truncate", "tee"})
_CHANGERS = frozenset({"chmod", "chown", "chgrp"})     # first operand is the mode / owner
_TARGETED = frozenset({"cp", "install", "ln", "rsync"})  # the last operand is written
_VALUED = frozenset({"-t", "--target-directory", "-m", "--mode", "-o", "--owner", "-g",
                     "--group", "-S", "--suffix", "--reference"})
_TRUNCATE_VALUED = _VALUED | {"-s", "--size", "-r"}


def command_verdicts(policy_root: object, commands: Sequence[Command],
                     base: str | None) -> list[Flag]:
    """The flags of a whole command line (``cd`` moves the base of the ones after it)."""
    root = _root(policy_root)
    flags: list[Flag] = []
    cwd = base
    for cmd in commands:
        flags += _git(cmd) + _publish(cmd)
        if cmd.name == "cd":
            cwd = _cd(cwd, cmd.argv[1:])
            continue
        if root is not None:
            for path, verb in _writes(cmd):
                flag = _outside(root, cwd, path, verb, cmd.name, _scratch(policy_root))
                if flag:
                    flags.append(flag)
    return flags


def write_verdicts(policy_root: object, tool: str, path: str, base: str | None, *,
                   delete: bool = False) -> list[Flag]:
    root = _root(policy_root)
    if root is None:
        return []
    flag = _outside(root, base, path, "deletes" if delete else "writes", tool,
                    _scratch(policy_root))
    return [flag] if flag else []


def _scratch(policy: object) -> tuple[str, ...]:
    found = getattr(policy, "scratch", ())
    return tuple(os.path.normpath(p) for p in found if isinstance(p, str) and p)


def _root(policy: object) -> str | None:
    root = getattr(policy, "worktree", None) or getattr(policy, "repo", None)
    return os.path.normpath(root) if isinstance(root, str) and root else None


# -- git and publishing ----------------------------------------------------------------

def _git(cmd: Command) -> list[Flag]:
    argv = list(cmd.argv)
    if cmd.name != "git":
        return []
    i = 1
    while i < len(argv) and argv[i].startswith("-"):  # git -C dir -c k=v push
        i += 2 if argv[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(argv) or argv[i] != "push":
        return []
    args = argv[i + 1:]
    forced = [a for a in args if a in ("--force", "-f") or a.startswith("--force-with-lease")
              or a == "--force-if-includes"
              or (re.match(r"^-[a-zA-Z]+$", a) and "f" in a and "o" not in a[:a.index("f")])]
    positionals = [a for j, a in enumerate(args) if not a.startswith("-")
                   and not (j > 0 and args[j - 1] in ("-o", "--push-option", "--repo",
                                                      "--receive-pack", "--exec"))]
    plus = [a for a in positionals[1:] if a.startswith("+")]
    if not forced and not plus:
        return []
    how = forced[0] if forced else f"refspec {plus[0]}"
    return [("ask", f"git push with {how} rewrites the remote's history: needs the owner's "
                    "approval.", "git.force_push")]


def _publish(cmd: Command) -> list[Flag]:
    words = [w for w in cmd.argv[1:] if not w.startswith("-")]
    if not words or (cmd.name, words[0]) not in _PUBLISH or "--dry-run" in cmd.argv \
            or ("-n" in cmd.argv and cmd.name in ("npm", "cargo")):
        return []
    if cmd.name == "gh" and words[1:2] != ["create"]:
        return []
    if cmd.name == "yarn" and words[0] == "npm" and words[1:2] != ["publish"]:
        return []
    if cmd.name == "dotnet" and words[1:2] != ["push"]:
        return []
    what = " ".join([cmd.name, *words[:2 if cmd.name in ("gh", "yarn", "dotnet") else 1]])
    return [("ask", f"{what} publishes outside this machine: needs the owner's approval.",
             "publish")]


# -- files -----------------------------------------------------------------------------

def _operands(argv: Sequence[str], valued: frozenset[str] = _VALUED) -> list[str]:
    out, skip, ended = [], False, False
    for w in argv:
        if skip:
            skip = False
        elif ended or not w.startswith("-") or w == "-":
            out.append(w)
        elif w == "--":
            ended = True
        else:
            skip = w in valued
    return out


def _writes(cmd: Command) -> list[tuple[str, str]]:
    """(path, verb) for each path ``cmd`` writes or deletes."""
    name, argv = cmd.name, cmd.argv[1:]
    found = [(w, "writes") for w in cmd.writes]
    ops = _operands(argv, _TRUNCATE_VALUED if name == "truncate" else _VALUED)
    if name in _DELETERS:
        found += [(p, "deletes") for p in ops]
    elif name == "mv":
        found += [(p, "moves") for p in ops]
    elif name in _CREATORS:
        found += [(p, "writes") for p in ops]
    elif name in _CHANGERS:
        found += [(p, "changes") for p in ops[1:]]
    elif name in _TARGETED and name != "rsync":
        target = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-t",
                                                                          "--target-directory")]
        target += [w.split("=", 1)[1] for w in argv if w.startswith("--target-directory=")]
        found += [(p, "writes") for p in (target or ops[-1:] if len(ops) > 1 or target else [])]
    elif name == "dd":
        found += [(w[3:], "writes") for w in argv if w.startswith("of=")]
    elif name == "find" and ("-delete" in argv or _find_exec_rm(argv)):
        starts = []
        for w in argv:
            if w.startswith(("-", "(", "!")):
                break
            starts.append(w)
        found += [(p, "deletes") for p in starts or ["."]]
    return found


def _find_exec_rm(argv: Sequence[str]) -> bool:
    return any(w in ("-exec", "-execdir") and i + 1 < len(argv) and argv[i + 1].rsplit(
        "/", 1)[-1] in _DELETERS for i, w in enumerate(argv))


def _cd(cwd: str | None, args: Sequence[str]) -> str | None:
    target = next((a for a in args if not a.startswith("-")), None)
    if target is None or target.startswith(("~", "$")):
        return None  # home or a variable: relative paths after it are not judged
    if os.path.isabs(target):
        return os.path.normpath(target)
    return os.path.normpath(os.path.join(cwd, target)) if cwd else None


def _outside(root: str, cwd: str | None, path: str, verb: str, tool: str,
             scratch: Sequence[str] = ()) -> Flag | None:
    path = path.strip()
    if not path or _STREAMS.match(path):
        return None
    if path.startswith(("~", "$HOME", "${HOME}")):
        shown = path
    elif path.startswith("$"):
        return None
    else:
        if not os.path.isabs(path):
            if cwd is None:
                return None
            path = os.path.join(cwd, path)
        shown = os.path.normpath(path)
        if _inside(shown, root) or any(_inside(shown, s) for s in scratch):
            return None
    if verb in ("deletes", "moves"):
        return ("deny", f"{tool} {verb} {shown}, outside the worktree {root}: refused.",
                "fs.outside_worktree")
    return ("ask", f"{tool} {verb} {shown}, outside the worktree {root}: confirm it.",
            "fs.outside_worktree")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
