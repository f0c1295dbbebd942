"""One tree-sitter grammar and one query per language: what the outliner extracts.

Each :class:`Grammar` names its PyPI grammar package and holds a query (S-expressions, as
data) whose captures say what a match is:

``@def.KIND``  a definition of that kind (``class``, ``fn``, ``method`` …); the node's range is
               the symbol's, widened to a wrapper around it (``export``, decorators, Go's
               ``var``/``const``/``type``) when it is the wrapper's only declaration;
``@name``      its name (several in one declaration give one symbol each: ``var a, b``); a
               definition without one is named ``default`` (``export default …``);
``@owner``     a name prefix the definition carries itself (a Go method's receiver type);
``@kind``      a node whose text is the kind (``const`` / ``let``);
``@import``    an imported name (the string's contents, or :attr:`Grammar.import_text`'s);
``@header``    a top-level statement of the file's header (docstring, package, imports).

Captures starting with ``_`` only serve predicates (``#eq?``, ``#any-of?``). When two
patterns match the same node and name, the earlier pattern wins (a getter before a method).

Nesting is not in the queries: a definition inside a *container* (``containers``: class,
impl, namespace …) is named ``Container<sep>name``; one inside any other definition (a
function's local class) or inside a ``blocking`` node (a closure, a Ruby block) is local
and left out. A function kind inside a method container becomes ``method``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

#: a node's text
Text = Callable[[Node], str]


@dataclass(frozen=True)
class Grammar:
    name: str
    query: str
    #: kinds whose members are named after them (``Class.member``)
    containers: frozenset[str]
    #: between a container and a member's name
    separator: str = "."
    #: function kinds that become ``method`` inside one of ``method_containers``
    functions: frozenset[str] = frozenset()
    method_containers: frozenset[str] = frozenset()
    #: node types whose insides are local (closures, blocks)
    blocking: frozenset[str] = frozenset()
    #: node types a definition's range widens to when the definition is their only child
    wrappers: frozenset[str] = frozenset()
    comments: frozenset[str] = frozenset({"comment"})
    #: sibling nodes right above a definition that belong to it (Rust attributes, decorators)
    attributes: frozenset[str] = frozenset()
    #: comments may end a definition's node (Python's indented blocks take in the comment
    #: lines after their last statement): its range ends at its last code instead
    trailing_comments: bool = False
    #: an import node's names, when its text is not simply the name
    import_text: Callable[[Node, Text], list[str]] | None = None
    #: kind → (name, scope) for definitions named by code (a Rust ``impl``)
    custom_names: Mapping[str, Callable[[Node, Text], tuple[str, str]]] = field(
        default_factory=dict)
    #: the qualified name of ``own`` (of ``kind``) in ``scope``; default ``scope<sep>own``
    qualify: Callable[[str, str, str, Node], str] | None = None


# --- Python ---------------------------------------------------------------------------------

PYTHON_QUERY = r"""
(module . (expression_statement (string)) @header)
(module [(import_statement) (import_from_statement) (future_import_statement)] @header)

(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
(import_from_statement module_name: (_) @import)
(future_import_statement) @import

(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name)) @def.variable)
(module (expression_statement (assignment left: (pattern_list (identifier) @name))) @def.variable)
(class_definition body: (block (expression_statement (assignment left: (identifier) @name))
                                @def.attribute))
"""


def _python_import(node: Node, text: Text) -> list[str]:
    """``import a.b`` → ``a.b``; ``from .x import y`` → ``.x``; ``from . import y, z`` →
    ``.y``, ``.z``; ``from __future__ import …`` → ``__future__``."""
    if node.type == "future_import_statement":
        return ["__future__"]
    name = "".join(text(node).split())
    if node.type != "relative_import" or name.strip("."):
        return [name]
    statement = node.parent
    if statement is None:
        return [name]
    out = []
    for item in statement.children_by_field_name("name"):
        target = item.child_by_field_name("name") if item.type == "aliased_import" else item
        if target is not None:
            out.append(name + text(target))
    return out or [name]


PYTHON = Grammar(
    "python", PYTHON_QUERY, containers=frozenset({"class"}),
    functions=frozenset({"function"}), method_containers=frozenset({"class"}),
    blocking=frozenset({"lambda"}), wrappers=frozenset({"decorated_definition"}),
    trailing_comments=True, import_text=_python_import)


# --- Go -------------------------------------------------------------------------------------

GO_QUERY = r"""
(source_file [(package_clause) (import_declaration)] @header)
(import_spec path: [(interpreted_string_literal (interpreted_string_literal_content) @import)
                    (raw_string_literal (raw_string_literal_content) @import)])

(function_declaration name: (identifier) @name) @def.func
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @owner
             (pointer_type (type_identifier) @owner)
             (generic_type type: (type_identifier) @owner)
             (pointer_type (generic_type type: (type_identifier) @owner))]))
  name: (field_identifier) @name) @def.method
(method_declaration name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec name: (type_identifier) @name) @def.type
(type_alias name: (type_identifier) @name) @def.type
(var_spec name: (identifier) @name) @def.var
(const_spec name: (identifier) @name) @def.const
"""

GO = Grammar(
    "go", GO_QUERY, containers=frozenset(), blocking=frozenset({"func_literal"}),
    wrappers=frozenset({"var_declaration", "const_declaration", "type_declaration"}))


# --- Rust -----------------------------------------------------------------------------------

RUST_QUERY = r"""
(source_file [(use_declaration) (extern_crate_declaration)] @header)
(use_declaration argument: (_) @import)
(extern_crate_declaration name: (identifier) @import)

(function_item name: (identifier) @name) @def.fn
(function_signature_item name: (identifier) @name) @def.fn
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.union
(trait_item name: (type_identifier) @name) @def.trait
(mod_item name: (identifier) @name) @def.mod
(type_item name: (type_identifier) @name) @def.type
(const_item name: (identifier) @name) @def.const
(static_item name: (identifier) @name) @def.static
(macro_definition name: (identifier) @name) @def.macro
(impl_item) @def.impl
"""

_GENERICS = re.compile(r"<.*>", re.DOTALL)


def _rust_import(node: Node, text: Text) -> list[str]:
    """A ``use`` path with its spaces taken out (``std::io::{self, Read}``)."""
    if node.parent is not None and node.parent.type == "extern_crate_declaration":
        return [text(node)]
    path = re.sub(r"\s+", "", text(node)).replace(",}", "}")
    return [path.replace(",", ", ")]


def _rust_impl(node: Node, text: Text) -> tuple[str, str]:
    """``impl Trait for Type`` (spaces collapsed), its members scoped by ``Type``."""
    target = node.child_by_field_name("type")
    trait = node.child_by_field_name("trait")
    type_text = " ".join(text(target).split()) if target is not None else "?"
    label = f"{' '.join(text(trait).split())} for {type_text}" if trait is not None else type_text
    return f"impl {label}", _GENERICS.sub("", type_text).strip() or type_text


RUST = Grammar(
    "rust", RUST_QUERY, containers=frozenset({"mod", "impl", "trait"}), separator="::",
    functions=frozenset({"fn"}), method_containers=frozenset({"impl", "trait"}),
    blocking=frozenset({"closure_expression"}),
    comments=frozenset({"line_comment", "block_comment"}),
    attributes=frozenset({"attribute_item"}), import_text=_rust_import,
    custom_names={"impl": _rust_impl})


# --- TypeScript / JavaScript ------------------------------------------------------------------

_ES_QUERY = r"""
(program (import_statement) @header)
(program (export_statement source: (_)) @header)
(program (lexical_declaration
  (variable_declarator value: (call_expression function: (identifier) @_req
                                               (#eq? @_req "require")))) @header)
(program (variable_declaration
  (variable_declarator value: (call_expression function: (identifier) @_req
                                               (#eq? @_req "require")))) @header)

(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (identifier) @_req (#eq? @_req "require")
                 arguments: (arguments . (string (string_fragment) @import)))
(call_expression function: (import) arguments: (arguments . (string (string_fragment) @import)))

(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(class_declaration name: (_) @name) @def.class
(lexical_declaration kind: _ @kind (variable_declarator name: (identifier) @name) @def.var)
(variable_declaration (variable_declarator name: (identifier) @name) @def.var)
(export_statement "default" value: [(function_expression) (arrow_function)] @def.function)
(export_statement "default" value: (class) @def.class)
(export_statement "default" value: (_) @def.default)
(expression_statement
  (assignment_expression
    left: (member_expression object: (identifier) @_module property: (property_identifier) @_exports)
          @name
    (#eq? @_module "module") (#eq? @_exports "exports"))) @def.export
(expression_statement
  (assignment_expression
    left: (member_expression object: (identifier) @_exports property: (property_identifier) @name)
    (#eq? @_exports "exports"))) @def.export
(class_body (method_definition "get" name: (_) @name) @def.getter)
(class_body (method_definition "set" name: (_) @name) @def.setter)
(class_body (method_definition name: (_) @name) @def.method)
"""

JAVASCRIPT_QUERY = _ES_QUERY + r"""
(class_body (field_definition property: (_) @name) @def.property)
"""

TYPESCRIPT_QUERY = _ES_QUERY + r"""
(import_require_clause source: (string (string_fragment) @import))

(function_signature name: (identifier) @name) @def.function
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.enum
(internal_module name: (_) @name) @def.namespace
(module name: (_) @name) @def.namespace
(class_body (public_field_definition name: (_) @name) @def.property)
(class_body (method_signature name: (_) @name) @def.method)
(class_body (abstract_method_signature name: (_) @name) @def.method)
(interface_body (property_signature name: (_) @name) @def.property)
(interface_body (method_signature name: (_) @name) @def.method)
"""

_ES_BLOCKING = frozenset({"arrow_function", "function_expression", "generator_function",
                          "method_definition", "class_static_block"})
_ES_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration",
                          "ambient_declaration", "expression_statement"})

JAVASCRIPT = Grammar(
    "javascript", JAVASCRIPT_QUERY, containers=frozenset({"class"}), blocking=_ES_BLOCKING,
    wrappers=_ES_WRAPPERS, attributes=frozenset({"decorator"}))
TYPESCRIPT = Grammar(
    "typescript", TYPESCRIPT_QUERY,
    containers=frozenset({"class", "interface", "namespace"}), blocking=_ES_BLOCKING,
    wrappers=_ES_WRAPPERS, attributes=frozenset({"decorator"}))
TSX = Grammar(
    "tsx", TYPESCRIPT_QUERY, containers=TYPESCRIPT.containers, blocking=_ES_BLOCKING,
    wrappers=_ES_WRAPPERS, attributes=frozenset({"decorator"}))


# --- Java -----------------------------------------------------------------------------------

JAVA_QUERY = r"""
(program [(package_declaration) (import_declaration)] @header)
(import_declaration) @import

(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.record
(annotation_type_declaration name: (identifier) @name) @def.annotation
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(compact_constructor_declaration name: (identifier) @name) @def.method
(annotation_type_element_declaration name: (identifier) @name) @def.method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @def.field
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @def.field
"""


def _java_import(node: Node, text: Text) -> list[str]:
    """``import static a.B.c;`` → ``a.B.c``; ``import a.*;`` → ``a.*``."""
    parts = [text(c) for c in node.named_children
             if c.type in ("scoped_identifier", "identifier")]
    if not parts:
        return []
    star = any(c.type == "asterisk" for c in node.named_children)
    return [parts[0] + (".*" if star else "")]


JAVA = Grammar(
    "java", JAVA_QUERY,
    containers=frozenset({"class", "interface", "enum", "record", "annotation"}),
    blocking=frozenset({"lambda_expression", "enum_constant", "object_creation_expression",
                        "static_initializer", "block"}),
    comments=frozenset({"line_comment", "block_comment"}), import_text=_java_import)


# --- Ruby -----------------------------------------------------------------------------------

RUBY_QUERY = r"""
(program (call !receiver method: (identifier) @_req
               (#any-of? @_req "require" "require_relative")) @header)
(call !receiver method: (identifier) @_req (#any-of? @_req "require" "require_relative")
      arguments: (argument_list . (string . (string_content) @import .)))

(module name: (_) @name) @def.module
(class name: (_) @name) @def.class
(method name: (_) @name) @def.def
(singleton_method name: (_) @name) @def.def
"""


def _ruby_qualify(scope: str, own: str, kind: str, node: Node) -> str:
    """``A::B`` for modules and classes, ``A::B#m`` for methods, ``A::B.m`` for ``def self.m``
    and the methods of ``class << self``."""
    if kind not in ("method", "def"):
        return f"{scope}::{own}"
    static = node.type == "singleton_method"
    parent = node.parent
    while not static and parent is not None and parent.type not in ("class", "module"):
        static = parent.type == "singleton_class"
        parent = parent.parent
    return f"{scope}{'.' if static else '#'}{own}"


RUBY = Grammar(
    "ruby", RUBY_QUERY, containers=frozenset({"module", "class"}), separator="::",
    functions=frozenset({"def"}), method_containers=frozenset({"module", "class"}),
    blocking=frozenset({"block", "do_block", "lambda"}), qualify=_ruby_qualify)


GRAMMARS: dict[str, Grammar] = {g.name: g for g in (PYTHON, GO, RUST, JAVASCRIPT, TYPESCRIPT,
                                                     TSX, JAVA, RUBY)}


def load_language(name: str) -> object:
    """The grammar package's language pointer (imported on first use: a scan that meets no
    Ruby never loads Ruby's grammar)."""
    if name == "python":
        import tree_sitter_python

        return tree_sitter_python.language()
    if name == "go":
        import tree_sitter_go

        return tree_sitter_go.language()
    if name == "rust":
        import tree_sitter_rust

        return tree_sitter_rust.language()
    if name == "javascript":
        import tree_sitter_javascript

        return tree_sitter_javascript.language()
    if name in ("typescript", "tsx"):
        import tree_sitter_typescript

        if name == "tsx":
            return tree_sitter_typescript.language_tsx()
        return tree_sitter_typescript.language_typescript()
    if name == "java":
        import tree_sitter_java

        return tree_sitter_java.language()
    if name == "ruby":
        import tree_sitter_ruby

        return tree_sitter_ruby.language()
    raise KeyError(name)
