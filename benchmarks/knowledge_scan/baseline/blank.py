"""Comments and string contents replaced by spaces, so a line scanner sees only code.

``blank(text, lang)`` returns a string of the same length in which every character of a
comment and of a string, character or regex literal's contents is a space (line breaks
stay, so line numbers and offsets match the original). Quote characters themselves stay:
a scanner finds a literal in the blanked text and reads it from the original.

Handled, for ``go``, ``rust``, ``java``, ``typescript`` and ``javascript``:

- ``//`` and ``/* */`` comments (nested in Rust);
- ``"…"`` strings with escapes (a line break ends one, except in Rust, whose strings may
  span lines); Java text blocks ``\"\"\"…\"\"\"``;
- ``'…'``: strings in JS/TS, characters in Go/Java, and in Rust a character literal
  (``'x'``, ``'\\n'``) but not a lifetime (``'a``);
- Go raw strings (backticks); Rust raw strings (``r"…"``, ``r#"…"#``, ``br"…"``);
- JS/TS template literals, whose ``${…}`` expressions stay code (blanked ``${`` and ``}``),
  and regex literals where an expression may start (after ``(`` ``=`` ``,`` ``return`` …).

Not handled (rare in real code, and they only blur a line range): a regex right after
``)`` (``if (x) /re/.test(y)``), and ``/`` read as a regex where it divides after a keyword.
"""

from __future__ import annotations

_REGEX_AFTER = frozenset("(,=:[!&|?{};+-*%<>~^")
_REGEX_KEYWORDS = frozenset({"return", "typeof", "instanceof", "in", "of", "new", "delete",
                             "void", "throw", "case", "do", "else", "yield", "await"})


def blank(text: str, lang: str) -> str:
    """``text`` with comments and literal contents blanked (see the module docstring)."""
    return _Blanker(text, lang).run()


class _Blanker:
    def __init__(self, text: str, lang: str) -> None:
        self.text = text
        self.n = len(text)
        self.out = list(text)
        self.lang = lang
        self.js = lang in ("typescript", "javascript")
        self.templates: list[int] = []  # brace depth at each open ``${``
        self.depth = 0
        self.last = ""  # the last significant code character
        self.word = ""  # the last identifier, for regexes after a keyword

    def run(self) -> str:
        i = 0
        while i < self.n:
            i = self.step(i)
        return "".join(self.out)

    def wipe(self, start: int, end: int) -> None:
        for k in range(start, min(end, self.n)):
            if self.out[k] not in "\n\r":
                self.out[k] = " "

    def step(self, i: int) -> int:
        text, c = self.text, self.text[i]
        nxt = text[i + 1] if i + 1 < self.n else ""
        if c == "/" and nxt == "/":
            end = text.find("\n", i)
            end = self.n if end < 0 else end
            self.wipe(i, end)
            return end
        if c == "/" and nxt == "*":
            end = self.block_comment(i)
            self.wipe(i, end)
            return end
        if c in "\"'`" or (c in "rb" and self.lang == "rust"):
            after = self.literal(i)
            if after is not None:
                return after
        if c == "/" and self.js and self.regex_may_start():
            after = self.regex(i)
            if after is not None:
                return after
        return self.code(i, c)

    def code(self, i: int, c: str) -> int:
        if c == "{":
            self.depth += 1
        elif c == "}":
            if self.templates and self.depth == self.templates[-1]:
                self.templates.pop()
                self.wipe(i, i + 1)
                return self.template(i + 1)
            self.depth -= 1
        if c.isalnum() or c in "_$":
            self.word = self.word + c if self.last.isalnum() or self.last in "_$" else c
        elif not c.isspace():
            self.word = ""
        if not c.isspace():
            self.last = c
        return i + 1

    def regex_may_start(self) -> bool:
        if self.word in _REGEX_KEYWORDS and (self.last.isalnum() or self.last in "_$"):
            return True
        return self.last == "" or self.last in _REGEX_AFTER

    # -- literals ----------------------------------------------------------------------

    def literal(self, i: int) -> int | None:
        """The end of a literal starting at ``i`` (its contents blanked), or None."""
        text, c = self.text, self.text[i]
        if c in "rb":
            return self.rust_raw(i)
        self.last, self.word = "a", ""  # a literal is a value: ``/`` after it divides
        if c == "`":
            if self.lang == "go":
                return self.quoted(i, "`", escapes=False, multiline=True)
            if self.js:
                return self.template(i + 1)
            return None
        if c == '"' and self.lang == "java" and text.startswith('"""', i):
            end = text.find('"""', i + 3)
            end = self.n if end < 0 else end + 3
            self.wipe(i + 3, end - 3)
            return end
        if c == "'" and self.lang == "rust":
            return self.rust_char(i)
        return self.quoted(i, c, escapes=True, multiline=c == '"' and self.lang == "rust")

    def quoted(self, i: int, quote: str, *, escapes: bool, multiline: bool) -> int:
        k = i + 1
        while k < self.n:
            ch = self.text[k]
            if escapes and ch == "\\":
                k += 2
                continue
            if ch == quote:
                self.wipe(i + 1, k)
                return k + 1
            if ch == "\n" and not multiline:
                break
            k += 1
        self.wipe(i + 1, k)
        return k

    def rust_char(self, i: int) -> int | None:
        text = self.text
        if text[i + 1:i + 2] == "\\":
            return self.quoted(i, "'", escapes=True, multiline=False)
        if text[i + 2:i + 3] == "'":
            self.wipe(i + 1, i + 2)
            return i + 3
        self.last = "'"  # a lifetime
        return None

    def rust_raw(self, i: int) -> int | None:
        text = self.text
        if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
            return None
        k = i + 1 if text[i] == "r" else i + 2 if text[i + 1:i + 2] == "r" else -1
        if k < 0:
            return None
        hashes = 0
        while k < self.n and text[k] == "#":
            hashes += 1
            k += 1
        if k >= self.n or text[k] != '"':
            return None
        close = '"' + "#" * hashes
        end = text.find(close, k + 1)
        end = self.n if end < 0 else end
        self.wipe(k + 1, end)
        self.last, self.word = "a", ""
        return min(end + len(close), self.n)

    def template(self, k: int) -> int:
        """Scan a template literal's text from ``k``; stop after its closing backtick or at
        an ``${`` (the expression inside is code again)."""
        text = self.text
        start = k
        while k < self.n:
            ch = text[k]
            if ch == "\\":
                k += 2
                continue
            if ch == "`":
                self.wipe(start, k)
                self.last, self.word = "a", ""
                return k + 1
            if ch == "$" and text[k + 1:k + 2] == "{":
                self.wipe(start, k + 2)
                self.templates.append(self.depth)
                self.last, self.word = "{", ""
                return k + 2
            k += 1
        self.wipe(start, k)
        return k

    def regex(self, i: int) -> int | None:
        text, k, in_class = self.text, i + 1, False
        while k < self.n:
            ch = text[k]
            if ch == "\n":
                return None
            if ch == "\\":
                k += 2
                continue
            if ch == "[":
                in_class = True
            elif ch == "]":
                in_class = False
            elif ch == "/" and not in_class:
                if k == i + 1:
                    return None
                self.wipe(i + 1, k)
                self.last, self.word = "a", ""
                return k + 1
            k += 1
        return None

    def block_comment(self, i: int) -> int:
        text, k, depth = self.text, i + 2, 1
        while k < self.n:
            if text.startswith("*/", k):
                depth -= 1
                k += 2
                if depth == 0 or self.lang != "rust":
                    return k
                continue
            if self.lang == "rust" and text.startswith("/*", k):
                depth += 1
                k += 2
                continue
            k += 1
        return self.n
