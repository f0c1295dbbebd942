"""The client's parts import the models their methods rebuild answers as when a part is made
(:attr:`relay.api.client_features.Part.models`): each part must name every one it uses."""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from collections.abc import Iterator

import pytest

from relay.api import client_board, client_features, client_talk
from relay.api.client_features import Part

PARTS = sorted({cls for module in (client_features, client_board, client_talk)
                for cls in vars(module).values()
                if inspect.isclass(cls) and issubclass(cls, Part) and cls is not Part},
               key=lambda cls: cls.__qualname__)


def _type_checking_names() -> set[str]:
    """What client_features imports for the type checker only (not at run time)."""
    tree = ast.parse(inspect.getsource(client_features))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.asname or alias.name for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


#: the names the parts' methods may only find once a part imported them
LAZY = _type_checking_names()


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _used(part: type[Part]) -> set[str]:
    """The lazily imported names the part's own methods look up."""
    found: set[str] = set()
    for value in vars(part).values():
        function = getattr(value, "__func__", value)
        if isinstance(function, types.FunctionType):
            found.update(_names(function.__code__))
    return found & LAZY


@pytest.mark.parametrize("part", PARTS, ids=lambda cls: cls.__qualname__)
def test_each_part_names_the_models_its_methods_use(part: type[Part]) -> None:
    named = {target.partition(":")[2] for target in part.models}

    assert _used(part) <= named


@pytest.mark.parametrize("part", PARTS, ids=lambda cls: cls.__qualname__)
def test_each_named_model_is_where_the_part_says(part: type[Part]) -> None:
    for target in part.models:
        module, _, name = target.partition(":")
        assert inspect.isclass(getattr(importlib.import_module(module), name)), target
