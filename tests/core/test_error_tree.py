"""Every RelayError is declared in relay.core.errors: one tree a front end can read whole."""

from __future__ import annotations

import importlib
import pkgutil

import relay
from relay.core.errors import RelayError


def _subclasses(cls: type[RelayError]) -> set[type[RelayError]]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_relay_error_lives_in_the_one_tree() -> None:
    for info in pkgutil.walk_packages(relay.__path__, "relay."):
        if not info.name.startswith("relay.gui") and not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    strays = sorted(f"{c.__module__}.{c.__qualname__}" for c in _subclasses(RelayError)
                    if c.__module__ != "relay.core.errors")
    assert strays == []
