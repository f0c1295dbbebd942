"""The price table: lookups by id and family, the user's overrides, unknown models."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from relay.core.config import load_config
from relay.wallet.model import Tokens
from relay.wallet.pricing import Pricing, normalise_model, shipped_table


@pytest.fixture
def pricing() -> Pricing:
    return Pricing.from_tables(shipped_table())


@pytest.mark.parametrize(("model", "key"), [
    # what the recorded fixtures report (tests/fixtures/*/NOTES.md)
    ("claude-opus-4-8", "claude-opus-4-8"),
    ("claude-opus-4-8[1m]", "claude-opus-4-8"),
    ("claude-sonnet-5", "claude-sonnet-5"),
    ("claude-haiku-4-5-20251001", "claude-haiku-4"),
    ("gpt-5.5", "gpt-5.5"),
    ("gemini-2.5-pro", "gemini-2.5-pro"),
    ("gemini-3.8-flash", "gemini-3.8-flash"),
    ("gemini-3.5-flash-lite", "gemini-3.5-flash-lite"),
    # dated ids, provider prefixes and tags find their family
    ("claude-opus-4-1-20250805", "claude-opus-4-1"),
    ("claude-opus-4-5@20251101", "claude-opus-4-5"),
    ("anthropic/claude-sonnet-4-5", "claude-sonnet-4"),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4"),
    ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
    ("gpt-5.1-codex-mini", "gpt-5.1-codex-mini"),
    ("models/gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
    ("qwen3-coder:30b", "qwen3-coder"),
    ("Llama3.1:8B", "llama3.1"),
])
def test_models_resolve_to_the_longest_key_they_start_with(pricing: Pricing, model: str,
                                                           key: str) -> None:
    price = pricing.price(model)
    assert price is not None, model
    assert price.model == key


def test_the_old_opus_price_is_not_the_new_one(pricing: Pricing) -> None:
    old, new = pricing.price("claude-opus-4-20250514"), pricing.price("claude-opus-4-8")
    assert old is not None
    assert new is not None
    assert (old.input, old.output) == (15.0, 75.0)
    assert (new.input, new.output, new.cache_read, new.cache_write) == (5.0, 25.0, 0.5, 6.25)


@pytest.mark.parametrize("model", ["gpt-5.7", "claude-opus-48", "mock-model", "<synthetic>", ""])
def test_a_near_miss_is_unknown_not_a_neighbour(pricing: Pricing, model: str) -> None:
    assert pricing.price(model) is None


def test_an_unknown_model_costs_unknown_and_is_counted(pricing: Pricing) -> None:
    tokens = Tokens(input=1000, output=100)
    first = pricing.cost(tokens, "mock-model")
    pricing.cost(tokens, "mock-model")
    pricing.cost(tokens, None)
    assert first.value is None
    assert first.source == "unknown"
    assert first.detail == "no price for mock-model"
    assert pricing.unknown == {"mock-model": 2, "(no model)": 1}
    assert pricing.warnings == 3


def test_a_cost_says_which_price_and_its_date(pricing: Pricing) -> None:
    figure = pricing.cost(Tokens(input=1_000_000, output=1_000_000, cache_read=1_000_000,
                                 cache_write=1_000_000), "claude-haiku-4-5-20251001")
    assert figure.value == pytest.approx(1.0 + 5.0 + 0.1 + 1.25)
    assert figure.source == "estimate"
    assert "claude-haiku-4-5-20251001 priced as claude-haiku-4" in figure.detail
    assert "as of 2026-11-30" in figure.detail


def _claude_results(fixtures_dir: Path) -> list[dict[str, Any]]:
    usages: list[dict[str, Any]] = []
    for path in sorted((fixtures_dir / "claude" / "captures").rglob("stdout.*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if '"modelUsage"' not in line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            usages.extend({"model": m, **u} for m, u in obj.get("modelUsage", {}).items())
    return usages


def test_estimates_match_what_claude_code_charged_for_opus_and_haiku(
        pricing: Pricing, fixtures_dir: Path) -> None:
    """Claude Code computes its costs from a price table too: ours agrees with it where
    both know the model (Sonnet 5: see the note on its entry in prices.json)."""
    checked = 0
    for u in _claude_results(fixtures_dir):
        if not re.match(r"claude-(opus-4-8|haiku-4-5)", u["model"]):
            continue
        tokens = Tokens(u["inputTokens"], u["outputTokens"], u["cacheReadInputTokens"],
                        u["cacheCreationInputTokens"])
        assert pricing.cost(tokens, u["model"]).value == pytest.approx(u["costUSD"], abs=1e-9), u
        checked += 1
    assert checked >= 10


def test_the_shipped_table_is_dated_sourced_and_clean() -> None:
    table = shipped_table()
    pricing = Pricing.from_tables(table)
    assert pricing.problems == []
    assert set(pricing.providers) == {"anthropic", "openai", "google", "local"}
    for price in pricing.models():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.as_of), price
        assert price.source.startswith("https://"), price
        assert min(price.input, price.output, price.cache_read, price.cache_write) >= 0
        assert price.model == normalise_model(price.model)
    local = [p for p in pricing.models() if p.provider == "local"]
    assert local
    assert all(p.cost_usd(Tokens(10**6, 10**6, 10**6, 10**6)) == 0 for p in local)


def _write(path: Path, table: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table), encoding="utf-8")


def test_the_users_file_is_merged_over_the_shipped_table(relay_home: Path) -> None:
    override = relay_home / "prices.json"
    _write(override, {"providers": {
        "anthropic": {"as_of": "2027-01-02", "source": "my invoice", "models": {
            "claude-opus-4-8": {"input": 4, "output": 20, "cache_read": 0.4, "cache_write": 5}}},
        "mine": {"models": {"my-model": {"input": 1, "output": 2}}},
    }})
    os.utime(override, (1_800_000_000, 1_800_000_000))  # 2027-01-15 UTC
    pricing = Pricing.load(load_config())
    assert pricing.override_path == override
    opus = pricing.price("claude-opus-4-8[1m]")
    assert opus is not None
    assert (opus.input, opus.output, opus.as_of, opus.source) == (4, 20, "2027-01-02", "my invoice")
    assert opus.origin == str(override)
    assert "your prices.json as of 2027-01-02" in pricing.cost(Tokens(1), "claude-opus-4-8").detail
    mine = pricing.price("my-model-v2")
    assert mine is not None
    # missing cache rates are priced as input; no date given: the file's own date
    assert (mine.cache_read, mine.cache_write, mine.as_of) == (1, 1, "2027-01-15")
    untouched = pricing.price("claude-sonnet-5")
    assert untouched is not None
    assert untouched.origin == "shipped"
    assert pricing.problems == []


def test_a_broken_users_file_is_a_counted_warning_not_a_crash(relay_home: Path) -> None:
    relay_home.mkdir(parents=True)
    (relay_home / "prices.json").write_text("{not json", encoding="utf-8")
    pricing = Pricing.load(load_config())
    assert len(pricing.problems) == 1
    assert "not valid JSON" in pricing.problems[0]
    assert pricing.price("claude-opus-4-8") is not None  # the shipped table still answers
    assert pricing.warnings == 1


def test_bad_entries_are_skipped_and_named(relay_home: Path) -> None:
    _write(relay_home / "prices.json", {"providers": {"x": {"models": {
        "neg-model": {"input": -1, "output": 2},
        "text-model": {"input": "cheap", "output": 2},
        "good-model": {"input": 1, "output": 2},
    }}}})
    pricing = Pricing.load(load_config())
    assert pricing.price("neg-model") is None
    assert pricing.price("text-model") is None
    assert pricing.price("good-model") is not None
    assert len(pricing.problems) == 2
    assert any("x/neg-model: input must be a number ≥ 0" in p for p in pricing.problems)
