"""A shell command line as the guard reads it: the simple commands it runs.

``kubectl --context prod get pods && rm -rf /srv/x | tee /etc/y`` is three simple commands,
each with its environment assignments (``KUBECONFIG=… kubectl …``), its words and where it
writes (``> /abs/path``). Compound commands are split on ``&&``, ``||``, ``;``, ``|``, ``&``,
newlines and parentheses; ``$( … )`` and backticks, also inside double quotes, are read as
commands of their own; ``bash -c '…'``, ``sh -c``, ``eval`` and wrappers such as ``sudo``,
``env``, ``timeout``, ``nohup``, ``xargs`` are looked through. A here-document's body is not
read as commands. Words come from :mod:`shlex` (POSIX rules), so quoted text is one word:
``echo "git push --force"`` runs ``echo``, not ``git``.

Why :mod:`shlex` and not ``bashlex``: bashlex is GPL-3.0 (Relay is proprietary), its last
release is from January 2023, and it raises on much of what agents write (``[[ … ]]``,
arithmetic, ``case``, process substitution) — a guard that gives up on a parse error sees
nothing. The guard needs the simple commands and their words, not a syntax tree; an
unusual construct here costs at most one word read as a command name. Pure: no I/O.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_PUNCT = "();<>|&\n"
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "busybox"})
#: wrappers whose first non-option word is the command they run
_PREFIXES = frozenset({"sudo", "doas", "env", "nice", "nohup", "time", "command", "builtin",
                       "exec", "stdbuf", "ionice", "chronic", "unbuffer", "xargs", "watch",
                       "caffeinate", "setsid", "torsocks", "proxychains", "proxychains4"})
#: options of those wrappers that take a value (the next word)
_PREFIX_ARGS = frozenset({"-u", "-g", "-C", "-n", "-p", "-h", "-U", "-E", "-I", "-L", "-P",
                          "-s", "-d", "-a", "-c", "-t", "-r", "-o", "-e", "--user", "--group",
                          "--chdir", "--interval", "--max-args", "--delimiter",
                          "--max-procs", "--arg-file", "--replace"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRITE_OPS = (">", ">>", ">|", "&>", "&>>", ">&")
_MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: ``env`` assignments, its words, the paths it redirects into."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    writes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The command's name without its folder (``/usr/bin/kubectl`` → ``kubectl``)."""
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""

    def getenv(self, key: str) -> str | None:
        for k, v in self.env:
            if k == key:
                return v
        return None


def parse(text: str, depth: int = 0) -> list[Command]:
    """The simple commands of a shell command line (best effort, never raises)."""
    if depth > _MAX_DEPTH or not text.strip():
        return []
    tokens = _tokens(text)
    out: list[Command] = []
    for token in tokens:  # command substitutions inside quoted words
        if len(token) > 2 and ("$(" in token or "`" in token) and not _all_punct(token):
            for inner in _substitutions(token):
                out.extend(parse(inner, depth + 1))
    for words, writes in _segments(tokens):
        out.extend(_simple(words, writes, depth))
    return out


def from_argv(argv: Sequence[str], depth: int = 0) -> list[Command]:
    """The commands an argument vector runs (``["bash", "-lc", "…"]`` is read as a line)."""
    words = [str(w) for w in argv]
    return _simple(words, [], depth) if words else []


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCT)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    tokens: list[str] = []
    try:
        for token in lexer:
            tokens.append(token)
    except ValueError:  # an unclosed quote: read what was there, quote included
        tokens.extend(lexer.token.split()) if lexer.token else None
    return tokens


def _all_punct(token: str) -> bool:
    return bool(token) and all(c in _PUNCT for c in token)


def _substitutions(word: str) -> Iterable[str]:
    for m in re.finditer(r"\$\(([^()]*(?:\([^()]*\)[^()]*)*)\)|`([^`]*)`", word):
        yield m.group(1) or m.group(2) or ""


def _segments(tokens: list[str]) -> Iterable[tuple[list[str], list[str]]]:
    """Split tokens into simple commands: (words, redirection targets)."""
    words: list[str] = []
    writes: list[str] = []
    heredoc: str | None = None
    pending: str | None = None  # a here-document starts after the end of its line
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if pending is not None and "\n" in token and _all_punct(token):
            heredoc, pending = pending, None
        if heredoc is not None:  # skip the body up to the delimiter line
            if token == heredoc and i > 0 and tokens[i - 1].endswith("\n"):
                heredoc = None
            i += 1
            continue
        if _all_punct(token) and ("<" in token or ">" in token):
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            if words and words[-1].isdigit():
                words.pop()  # "2>" : the file descriptor, not a word
            if token.startswith("<<") and token != "<<<":
                pending = target.lstrip("-") if "\n" not in token else None
                i += 2
                continue
            dup = token.endswith("&") and (target.isdigit() or target == "-")
            if token.startswith(_WRITE_OPS) and "<" not in token and target \
                    and not _all_punct(target) and not dup:
                writes.append(target)
            i += 2 if target and not _all_punct(target) else 1
            continue
        if _all_punct(token):  # ; && || | & newline ( )
            if words:
                yield words, writes
            words, writes = [], []
            i += 1
            continue
        if token == "$" and i + 1 < len(tokens) and tokens[i + 1].startswith("("):
            i += 1  # "$(" : the "(" splits, the "$" is nothing
            continue
        words.append(token)
        i += 1
    if words:
        yield words, writes


def _simple(words: list[str], writes: list[str], depth: int) -> list[Command]:
    env: list[tuple[str, str]] = []
    while words and _ASSIGN.match(words[0]):
        key, _, value = words[0].partition("=")
        env.append((key, value))
        words = words[1:]
    words = [w for w in words if w not in ("{", "}", "!", "then", "do", "else", "elif")]
    while words and words[0] in ("if", "while", "until", "time", "!"):
        words = words[1:]
    if not words:
        return [Command((), tuple(env), tuple(writes))] if env or writes else []
    name = words[0].rsplit("/", 1)[-1]
    if name in _SHELLS or name == "eval":
        script = _script_of(words) if name != "eval" else " ".join(words[1:])
        if script is not None:
            inner = parse(script, depth + 1)
            return [Command(c.argv, tuple(env) + c.env, c.writes) for c in inner] + (
                [Command((), tuple(env), tuple(writes))] if writes else [])
    if name in _PREFIXES:
        rest = _after_prefix(name, words[1:], env)
        if rest:
            inner = _simple(rest, writes, depth + 1)
            return [Command(c.argv, tuple(env) + c.env, c.writes) for c in inner]
    if name == "timeout":
        rest = words[1:]
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in ("-s", "-k", "--signal", "--kill-after") else rest[1:]
        if len(rest) > 1:
            inner = _simple(rest[1:], writes, depth + 1)
            return [Command(c.argv, tuple(env) + c.env, c.writes) for c in inner]
    return [Command(tuple(words), tuple(env), tuple(writes))]


def _script_of(words: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` / ``bash -lc SCRIPT`` (None: not one)."""
    for i, w in enumerate(words[1:], start=1):
        if w.startswith("-") and not w.startswith("--") and "c" in w[1:]:
            return words[i + 1] if i + 1 < len(words) else None
        if not w.startswith("-"):
            return None
    return None


def _after_prefix(name: str, words: list[str], env: list[tuple[str, str]]) -> list[str]:
    i = 0
    while i < len(words):
        w = words[i]
        if name == "env" and _ASSIGN.match(w):
            key, _, value = w.partition("=")
            env.append((key, value))
        elif w == "--":
            return words[i + 1:]
        elif w.startswith("-"):
            if w in _PREFIX_ARGS and "=" not in w:
                i += 1
        else:
            return words[i:]
        i += 1
    return []
