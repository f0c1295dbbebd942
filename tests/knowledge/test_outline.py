"""The tree-sitter outliner, file by file: what the hand-written scanners missed (imports,
members of types, nesting), and text that does not parse or decode."""

from __future__ import annotations

import threading
from textwrap import dedent

import pytest

from relay.knowledge.langs import LANGUAGES, Outline, language_of, outline
from relay.knowledge.langs.grammars import GRAMMARS
from relay.knowledge.langs.outliner import compiled


def shape(lang: str, text: str, path: str = "") -> Outline:
    return outline(lang, dedent(text), path)


def names(found: Outline) -> list[tuple[str, str, int, int]]:
    return [(s.kind, s.name, s.start, s.end) for s in found.symbols]


def test_every_grammar_and_its_query_compile() -> None:
    for grammar in GRAMMARS.values():
        _, query = compiled(grammar)
        assert query.pattern_count > 3, grammar.name
    assert {language_of(p) for p in ("a.py", "a.go", "a.rs", "a.ts", "a.tsx", "a.js", "A.java",
                                      "a.rb", "Gemfile")} == LANGUAGES
    with pytest.raises(KeyError):
        outline("cobol", "")


# --- imports ------------------------------------------------------------------------------

def test_python_imports_anywhere_in_the_file() -> None:
    found = shape("python", '''\
        """Doc."""
        from __future__ import annotations
        import os.path as osp, sys
        from . import sibling, other as o
        from ..pkg.mod import thing
        try:
            import ujson as json
        except ImportError:
            import json

        def lazy():
            from collections import abc
        ''')
    assert found.imports == ["__future__", "os.path", "sys", ".sibling", ".other", "..pkg.mod",
                             "ujson", "json", "collections"]
    assert found.header_end == 5  # docstring and the top-level imports; not the try block


def test_go_imports_single_grouped_named_and_raw() -> None:
    found = shape("go", '''\
        package main

        import "os"
        import (
            f "fmt"
            _ "embed"
            . "strings"
            r `raw/path`
        )
        ''')
    assert found.imports == ["os", "fmt", "embed", "strings", "raw/path"]
    assert found.header_end == 9


def test_rust_use_and_extern_crate_also_inside_modules() -> None:
    found = shape("rust", '''\
        extern crate serde;
        use std::collections::{HashMap, hash_map::Entry};
        pub use crate::model::*;

        mod tests {
            use super::*;
        }
        ''')
    assert found.imports == ["serde", "std::collections::{HashMap, hash_map::Entry}",
                             "crate::model::*", "super::*"]
    assert found.header_end == 3


def test_typescript_imports_reexports_require_and_dynamic_import() -> None:
    found = shape("typescript", '''\
        import React from "react";
        import type { Props } from './props';
        import * as path from "node:path";
        import "./side-effect.css";
        import legacy = require("legacy");
        export { a, b } from "./ab";
        export * from "./all";
        const fs = require("fs");

        async function load() {
          const mod = await import("./lazy");
          return require(`not-a-literal-${mod}`);
        }
        ''')
    assert found.imports == ["react", "./props", "node:path", "./side-effect.css", "legacy",
                             "./ab", "./all", "fs", "./lazy"]
    assert found.header_end == 8


def test_javascript_require_and_import() -> None:
    found = shape("javascript", '''\
        'use strict';
        const { join } = require('path');
        import def, { named } from "./mod.js";
        module.exports = function () { return require("./inner"); };
        ''')
    assert found.imports == ["path", "./mod.js", "./inner"]


def test_java_imports_static_and_wildcard() -> None:
    found = shape("java", '''\
        package com.example;

        import java.util.*;
        import static org.junit.Assert.assertEquals;
        import java.util.concurrent.Future;

        class A {}
        ''')
    assert found.imports == ["java.util.*", "org.junit.Assert.assertEquals",
                             "java.util.concurrent.Future"]
    assert found.header_end == 5


def test_ruby_require_and_require_relative_but_not_other_calls() -> None:
    found = shape("ruby", '''\
        require "json"
        require_relative '../lib/tax'
        require("set")
        require "optional" if ENV["X"]
        loader.require "not/this"
        require "dyn/#{name}"

        def later
          require "lazy"
        end
        ''')
    assert found.imports == ["json", "../lib/tax", "set", "optional", "lazy"]
    assert found.header_end == 6  # top-level require calls (not the modifier's, line 4: inside it)


# --- members and nesting ------------------------------------------------------------------

def test_typescript_class_members_methods_properties_and_accessors() -> None:
    found = shape("typescript", '''\
        export abstract class Store<T> extends Base {
          private items: T[] = [];
          static #count = 0;
          readonly name?: string;

          constructor(private readonly db: Db) {
            super();
          }

          /** The number of items. */
          get size(): number {
            return this.items.length;
          }

          set size(value: number) {}

          @memo()
          async find(id: string): Promise<T> {
            const inner = (x: T) => x;
            return inner(this.items[0]);
          }

          abstract save(item: T): void;
          handle = (event: Event): void => {};
        }

        export interface Db {
          url: string;
          query(sql: string): Promise<unknown>;
        }
        ''')
    assert names(found) == [
        ("class", "Store", 1, 25),
        ("property", "Store.items", 2, 2),
        ("property", "Store.#count", 3, 3),
        ("property", "Store.name", 4, 4),
        ("method", "Store.constructor", 6, 8),
        ("getter", "Store.size", 11, 13),
        ("setter", "Store.size", 15, 15),
        ("method", "Store.find", 17, 21),
        ("method", "Store.save", 23, 23),
        ("property", "Store.handle", 24, 24),
        ("interface", "Db", 27, 30),
        ("property", "Db.url", 28, 28),
        ("method", "Db.query", 29, 29),
    ]
    getter = found.symbols[5]
    assert getter.doc_start == 10  # its doc comment is in its chunk, not its range


def test_tsx_files_are_parsed_with_the_tsx_grammar() -> None:
    text = '''\
        export function App({ items }: Props) {
          return <ul>{items.map((i) => <li key={i}>{i}</li>)}</ul>;
        }
        export const cast = <T,>(x: unknown) => x as T;
        '''
    found = shape("typescript", text, "web/App.tsx")
    assert names(found) == [("function", "App", 1, 3), ("const", "cast", 4, 4)]
    assert not found.damaged
    assert shape("typescript", text, "web/App.ts").damaged  # JSX is not TypeScript


def test_nested_python_classes_and_methods_have_their_own_ranges() -> None:
    found = shape("python", '''\
        class Outer:
            """Doc."""
            limit: int = 3

            class Inner:
                def deep(self):
                    return 1

            @property
            def value(self):
                def helper():  # local: not a symbol
                    class Local:
                        pass
                    return Local
                return helper()
            # a trailing comment is not the method's

        def top():
            pass
        ''')
    assert names(found) == [
        ("class", "Outer", 1, 15), ("attribute", "Outer.limit", 3, 3),
        ("class", "Outer.Inner", 5, 7), ("method", "Outer.Inner.deep", 6, 7),
        ("method", "Outer.value", 9, 15), ("function", "top", 18, 19),
    ]


def test_nested_java_types_and_members() -> None:
    found = shape("java", '''\
        public class Outer {
            private int a, b = 2;

            /** Inner things. */
            static class Inner {
                void deep() {
                    Runnable r = new Runnable() { public void run() {} };
                }
            }

            enum Mode { ON, OFF; boolean on() { return this == ON; } }
        }
        ''')
    assert names(found) == [
        ("class", "Outer", 1, 12), ("field", "Outer.a", 2, 2), ("field", "Outer.b", 2, 2),
        ("class", "Outer.Inner", 5, 9), ("method", "Outer.Inner.deep", 6, 8),
        ("enum", "Outer.Mode", 11, 11), ("method", "Outer.Mode.on", 11, 11),
    ]
    assert found.symbols[3].doc_start == 4


def test_rust_impl_trait_and_mod_members() -> None:
    found = shape("rust", '''\
        pub trait Shape {
            fn area(&self) -> f64;
        }

        impl<T: Copy> fmt::Display for Wrapper<T> where T: Debug {
            /// Formats it.
            #[inline]
            fn fmt(&self, f: &mut Formatter) -> Result {
                let local = |x: i32| x;
                fn nested() {}
                Ok(())
            }
        }

        #[cfg(test)]
        mod tests {
            #[test]
            fn works() {}
        }
        ''')
    assert names(found) == [
        ("trait", "Shape", 1, 3), ("method", "Shape::area", 2, 2),
        ("impl", "impl fmt::Display for Wrapper<T>", 5, 13), ("method", "Wrapper::fmt", 7, 12),
        ("mod", "tests", 15, 19), ("fn", "tests::works", 17, 18),
    ]
    assert found.symbols[3].doc_start == 6


def test_go_methods_grouped_declarations_and_locals() -> None:
    found = shape("go", '''\
        package p

        type (
            ID int
            Pair[T any] struct{ a, b T }
        )

        const (
            A = iota
            B
        )

        func (p *Pair[T]) Swap() { type local int; _ = func() {} }
        ''')
    assert names(found) == [
        ("type", "ID", 4, 4), ("struct", "Pair", 5, 5), ("const", "A", 9, 9),
        ("const", "B", 10, 10), ("method", "Pair.Swap", 13, 13),
    ]


def test_ruby_nested_modules_singletons_and_blocks() -> None:
    found = shape("ruby", '''\
        module Outer
          module Inner
            class Thing < Base
              class << self
                def build; end
              end

              def call
                items.each do |i|
                  def not_a_method; end
                end
              end
            end
          end
        end
        ''')
    assert names(found) == [
        ("module", "Outer", 1, 15), ("module", "Outer::Inner", 2, 14),
        ("class", "Outer::Inner::Thing", 3, 13), ("method", "Outer::Inner::Thing.build", 5, 5),
        ("method", "Outer::Inner::Thing#call", 8, 12),
    ]


def test_typescript_namespaces_and_declarations_nest() -> None:
    found = shape("typescript", '''\
        export namespace Api.V1 {
          export function get(): void {}
          export class Client { close() {} }
        }
        declare module "untyped" {
          export const version: string;
        }
        function outer() {
          function inner() {}
          class Local { m() {} }
        }
        ''')
    assert names(found) == [
        ("namespace", "Api.V1", 1, 4), ("function", "Api.V1.get", 2, 2),
        ("class", "Api.V1.Client", 3, 3), ("method", "Api.V1.Client.close", 3, 3),
        ("namespace", "untyped", 5, 7), ("const", "untyped.version", 6, 6),
        ("function", "outer", 8, 11),
    ]


# --- text that does not parse, decode or exist --------------------------------------------

@pytest.mark.parametrize(("lang", "text", "expected"), [
    ("python", "import os\n\ndef ok():\n    return 1\n\ndef broken(:\n    pass\n\n"
               "class Later:\n    def m(self):\n        return 2\n",
     [("function", "ok", 3, 4), ("class", "Later", 9, 11), ("method", "Later.m", 10, 11)]),
    ("go", "package main\n\nfunc ok() {}\n\nfunc broken( {\n\treturn\n}\n\ntype T struct{}\n",
     [("func", "ok", 3, 3), ("struct", "T", 9, 9)]),
    ("typescript", "class A {\n  ok() { return 1; }\n  bad( { }\n}\nfunction after() {}\n",
     [("class", "A", 1, 4), ("method", "A.ok", 2, 2), ("function", "after", 5, 5)]),
    ("java", "class A {\n  void ok() {}\n  void bad( {\n}\nclass B {}\n",
     [("method", "A.ok", 2, 2)]),
    ("rust", "fn ok() {}\nfn broken( {\n}\nstruct After;\n",
     [("fn", "ok", 1, 1), ("struct", "After", 4, 4)]),
    ("ruby", "def ok; end\ndef bad(\nend\ndef after; end\n", [("def", "ok", 1, 1)]),
])
def test_a_syntax_error_keeps_what_parses(lang: str, text: str,
                                          expected: list[tuple[str, str, int, int]]) -> None:
    found = outline(lang, text)
    assert found.damaged
    got = names(found)
    for item in expected:
        assert item in got, (item, got)


def test_text_that_was_not_utf8_outlines_around_the_replacement_characters() -> None:
    raw = b"# caf\xe9 \xff\xfe\nimport os\n\ndef f():\n    return '\xe9t\xe9'\n\nclass K:\n    pass\n"
    found = outline("python", raw.decode("utf-8", errors="replace"))
    assert names(found) == [("function", "f", 4, 5), ("class", "K", 7, 8)]
    assert found.imports == ["os"]
    # lone surrogates (a str that is not valid Unicode text) do not raise either
    assert names(outline("javascript", "function g() { return '\udcff'; }\n")) == [
        ("function", "g", 1, 1)]


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_an_empty_or_blank_file_has_no_symbols(lang: str) -> None:
    for text in ("", "\n\n  \n", "\r\n"):
        found = outline(lang, text)
        assert (found.symbols, found.imports, found.header_end, found.damaged) == ([], [], 0, False)


def test_crlf_line_endings_keep_line_numbers() -> None:
    found = outline("go", "package p\r\n\r\n// F does it.\r\nfunc F() {\r\n}\r\n")
    assert names(found) == [("func", "F", 4, 5)]
    assert found.symbols[0].doc_start == 3


def test_threads_outline_at_once_and_agree() -> None:
    text = "".join(f"class C{i}:\n    def m(self):\n        return {i}\n\n" for i in range(300))
    expected = names(outline("python", text))
    results: list[list[tuple[str, str, int, int]]] = []

    def work() -> None:
        for _ in range(5):
            results.append(names(outline("python", text)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(expected) == 600
    assert results == [expected] * 20
