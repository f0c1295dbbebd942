"""The diff view's highlighting by Pygments: lexers by file name, roles, lines, the cache."""

from __future__ import annotations

import pytest

from relay.gui import theme
from relay.gui.syntax import BLOCK, ROLES, TokenCache, highlight, lexer_for
from relay.history.diffmodel import DiffLine, FileDiff, Hunk


def roles(path: str, *lines: str) -> list[list[tuple[str, str]]]:
    """Each line's highlighted pieces as (text, role)."""
    found = highlight(lexer_for(path), list(lines))
    return [[(line[s:e], r) for s, e, r in tokens] for line, tokens in zip(lines, found,
                                                                            strict=True)]


@pytest.mark.parametrize(("path", "language"), [
    ("a/b.py", "Python"), ("main.go", "Go"), ("lib.rs", "Rust"), ("ui.tsx", "TSX"),
    ("ui.ts", "TypeScript"), ("Main.java", "Java"), ("task.rb", "Ruby"), ("x.c", "C"),
    ("k.kt", "Kotlin"), ("s.swift", "Swift"), ("Dockerfile", "Docker"), ("c.yaml", "YAML"),
    ("x.hs", "Haskell"), ("Makefile", "Makefile"), ("deep/dir/page.html", "HTML"),
])
def test_a_lexer_for_every_language_pygments_knows(path: str, language: str) -> None:
    found = lexer_for(path)
    assert found is not None
    assert found.name == language


@pytest.mark.parametrize("path", ["notes.txt", "noext", "LICENSE", "a.unknownext"])
def test_plain_text_has_no_lexer_and_no_tokens(path: str) -> None:
    assert lexer_for(path) is None
    assert highlight(None, ["def if for return 1 'x' # y"]) == [()]


def test_every_role_is_a_theme_colour() -> None:
    for role in ROLES:
        for palette in ("light", "dark"):
            assert theme.css(f"${role}", palette).startswith("#"), (role, palette)
    # readable on the diff's background in both palettes
    for palette in ("light", "dark"):
        base = theme.css("$BASE", palette)
        for role in ROLES:
            assert theme.contrast(theme.css(f"${role}", palette), base) >= 4.5, (role, palette)


def test_python_line() -> None:
    assert roles("a.py", "def f(x): return x + 0x1F  # add 'one'") == [[
        ("def", "SYNTAX_KEYWORD"), ("f", "SYNTAX_FUNCTION"), ("return", "SYNTAX_KEYWORD"),
        ("0x1F", "SYNTAX_NUMBER"), ("# add 'one'", "SYNTAX_COMMENT")]]
    # a keyword inside a longer name is not a keyword
    assert roles("a.py", "define = classic") == [[]]


def test_a_string_over_lines_is_a_string_on_each() -> None:
    lines = ['x = """first', "middle # not a comment", 'last"""  # a comment']
    found = roles("a.py", *lines)
    assert found[1] == [("middle # not a comment", "SYNTAX_STRING")]
    assert found[2] == [('last"""', "SYNTAX_STRING"), ("# a comment", "SYNTAX_COMMENT")]


def test_go_and_rust_and_typescript() -> None:
    assert ("`raw // not a comment`", "SYNTAX_STRING") in roles(
        "m.go", "func main() { s := `raw // not a comment` } // done")[0]
    assert ("fn", "SYNTAX_KEYWORD") in roles("l.rs", "fn f<'a>(x: &'a str) -> u32 { 10 }")[0]
    ts = roles("a.ts", r"const s = 'it\'s'; /* b */ let n = 1.5e3")[0]
    assert ("const", "SYNTAX_KEYWORD") in ts
    assert ("/* b */", "SYNTAX_COMMENT") in ts
    assert ("1.5e3", "SYNTAX_NUMBER") in ts


def test_empty_lines_keep_their_places() -> None:
    found = roles("a.py", "", "# one", "", "x = 1")
    assert found == [[], [("# one", "SYNTAX_COMMENT")], [], [("1", "SYNTAX_NUMBER")]]


def hunk(lines: list[DiffLine]) -> Hunk:
    return Hunk("@@ -1 +1 @@", 1, len(lines), 1, len(lines), tuple(lines))


def test_the_cache_lexes_each_hunk_side_once_per_file() -> None:
    diff = FileDiff("a.py", "a.py", "modified", False, 1, 1, (hunk([
        DiffLine("context", 1, 1, "import os"),
        DiffLine("del", 2, None, "x = 'old'"),
        DiffLine("add", None, 2, "x = 'new'"),
    ]), hunk([DiffLine("add", None, 9, "def g(): pass")])))
    cache = TokenCache()
    assert cache.tokens(diff, 0, "new", 2) == ((4, 9, "SYNTAX_STRING"),)
    assert cache.tokens(diff, 0, "new", 1) == ((0, 6, "SYNTAX_KEYWORD"),)
    assert cache.computed == 1  # the new side of hunk 0, lexed once
    assert cache.tokens(diff, 0, "old", 2) == ((4, 9, "SYNTAX_STRING"),)
    assert cache.computed == 2
    assert cache.tokens(diff, 1, "new", 9)[0] == (0, 3, "SYNTAX_KEYWORD")
    assert (cache.computed, cache.lexed_lines, len(cache)) == (3, 5, 1)
    assert cache.tokens(diff, 0, "new", None) == ()
    plain = FileDiff("n.txt", "n.txt", "added", False, 1, 0, (hunk([
        DiffLine("add", None, 1, "def if")]),))
    assert cache.tokens(plain, 0, "new", 1) == ()


def test_a_5000_line_hunk_is_lexed_a_block_at_a_time() -> None:
    """One hunk of 5,000 changed Python lines per side: a line's first paint lexes its
    block only (a screenful of a huge hunk stays quick; the time it takes is measured in
    benchmarks/, not here), and every line is highlighted once all blocks are asked for."""
    lines = [DiffLine("del", i, None, f"def f_{i}(x):  # line {i}") for i in range(1, 5001)]
    lines += [DiffLine("add", None, i, f"    return x * {i} - 'a{i}'") for i in range(1, 5001)]
    diff = FileDiff("big.py", "big.py", "modified", False, 5000, 5000, (hunk(lines),))
    cache = TokenCache()
    assert cache.tokens(diff, 0, "old", 2600)[0] == (0, 3, "SYNTAX_KEYWORD")
    assert (cache.computed, cache.lexed_lines) == (1, BLOCK)
    for number in range(1, 5001):
        assert cache.tokens(diff, 0, "old", number)[0][2] == "SYNTAX_KEYWORD"
        assert cache.tokens(diff, 0, "new", number)[0][2] == "SYNTAX_KEYWORD"
    assert cache.lexed_lines == 10_000
