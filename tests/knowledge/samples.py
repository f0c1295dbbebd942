"""Small source files in the seven languages the scanner outlines, and what it must find.

The expected symbols were read off the texts by line number (kind, name, first and last
line; attributes, annotations and decorators belong to the symbol, comments above do not),
members of types included (``Widget.size``, ``Point::new``, ``Account.owner``).
Each file has a trap: braces in strings, comments, raw strings, template literals and
regexes; a Rust ``where`` clause; a Ruby heredoc and ``%w[]`` holding ``end``; an endless
Ruby method; a TypeScript return type written as an object literal.
"""

from __future__ import annotations

SOURCES: dict[str, str] = {
    "cmd/server.go": '''\
// Package server answers requests.
package server

import (
    "fmt"
    str "strings"
)

// MaxConns caps open connections.
const MaxConns = 10

var (
    cache = map[string]int{
        "a": 1,
    }
    _ = fmt.Sprintf
)

type Handler func(w string) error

type Server struct {
    Addr  string // "{ not a brace"
    conns int
}

// New makes a server; `raw { string` must not count.
func New(addr string) *Server {
    s := `raw { string`
    if addr == "" {
        addr = "}"
    }
    return &Server{Addr: addr + str.ToLower(s)}
}

func (s *Server) Serve() error {
    fmt.Println('{')
    return nil
}
''',
    "geometry/src/lib.rs": '''\
//! Geometry.
use std::collections::HashMap;
use std::io::{
    self,
    Read,
};

/// A point on the plane.
#[derive(Debug, Clone)]
pub struct Point {
    x: i32, // }
    y: i32,
}

pub enum Shape<'a> {
    Circle { r: f64 },
    Named(&'a str),
}

impl Point
where
    Self: Sized,
{
    pub fn new(x: i32) -> Self {
        let brace = '{';
        Point { x, y: 0 }
    }
}

pub const LIMIT: usize = 10;

macro_rules! square {
    ($x:expr) => { $x * $x };
}

pub async fn fetch_shapes<'a>(s: &'a str) -> HashMap<String, Point> {
    let raw = r#"a "quoted" { brace"#;
    /* nested /* comment { */ still */
    HashMap::new()
}
''',
    "web/widget.ts": '''\
import { render } from "./render";
import {
  Options,
  Mode,
} from "../types";

/** A widget. */
@Component({ selector: "x-widget" })
export class Widget {
  private label = `count ${this.count + "}"} items`;
  size(): { w: number } {
    return { w: 1 };
  }
}

export interface WidgetProps {
  mode?: Mode;
}

export type Align =
  | "left"
  | "right";

export function parseWidget(input: string): { ok: boolean } {
  const re = /[{}]+/g;
  return { ok: re.test(input) };
}

export const DEFAULT_ALIGN: Align = "left"
''',
    "web/util.js": '''\
const path = require("path");
import("./lazy.mjs");

// Joins parts.
function joinAll(...parts) {
  return parts.join("/}");
}

class Cache {
  get(key) {
    return this.map[key] ?? `{${key}`;
  }
}

export default function () {
  return 1;
}

module.exports = { joinAll, Cache };
''',
    "app/billing.py": '''\
"""Billing helpers."""
import decimal
from .models import Invoice

RATE = decimal.Decimal("0.2")


# Rounds to cents.
@staticmethod
def round_cents(value):
    return value.quantize(decimal.Decimal("0.01"))


class Ledger:
    """Keeps invoices."""

    def add(self, invoice: Invoice) -> None:
        self.items.append(invoice)

    async def total(self):
        return sum(i.amount for i in self.items)
''',
    "bank/Account.java": '''\
package com.example.bank;

import java.util.List;
import static java.lang.Math.max;

/**
 * A bank account.
 */
@Entity
public class Account {
    private final String owner = "}";

    public Account(String owner) {
        this.owner = owner;
    }

    @Override
    public String toString() {
        if (owner == null) { return "{"; }
        return owner;
    }

    public static <T> List<T> history(T item,
                                      int count) {
        return List.of(item);
    }
}

interface Ledger {
    long balance(String id);
}

record Money(long cents) {}
''',
    "lib/shop.rb": '''\
require "json"
require_relative "lib/tax"

# The shop.
module Shop
  # A cart.
  class Cart < Base
    def initialize(items)
      @items = items
      if items.empty?
        puts "empty #{items.size > 0 ? "yes" : "no"} end"
      end
    end

    def self.from_json(text)
      data = JSON.parse(text)
      data.each do |row|
        next unless row
        return row if row[:end]
      end
      sql = <<~SQL
        select * from carts where end = 1
        def fake
      SQL
      new(data)
    end

    def empty? = @items.empty?

    private def secret
      %w[end def class].map { |w| w.upcase }
    end
  end
end

def checkout(cart)
  case cart
  when nil then :none
  else :ok
  end
end
''',
}

#: (kind, name, startLine, endLine) per file, in source order
SYMBOLS: dict[str, list[tuple[str, str, int, int]]] = {
    "cmd/server.go": [
        ("const", "MaxConns", 10, 10), ("var", "cache", 13, 15), ("type", "Handler", 19, 19),
        ("struct", "Server", 21, 24), ("func", "New", 27, 33), ("method", "Server.Serve", 35, 38),
    ],
    "geometry/src/lib.rs": [
        ("struct", "Point", 9, 13), ("enum", "Shape", 15, 18), ("impl", "impl Point", 20, 28),
        ("method", "Point::new", 24, 27), ("const", "LIMIT", 30, 30), ("macro", "square", 32, 34),
        ("fn", "fetch_shapes", 36, 40),
    ],
    "web/widget.ts": [
        ("class", "Widget", 8, 14), ("property", "Widget.label", 10, 10),
        ("method", "Widget.size", 11, 13), ("interface", "WidgetProps", 16, 18),
        ("property", "WidgetProps.mode", 17, 17),
        ("type", "Align", 20, 22), ("function", "parseWidget", 24, 27),
        ("const", "DEFAULT_ALIGN", 29, 29),
    ],
    "web/util.js": [
        ("const", "path", 1, 1), ("function", "joinAll", 5, 7), ("class", "Cache", 9, 13),
        ("method", "Cache.get", 10, 12),
        ("function", "default", 15, 17), ("export", "module.exports", 19, 19),
    ],
    "app/billing.py": [
        ("variable", "RATE", 5, 5), ("function", "round_cents", 9, 11), ("class", "Ledger", 14, 21),
        ("method", "Ledger.add", 17, 18), ("method", "Ledger.total", 20, 21),
    ],
    "bank/Account.java": [
        ("class", "Account", 9, 27), ("field", "Account.owner", 11, 11),
        ("method", "Account.Account", 13, 15),
        ("method", "Account.toString", 17, 21), ("method", "Account.history", 23, 26),
        ("interface", "Ledger", 29, 31), ("method", "Ledger.balance", 30, 30),
        ("record", "Money", 33, 33),
    ],
    "lib/shop.rb": [
        ("module", "Shop", 5, 34), ("class", "Shop::Cart", 7, 33),
        ("method", "Shop::Cart#initialize", 8, 13), ("method", "Shop::Cart.from_json", 15, 26),
        ("method", "Shop::Cart#empty?", 28, 28), ("method", "Shop::Cart#secret", 30, 32),
        ("def", "checkout", 36, 41),
    ],
}

IMPORTS: dict[str, list[str]] = {
    "cmd/server.go": ["fmt", "strings"],
    "geometry/src/lib.rs": ["std::collections::HashMap", "std::io::{self, Read}"],
    "web/widget.ts": ["./render", "../types"],
    "web/util.js": ["path", "./lazy.mjs"],
    "app/billing.py": ["decimal", ".models"],
    "bank/Account.java": ["java.util.List", "java.lang.Math.max"],
    "lib/shop.rb": ["json", "lib/tax"],
}

LANGS = {"cmd/server.go": "go", "geometry/src/lib.rs": "rust", "web/widget.ts": "typescript",
         "web/util.js": "javascript", "app/billing.py": "python", "bank/Account.java": "java",
         "lib/shop.rb": "ruby"}
