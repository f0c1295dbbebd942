"""A seeded, polyglot git repository for the knowledge scan benchmark.

``generate(folder, files, seed)`` writes ``files`` source files in the seven languages the
scanner outlines — Python 25 %, TypeScript 18 % (a sixth of them .tsx), JavaScript 14 %,
Go 15 %, Java 11 %, Rust 10 %, Ruby 7 % — under package-like folders, and commits them
(pygit2), so the scanner takes every blob sha from git's index as it does on a real
checkout. Each file is a header (license comment, package line, imports) and 4–40
declarations drawn from templates that look like ordinary code: documented classes with
fields, accessors and methods, functions, constants, nested types, and the things that trip
hand-written scanners — braces and keywords inside strings, comments, template literals,
regexes and heredocs. Same seed and count, same bytes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pygit2

GENERATOR_VERSION = 1
MANIFEST = "bench-manifest.json"
MIB = 1 << 20

_WORDS = ("account", "invoice", "ledger", "cart", "order", "user", "session", "token", "cache",
          "router", "handler", "widget", "report", "query", "index", "stream", "buffer",
          "payment", "refund", "tax", "price", "item", "batch", "job", "queue", "worker",
          "event", "store", "model", "view", "config", "client", "server", "request",
          "response", "shape", "point", "graph", "node", "edge", "parser", "token", "scope")
_MIX = (("python", 25), ("typescript", 18), ("javascript", 14), ("go", 15), ("java", 11),
        ("rust", 10), ("ruby", 7))
_EXT = {"python": ".py", "typescript": ".ts", "javascript": ".js", "go": ".go",
        "java": ".java", "rust": ".rs", "ruby": ".rb"}


@dataclass
class Stats:
    files: int
    bytes: int
    by_lang: dict[str, int]


class _Names:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def words(self, n: int = 2) -> list[str]:
        return [self.rng.choice(_WORDS) for _ in range(n)]

    def snake(self, n: int = 2) -> str:
        return self._unique("_".join(self.words(n)))

    def camel(self, n: int = 2) -> str:
        first, *rest = self.words(n)
        return self._unique(first + "".join(w.title() for w in rest))

    def pascal(self, n: int = 2) -> str:
        return self._unique("".join(w.title() for w in self.words(n)))

    def _unique(self, name: str) -> str:
        base, k = name, 2
        while name in self.used:
            name = f"{base}{k}"
            k += 1
        self.used.add(name)
        return name


# --- per language ----------------------------------------------------------------------------

def _python(rng: random.Random, n: _Names, units: int) -> str:
    out = ['# Copyright (c) the bench authors. Generated: do not edit by hand.',
           f'"""The {" ".join(n.words(3))} module."""', "from __future__ import annotations", "",
           "import json", "import logging", f"from .{n.snake(1)} import {n.pascal()}",
           f"from ..{n.snake(1)}.{n.snake(1)} import {n.snake()}, {n.snake()}", "",
           "log = logging.getLogger(__name__)", f"{n.snake().upper()} = {rng.randint(1, 999)}", ""]
    for _ in range(units):
        pick = rng.random()
        if pick < 0.45:
            cls = n.pascal()
            out += ["", f"class {cls}({rng.choice(['object', 'Base', 'dict'])}):",
                    f'    """A {" ".join(n.words(3))}: keeps {{braces}} and "quotes"."""', "",
                    f"    limit: int = {rng.randint(1, 99)}", ""]
            for _ in range(rng.randint(2, 7)):
                meth = n.snake()
                deco = rng.choice(["", "    @property\n", "    @staticmethod\n", ""])
                args = "self" if "staticmethod" not in deco else "value"
                out += [f"{deco}    def {meth}({args}, *extra: object) -> dict[str, object]:",
                        f'        """Return the {meth.replace("_", " ")}."""',
                        "        found = {'key': [1, 2, 3], 'text': \"def not_real(): {\"}",
                        "        for part in extra:  # a comment with class and def in it",
                        "            found[str(part)] = json.dumps(part)",
                        f"        log.debug('%s done', {meth!r})",
                        "        return found", ""]
            if rng.random() < 0.3:
                out += [f"    class {n.pascal()}:", "        def inner(self) -> int:",
                        "            return 1", ""]
        elif pick < 0.85:
            fn = n.snake()
            out += ["", f"# {fn} does {' '.join(n.words(4))}.",
                    f"def {fn}(data: list[int], scale: float = 1.0) -> float:",
                    '    """Sum it; "}" and \'{\' are just text here."""', "    total = 0.0",
                    "    for value in data:", "        if value > 0:",
                    "            total += value * scale", "        else:",
                    "            total -= abs(value) / 2", "    return total", ""]
        else:
            out += [f"{n.snake().upper()} = {{'a': 1, 'b': [{rng.randint(0, 9)}, 2]}}", ""]
    return "\n".join(out) + "\n"


def _typescript(rng: random.Random, n: _Names, units: int, tsx: bool) -> str:
    out = ["// Copyright (c) the bench authors.",
           f'import {{ {n.pascal()}, {n.pascal()} }} from "./{n.snake(1)}";',
           f'import * as {n.camel(1)} from "../{n.snake(1)}/{n.snake(1)}";',
           f'import type {{ {n.pascal()} }} from "@app/{n.snake(1)}";', ""]
    for _ in range(units):
        pick = rng.random()
        if pick < 0.4:
            cls = n.pascal()
            out += [f"/** The {' '.join(n.words(3))}. */", f"export class {cls} {{",
                    f"  private readonly {n.camel()}: Map<string, number> = new Map();",
                    f"  static {n.camel()} = `count ${{1 + 2}} {{not a block}}`;", "",
                    f"  constructor(private {n.camel()}: string) {{}}", "",
                    f"  get {n.camel()}(): number {{", "    return this.constructor.length;", "  }", ""]
            for _ in range(rng.randint(2, 6)):
                out += [f"  async {n.camel()}(input: string): Promise<{{ ok: boolean }}> {{",
                        "    const re = /[{}]+/g;", "    if (re.test(input)) {",
                        '      return { ok: input.includes("}") };', "    }",
                        "    return { ok: false };", "  }", ""]
            out += ["}", ""]
        elif pick < 0.55:
            out += [f"export interface {n.pascal()} {{", f"  {n.camel()}: string;",
                    f"  {n.camel()}?: number;", f"  {n.camel()}(value: string): void;", "}", ""]
        elif pick < 0.65:
            out += [f"export type {n.pascal()} =", '  | "left"', '  | "right";', ""]
        elif pick < 0.9:
            fn = n.camel()
            jsx = f"<div className=\"{fn}\">{{items.map((i) => <span key={{i}}>{{i}}</span>)}}</div>"
            body = f"  return {jsx};" if tsx else "  return items.map((i) => `${i}`).join(\"}\");"
            out += [f"// {fn}: {' '.join(n.words(4))}", f"export function {fn}(items: string[]) {{",
                    body, "}", ""]
        else:
            out += [f"export const {n.camel().upper()}: number = {rng.randint(1, 999)};", ""]
    return "\n".join(out) + "\n"


def _javascript(rng: random.Random, n: _Names, units: int) -> str:
    out = ["'use strict';", f'const {n.camel(1)} = require("{n.snake(1)}");',
           f'const {{ {n.camel()} }} = require("./{n.snake(1)}");', ""]
    exported = []
    for _ in range(units):
        pick = rng.random()
        if pick < 0.35:
            cls = n.pascal()
            exported.append(cls)
            out += [f"class {cls} {{", "  constructor(options) {", "    this.options = options || {};",
                    "  }", ""]
            for _ in range(rng.randint(2, 5)):
                out += [f"  {n.camel()}(key) {{", "    const text = `{${key}}`;",
                        "    return this.options[key] ?? text.replace(/[{}]/g, '');", "  }", ""]
            out += ["}", ""]
        elif pick < 0.85:
            fn = n.camel()
            exported.append(fn)
            out += [f"// {' '.join(n.words(4))}", f"function {fn}(list, fn) {{",
                    "  const out = [];", "  for (const item of list) {",
                    "    if (fn(item)) { out.push(item); }", "  }", '  return out.join("/}");',
                    "}", ""]
        else:
            out += [f"const {n.camel().upper()} = {{ a: 1, b: '{{' }};", ""]
    out += [f"module.exports = {{ {', '.join(exported[:20])} }};"]
    return "\n".join(out) + "\n"


def _go(rng: random.Random, n: _Names, units: int) -> str:
    out = ["// Package " + n.snake(1) + " does " + " ".join(n.words(3)) + ".",
           f"package {n.snake(1).replace('_', '')}", "", "import (", '\t"fmt"', '\t"strings"',
           f'\t{n.snake(1)} "example.com/{n.snake(1)}/{n.snake(1)}"', ")", ""]
    for _ in range(units):
        pick = rng.random()
        if pick < 0.35:
            typ = n.pascal()
            out += [f"// {typ} holds {' '.join(n.words(3))}.", f"type {typ} struct {{",
                    "\tName  string // \"{ not a brace\"", "\tcount int", "}", ""]
            for _ in range(rng.randint(1, 5)):
                out += [f"func (s *{typ}) {n.pascal()}(prefix string) (string, error) {{",
                        "\tif s.count > 0 {", '\t\treturn fmt.Sprintf("%s{%d}", prefix, s.count), nil',
                        "\t}", "\traw := `raw { string`", "\treturn strings.ToUpper(raw + s.Name), nil",
                        "}", ""]
        elif pick < 0.8:
            fn = n.pascal()
            out += [f"// {fn} is {' '.join(n.words(4))}.", f"func {fn}(values []int) int {{",
                    "\ttotal := 0", "\tfor _, v := range values {", "\t\tif v%2 == 0 {",
                    "\t\t\ttotal += v", "\t\t}", "\t}", "\treturn total", "}", ""]
        else:
            out += ["const (", f"\t{n.pascal()} = iota", f"\t{n.pascal()}", ")", "",
                    f"var {n.camel()} = map[string]int{{", '\t"a": 1,', "}", ""]
    return "\n".join(out) + "\n"


def _java(rng: random.Random, n: _Names, units: int) -> str:
    cls = n.pascal()
    out = [f"package com.example.{n.snake(1)};", "", "import java.util.List;",
           "import java.util.Map;", "import static java.lang.Math.max;", "", "/**",
           f" * The {' '.join(n.words(3))}.", " */", f"public class {cls} {{",
           '    private final String label = "}";', f"    private int {n.camel()} = 0;", ""]
    for _ in range(units):
        pick = rng.random()
        if pick < 0.8:
            out += ["    @Override" if rng.random() < 0.2 else "    /** Does a thing. */",
                    f"    public List<String> {n.camel()}(Map<String, Integer> counts) {{",
                    "        if (counts.isEmpty()) { return List.of(\"{\"); }",
                    "        int top = 0;", "        for (int v : counts.values()) {",
                    "            top = max(top, v);", "        }",
                    "        return List.of(label + top);", "    }", ""]
        else:
            out += [f"    static class {n.pascal()} {{", f"        void {n.camel()}() {{}}",
                    "    }", ""]
    out += ["}", ""]
    return "\n".join(out) + "\n"


def _rust(rng: random.Random, n: _Names, units: int) -> str:
    out = ["//! " + " ".join(n.words(4)).capitalize() + ".", "use std::collections::HashMap;",
           "use std::io::{self, Read};", f"use crate::{n.snake(1)}::{n.pascal()};", ""]
    for _ in range(units):
        pick = rng.random()
        if pick < 0.4:
            typ = n.pascal()
            out += [f"/// A {' '.join(n.words(3))}.", "#[derive(Debug, Clone)]",
                    f"pub struct {typ} {{", "    name: String, // }", "    count: usize,", "}", "",
                    f"impl {typ} {{"]
            for _ in range(rng.randint(1, 5)):
                out += [f"    pub fn {n.snake()}(&self, key: &str) -> Option<usize> {{",
                        "        let brace = '{';", '        let raw = r#"a "quoted" { brace"#;',
                        "        if key.is_empty() { return None; }",
                        "        Some(self.count + raw.len() + brace.len_utf8())", "    }", ""]
            out += ["}", ""]
        elif pick < 0.85:
            out += [f"pub fn {n.snake()}(values: &[i64]) -> HashMap<i64, usize> {{",
                    "    let mut out = HashMap::new();", "    for v in values {",
                    "        *out.entry(*v).or_insert(0) += 1; /* count { it */", "    }",
                    "    out", "}", ""]
        else:
            out += [f"pub const {n.snake().upper()}: usize = {rng.randint(1, 999)};", ""]
    return "\n".join(out) + "\n"


def _ruby(rng: random.Random, n: _Names, units: int) -> str:
    mod = n.pascal()
    out = ['require "json"', f'require_relative "{n.snake(1)}/{n.snake(1)}"', "",
           f"# The {' '.join(n.words(3))}.", f"module {mod}"]
    for _ in range(units):
        if rng.random() < 0.6:
            out += [f"  # A {' '.join(n.words(2))}.", f"  class {n.pascal()} < Base"]
            for _ in range(rng.randint(1, 4)):
                out += [f"    def {n.snake()}(items)", "      items.each do |item|",
                        '        puts "item #{item} end"', "      end",
                        "      return nil if items.empty?", "    end", ""]
            out += ["    def self.build(text)", "      sql = <<~SQL",
                    "        select * from t where end = 1", "      SQL", "      new(sql)",
                    "    end", "  end", ""]
        else:
            out += [f"  def self.{n.snake()}(value)", "    %w[end def class].map { |w| w * value }",
                    "  end", ""]
    out += ["end", ""]
    return "\n".join(out) + "\n"


_MAKERS: dict[str, Callable[[random.Random, _Names, int], str]] = {
    "python": _python, "javascript": _javascript, "go": _go, "java": _java, "rust": _rust,
    "ruby": _ruby,
}


def source(lang: str, rng: random.Random, units: int, tsx: bool = False) -> str:
    names = _Names(rng)
    if lang == "typescript":
        return _typescript(rng, names, units, tsx)
    return _MAKERS[lang](rng, names, units)


def generate(folder: Path, files: int, seed: int) -> Stats:
    """Write and commit the repository (see the module docstring)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    langs = [lang for lang, weight in _MIX for _ in range(weight)]
    stats = Stats(0, 0, {})
    for k in range(files):
        lang = rng.choice(langs)
        tsx = lang == "typescript" and rng.random() < 1 / 6
        top = f"{rng.choice(('services', 'libs', 'apps', 'tools'))}/{rng.choice(_WORDS)}"
        ext = ".tsx" if tsx else _EXT[lang]
        name = f"{rng.choice(_WORDS)}_{k}{ext}"
        if lang == "java":
            name = f"{rng.choice(_WORDS).title()}{k}.java"
        path = folder / top / lang / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = source(lang, rng, rng.randint(4, 40), tsx).encode()
        path.write_bytes(data)
        stats.files += 1
        stats.bytes += len(data)
        stats.by_lang[lang] = stats.by_lang.get(lang, 0) + 1
    repo = pygit2.init_repository(str(folder), initial_head="main")
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    who = pygit2.Signature("bench", "bench@example.invalid", 0, 0)
    repo.create_commit("HEAD", who, who, "generated", tree, [])
    (folder / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (folder / ".git" / "info" / "exclude").write_text(MANIFEST + "\n")
    (folder / MANIFEST).write_text(json.dumps({"generator": GENERATOR_VERSION, "files": files,
                                               "seed": seed, "bytes": stats.bytes,
                                               "by_lang": stats.by_lang}))
    return stats
