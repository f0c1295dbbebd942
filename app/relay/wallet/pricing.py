"""The dated per-model price table and cost estimates from it.

Relay ships ``prices.json`` beside this module: per provider, the date the prices were
read (``as_of``), where (``source``), and per model USD per million tokens for input,
output, cache reads and cache writes (the 5-minute write). The user's
``<data folder>/prices.json`` has the same format and is merged over it model by model,
so a user can correct a price or add a model without waiting for a release.

A model id resolves to the longest table key it starts with, where the key ends at a
separator (``-``, ``:``, ``@``, ``_``): dated ids (``claude-haiku-4-5-20251001``), the
1M-context suffix (``claude-opus-4-8[1m]``), provider prefixes (``anthropic/…``) and
Ollama tags (``qwen3-coder:30b``) find their price; ``gpt-5.7`` does not fall back to
``gpt-5`` (a dot is a new version, not a variant). An unknown model is never priced at 0:
its cost is unknown, and the miss is counted.

:class:`Tokens` are disjoint counts (input excludes cache reads; reasoning is inside
output), the form the transcript readers produce; :mod:`relay.wallet.costs` converts the
runs table's per-runtime counts to it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.config import Config
from relay.wallet.model import Figure, Tokens

PRICES_FILE = "prices.json"
_FIELDS = ("input", "output", "cache_read", "cache_write")
_SEPARATORS = frozenset("-:@_")
_BEDROCK = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.")
_SUFFIX = re.compile(r"\[[^\]]*\]$")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens for one model (or family) and where the figures come from."""

    model: str
    provider: str
    input: float
    output: float
    cache_read: float
    cache_write: float
    #: the date the prices were read, ISO (YYYY-MM-DD)
    as_of: str
    #: the page the prices come from (or the user's file)
    source: str
    #: "shipped", or the path of the user's prices.json
    origin: str = "shipped"
    note: str = ""

    def cost_usd(self, tokens: Tokens) -> float:
        return (tokens.input * self.input + tokens.output * self.output
                + tokens.cache_read * self.cache_read
                + tokens.cache_write * self.cache_write) / 1_000_000

    def describe(self) -> str:
        """``"$5/$25 in/out, cache $0.5 read/$6.25 write per Mtok"``."""
        return (f"${self.input:g}/${self.output:g} in/out, cache ${self.cache_read:g} read/"
                f"${self.cache_write:g} write per Mtok")


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    name: str
    as_of: str
    source: str
    note: str = ""
    origin: str = "shipped"


class Pricing:
    """The merged price table: :meth:`load` it once per process."""

    def __init__(self, prices: Mapping[str, ModelPrice],
                 providers: Mapping[str, ProviderInfo] | None = None,
                 override_path: Path | None = None, problems: list[str] | None = None) -> None:
        self._prices = dict(prices)
        self.providers = dict(providers or {})
        #: the user's prices.json (whether or not it exists)
        self.override_path = override_path
        #: what was wrong with the tables (bad entries are skipped, never fatal)
        self.problems = list(problems or [])
        #: models asked for that have no price, and how often
        self.unknown: Counter[str] = Counter()
        self._lookups: dict[str, ModelPrice | None] = {}

    # -- loading ------------------------------------------------------------------------

    @classmethod
    def load(cls, config: Config) -> Pricing:
        """The shipped table with ``<data folder>/prices.json`` merged over it."""
        return cls.from_tables(shipped_table(), override_path=config.home / PRICES_FILE)

    @classmethod
    def from_tables(cls, shipped: Mapping[str, Any], override: Mapping[str, Any] | None = None,
                    override_path: Path | None = None) -> Pricing:
        """Build from parsed tables; ``override_path`` is read when ``override`` is None."""
        problems: list[str] = []
        prices, providers = _parse(shipped, "shipped", None, problems)
        origin = str(override_path) if override_path else "override"
        fallback_date: str | None = None
        if override is None and override_path is not None:
            override, fallback_date = _read_override(override_path, problems)
        if override is not None:
            user_prices, user_providers = _parse(override, origin, fallback_date, problems)
            prices.update(user_prices)
            for name, info in user_providers.items():
                providers.setdefault(name, info)
        return cls(prices, providers, override_path, problems)

    # -- lookups ------------------------------------------------------------------------

    def models(self) -> list[ModelPrice]:
        return sorted(self._prices.values(), key=lambda p: (p.provider, p.model))

    def price(self, model: str | None) -> ModelPrice | None:
        """The price of ``model``: exact id, else the longest key it starts with."""
        if not model:
            return None
        if model in self._lookups:
            return self._lookups[model]
        found = self._resolve(normalise_model(model))
        self._lookups[model] = found
        return found

    def _resolve(self, name: str) -> ModelPrice | None:
        if name in self._prices:
            return self._prices[name]
        best: ModelPrice | None = None
        for key, price in self._prices.items():
            if (len(name) > len(key) and name.startswith(key) and name[len(key)] in _SEPARATORS
                    and (best is None or len(key) > len(best.model))):
                best = price
        return best

    def cost(self, tokens: Tokens, model: str | None) -> Figure:
        """Estimate what ``tokens`` of ``model`` cost at list prices.

        An unknown model gives ``Figure(None, "unknown")`` and is counted in
        :attr:`unknown`; never a cost of 0.
        """
        price = self.price(model)
        if price is None:
            self.unknown[model or "(no model)"] += 1
            return Figure(None, "unknown", detail=f"no price for {model or 'an unnamed model'}")
        return Figure(price.cost_usd(tokens), "estimate", detail=self.estimate_detail(price, model))

    @staticmethod
    def estimate_detail(price: ModelPrice, model: str | None) -> str:
        named = price.model if model and normalise_model(model) == price.model \
            else f"{model} priced as {price.model}"
        where = "your prices.json" if price.origin != "shipped" else f"{price.provider} list price"
        return f"estimated: {named}, {where} as of {price.as_of}"

    @property
    def warnings(self) -> int:
        """Counted problems: unknown models asked for and bad table entries."""
        return sum(self.unknown.values()) + len(self.problems)


def normalise_model(model: str) -> str:
    """``"anthropic/Claude-Opus-4-8[1m]"`` → ``"claude-opus-4-8"``."""
    name = _SUFFIX.sub("", model.strip().lower())
    name = name.rsplit("/", 1)[-1]
    return _BEDROCK.sub("", name)


def shipped_table() -> dict[str, Any]:
    """The table shipped with Relay (``relay/wallet/prices.json``)."""
    text = resources.files("relay.wallet").joinpath(PRICES_FILE).read_text(encoding="utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def _read_override(path: Path, problems: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    """The user's table and its modification date; a bad file is a problem, not a crash."""
    try:
        text = path.read_text(encoding="utf-8")
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC).date().isoformat()
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot read it ({exc}); using the shipped prices")
        return None, None
    try:
        table = jsonvalue.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(f"{path}: not valid JSON ({exc}); using the shipped prices")
        return None, None
    if not isinstance(table, dict):
        problems.append(f"{path}: expected an object with \"providers\"; using the shipped prices")
        return None, None
    return table, mtime


def _parse(table: Mapping[str, Any], origin: str, fallback_date: str | None,
           problems: list[str]) -> tuple[dict[str, ModelPrice], dict[str, ProviderInfo]]:
    prices: dict[str, ModelPrice] = {}
    providers: dict[str, ProviderInfo] = {}
    blocks = table.get("providers")
    if not isinstance(blocks, dict):
        problems.append(f"{origin}: no \"providers\" object")
        return prices, providers
    for name, block in blocks.items():
        if not isinstance(block, dict) or not isinstance(block.get("models"), dict):
            problems.append(f"{origin}: provider {name!r} has no \"models\" object")
            continue
        as_of = str(block.get("as_of") or fallback_date or "unknown")
        source = str(block.get("source") or origin)
        providers[name] = ProviderInfo(name, as_of, source, str(block.get("note", "")), origin)
        for model, entry in block["models"].items():
            price = _model_price(str(model), name, entry, as_of, source, origin)
            if isinstance(price, str):
                problems.append(f"{origin}: {name}/{model}: {price}; skipped")
            else:
                prices[price.model] = price
    return prices, providers


def _model_price(model: str, provider: str, entry: Any, as_of: str, source: str,
                 origin: str) -> ModelPrice | str:
    """One table entry, or what is wrong with it. Missing cache rates default to input."""
    if not isinstance(entry, dict):
        return "expected an object of prices"
    values: dict[str, float] = {}
    for name in _FIELDS:
        raw = entry.get(name, entry.get("input") if name.startswith("cache") else None)
        if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
            return f"{name} must be a number ≥ 0 (USD per million tokens), not {raw!r}"
        values[name] = float(raw)
    return ModelPrice(model=normalise_model(model), provider=provider, as_of=str(entry.get("as_of", as_of)),
                      source=str(entry.get("source", source)), origin=origin,
                      note=str(entry.get("note", "")), **values)
