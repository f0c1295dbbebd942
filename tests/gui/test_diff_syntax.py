"""The diff view's tokenizer: languages by extension, the four token kinds, the cache."""

from __future__ import annotations

import pytest

from relay.gui.syntax import TokenCache, language_for, tokenize


def kinds(path: str, text: str) -> list[tuple[str, str]]:
    return [(text[s:e], k) for s, e, k in tokenize(language_for(path), text)]


@pytest.mark.parametrize(("path", "language"), [
    ("a/b.py", "python"), ("x.pyi", "python"), ("main.go", "go"), ("lib.rs", "rust"),
    ("ui.tsx", "javascript"), ("ui.ts", "javascript"), ("app.mjs", "javascript"),
    ("Main.java", "java"), ("task.rb", "ruby"), ("Rakefile", "ruby"), ("A.PY", "python"),
])
def test_language_by_extension(path: str, language: str) -> None:
    found = language_for(path)
    assert found is not None
    assert found.name == language


@pytest.mark.parametrize("path", ["README.md", "notes.txt", "Makefile", "data.json", "noext"])
def test_other_files_are_plain(path: str) -> None:
    assert language_for(path) is None
    assert tokenize(language_for(path), "def if for return 1 'x' # y") == ()


def test_python_line() -> None:
    assert kinds("a.py", "def f(x): return x + 0x1F  # add 'one'") == [
        ("def", "keyword"), ("return", "keyword"), ("0x1F", "number"),
        ("# add 'one'", "comment")]
    assert kinds("a.py", "s = f'hi {x}' + rb\"raw\"") == [("f'hi {x}'", "string"),
                                                         ('rb"raw"', "string")]
    # a keyword inside a longer name is not a keyword
    assert kinds("a.py", "define = classic") == []


def test_go_raw_strings_and_comments() -> None:
    assert kinds("m.go", "func main() { s := `raw // not a comment` } // done") == [
        ("func", "keyword"), ("`raw // not a comment`", "string"), ("// done", "comment")]


def test_rust_lifetimes_are_not_strings() -> None:
    assert kinds("l.rs", "fn f<'a>(x: &'a str) -> u32 { 'c'; 10u32 }") == [
        ("fn", "keyword"), ("'c'", "string"), ("10u32", "number")]


def test_javascript_block_comment_escape_and_float() -> None:
    assert kinds("a.ts", r"const s = 'it\'s'; /* b */ let n = 1.5e3") == [
        ("const", "keyword"), (r"'it\'s'", "string"), ("/* b */", "comment"),
        ("let", "keyword"), ("1.5e3", "number")]


def test_java_doc_comment_middle_line() -> None:
    assert kinds("A.java", "   * @param x the int") == [("   * @param x the int", "comment")]
    assert kinds("A.java", "   a * b; // times") == [("// times", "comment")]


def test_ruby_interpolation_stays_in_the_string() -> None:
    assert kinds("t.rb", 'puts "#{x} end" # done') == [('"#{x} end"', "string"),
                                                       ("# done", "comment")]


def test_unterminated_string_runs_to_the_end() -> None:
    assert kinds("a.py", 'x = "open # not a comment') == [('"open # not a comment', "string")]


def test_cache_tokenizes_each_line_once() -> None:
    cache = TokenCache(size=2)
    py = language_for("a.py")
    first = cache.tokens(py, "def a(): pass")
    assert cache.tokens(py, "def a(): pass") is first
    assert cache.computed == 1
    cache.tokens(py, "b = 1")
    cache.tokens(py, "c = 2")  # the oldest line ("def a") is dropped
    assert len(cache) == 2
    cache.tokens(py, "def a(): pass")
    assert cache.computed == 4
    assert cache.tokens(None, "def a(): pass") == ()
