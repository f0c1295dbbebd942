"""The commands relay-cli suggests ("next: relay-cli history …"), written as this user can run them.

A newcomer who runs ``./dev run`` starts ``.venv/bin/relay-cli``, which is not on their PATH:
a hint saying ``relay-cli finish …`` would not work for them. :func:`program` is how to start
this same relay-cli from here — ``relay-cli`` when that name on PATH is this program, else
the path it was started by (relative to the working folder when it is in it) — and every
hint the CLI prints is written with it: :func:`cli` builds one, :func:`runnable` rewrites the
``relay-cli …`` commands in a message from elsewhere (an error's hint from the core).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import sys

NAME = "relay-cli"

_COMMAND = re.compile(r"(?<![\w./\\-])relay-cli(?=[ \t]|$)", re.MULTILINE)


def program(argv0: str | None = None, path: str | None = None, cwd: str | None = None) -> str:
    """How to start this relay-cli from the working folder.

    Args:
        argv0: What it was started by (default: ``sys.argv[0]``, or the frozen executable).
        path: The PATH to look ``relay-cli`` up in (default: the environment's).
        cwd: The working folder (default: the current one).
    """
    if argv0 is None and path is None and cwd is None:
        return _this_program()
    return _program(_started_by() if argv0 is None else argv0, path, cwd or os.getcwd())


@functools.cache
def _this_program() -> str:
    return _program(_started_by(), None, os.getcwd())


def _started_by() -> str:
    return sys.executable if getattr(sys, "frozen", False) else sys.argv[0]


def _program(argv0: str, path: str | None, cwd: str) -> str:
    name = os.path.basename(argv0)
    if not argv0 or argv0.startswith("-") or name.endswith(".py"):
        return NAME  # python -m relay.cli.main, python -c …: the documented name
    here = os.path.abspath(os.path.join(cwd, argv0))
    found = shutil.which(NAME, path=path)
    if found is not None and _same(found, here):
        return NAME
    if not os.path.exists(here):
        return NAME
    try:
        relative = os.path.relpath(here, cwd)
    except ValueError:  # another drive (Windows)
        return _quoted(here)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return _quoted(here)  # not under the working folder: ../../x is no help
    if os.sep not in relative and (os.altsep is None or os.altsep not in relative):
        relative = os.curdir + os.sep + relative
    return _quoted(min(here, relative, key=len))


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _quoted(text: str) -> str:
    if not any(c.isspace() for c in text) and "'" not in text and '"' not in text:
        return text
    return f'"{text}"' if os.name == "nt" else shlex.quote(text)


def cli(arguments: str = "") -> str:
    """The command line that runs ``relay-cli ARGUMENTS`` for this user."""
    return f"{program()} {arguments}".rstrip()


def runnable(text: str) -> str:
    """``text`` with each ``relay-cli …`` command in it written as :func:`cli` writes it."""
    prog = program()
    return text if prog == NAME else _COMMAND.sub(lambda _: prog, text)
