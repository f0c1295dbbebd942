"""The static facts core keeps about runtimes agree with the adapters that run them."""

from __future__ import annotations

import pytest

from relay.core.models import SIMULATED_RUNTIMES, simulated_entry
from relay.runtimes.registry import adapter_class, available_runtimes


@pytest.mark.parametrize("runtime", available_runtimes())
def test_simulated_runtimes_match_each_adapters_flag(runtime: str) -> None:
    assert (runtime in SIMULATED_RUNTIMES) is adapter_class(runtime).simulated


def test_a_chain_entry_is_simulated_by_its_runtime_not_its_account() -> None:
    assert simulated_entry("demo:alice")
    assert not simulated_entry("claude:demo")
    assert not simulated_entry("no-such-runtime")
