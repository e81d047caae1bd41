"""What tokens cost: a list-price table for the Claude models, overridable per model in the settings file.

Prices are USD per million tokens. Anthropic prices cache writes at 1.25x the input price for the 5-minute cache
and 2x for the 1-hour cache, and cache reads at 0.1x; the table derives those from the input price. The requests
this server sends use the 5-minute cache only (`cache_control` without a `ttl`), so cache-creation tokens are
priced as 5-minute writes.

A model the table does not know has no price: its tasks report tokens only, unless a budget applies to them, which
counts their tokens at the table's dearest price of each kind (`PriceTable.ceiling`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from .profiles import canonical_model_id

if TYPE_CHECKING:
    from ..core.messages import Usage
    from .base import Model, ModelRequest, ModelResponse

logger = logging.getLogger(__name__)

PRICES_KEY: Final = "modelPrices"
"""The settings-file key that adds or overrides prices: `{"modelPrices": {"model-id": {"input": 1, ...}}}`."""
PRICE_LIST_DATE: Final = "2026-04"
"""When the list prices marked `list` were read from Anthropic's pricing page."""
PER_MILLION: Final = 1_000_000

PriceBasis: TypeAlias = Literal["list", "tier", "settings", "ceiling"]
"""`list`: Anthropic's published price; `tier`: no published price was available, so the family's current tier
price is assumed; `settings`: from the settings file; `ceiling`: the model has no price and a budget applies, so
the dearest price known is counted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    basis: PriceBasis = "list"

    @classmethod
    def of(cls, input: float, output: float, *, basis: PriceBasis = "list") -> ModelPrice:
        """A price with Anthropic's cache multipliers applied to `input`."""
        return cls(
            input=input,
            output=output,
            cache_write_5m=input * 1.25,
            cache_write_1h=input * 2,
            cache_read=input * 0.1,
            basis=basis,
        )

    def cost(self, usage: Usage) -> float:
        """USD for `usage` (input tokens exclude cached ones, as the Messages API counts them)."""
        total = (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_creation_tokens * self.cache_write_5m
            + usage.cache_read_tokens * self.cache_read
        )
        return total / PER_MILLION


_SONNET: Final = ModelPrice.of(3, 15)
_OPUS_4: Final = ModelPrice.of(15, 75)
_OPUS: Final = ModelPrice.of(5, 25)
_HAIKU: Final = ModelPrice.of(1, 5)

LIST_PRICES: Final[Mapping[str, ModelPrice]] = {
    "claude-3-5-haiku": ModelPrice.of(0.8, 4),
    "claude-3-5-sonnet": _SONNET,
    "claude-3-7-sonnet": _SONNET,
    "claude-haiku-4-5": _HAIKU,
    "claude-sonnet-4-0": _SONNET,
    "claude-sonnet-4-5": _SONNET,
    "claude-sonnet-4-6": _SONNET,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-5": _OPUS,
    "claude-opus-4-6": _OPUS,
    "claude-opus-4-7": _OPUS,
    # No published price reached us for these: the family's current tier is assumed (README, "Costs").
    "claude-opus-4-8": ModelPrice.of(5, 25, basis="tier"),
    "claude-sonnet-5": ModelPrice.of(3, 15, basis="tier"),
    "claude-sonnet-5-5": ModelPrice.of(3, 15, basis="tier"),
    "claude-haiku-5-5": ModelPrice.of(1, 5, basis="tier"),
    "claude-opus-5": ModelPrice.of(5, 25, basis="tier"),
    "claude-opus-5-5": ModelPrice.of(5, 25, basis="tier"),
}


class PriceTable:
    """The list prices plus the settings file's `modelPrices`, which win."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        self._overrides = dict(overrides or {})

    def price(self, model_id: str) -> ModelPrice | None:
        for key in (model_id, canonical_model_id(model_id)):
            if key in self._overrides:
                return self._overrides[key]
        return LIST_PRICES.get(canonical_model_id(model_id))

    def cost(self, model_id: str, usage: Usage) -> float | None:
        price = self.price(model_id)
        return None if price is None else price.cost(usage)

    def ceiling(self) -> ModelPrice:
        """The dearest known price of each kind of token: what a budget counts for a model without a price."""
        known = [*LIST_PRICES.values(), *self._overrides.values()]
        return ModelPrice(
            input=max(price.input for price in known),
            output=max(price.output for price in known),
            cache_write_5m=max(price.cache_write_5m for price in known),
            cache_write_1h=max(price.cache_write_1h for price in known),
            cache_read=max(price.cache_read for price in known),
            basis="ceiling",
        )


def parse_prices(data: Any, *, origin: str) -> tuple[dict[str, ModelPrice], list[str]]:
    """The `modelPrices` mapping of a settings file; entries that do not fit are skipped with a reason."""
    prices: dict[str, ModelPrice] = {}
    problems: list[str] = []
    if data is None:
        return prices, problems
    if not isinstance(data, dict):
        return prices, [f"{origin}: {PRICES_KEY} must be an object of model id -> prices"]
    for model, entry in data.items():  # pyright: ignore[reportUnknownVariableType]
        try:
            prices[str(model)] = _price_entry(entry)  # pyright: ignore[reportUnknownArgumentType]
        except ValueError as exc:
            problems.append(f"{origin}: {PRICES_KEY}.{model}: {exc}; skipped")
    return prices, problems


def _price_entry(entry: Any) -> ModelPrice:
    if not isinstance(entry, dict):
        raise ValueError('must be an object such as {"input": 3, "output": 15} (USD per million tokens)')
    fields: dict[str, Any] = entry  # pyright: ignore[reportUnknownVariableType]
    allowed = {"input", "output", "cacheWrite", "cacheWrite1h", "cacheRead"}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    if "input" not in fields or "output" not in fields:
        raise ValueError("needs both input and output (USD per million tokens)")
    values = {key: _usd(fields[key], key) for key in fields}
    derived = ModelPrice.of(values["input"], values["output"], basis="settings")
    return ModelPrice(
        input=derived.input,
        output=derived.output,
        cache_write_5m=values.get("cacheWrite", derived.cache_write_5m),
        cache_write_1h=values.get("cacheWrite1h", derived.cache_write_1h),
        cache_read=values.get("cacheRead", derived.cache_read),
        basis="settings",
    )


def _usd(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{key} must be a number of USD per million tokens, 0 or more, got {value!r}")
    return float(value)


@dataclass(slots=True)
class SideSpend:
    """What a task's tools spent asking a model on their own (WebFetch reading a page, WebSearch searching)."""

    cost_usd: float = 0.0


class MeteredModel:
    """A model whose responses are priced into a `SideSpend`: the model tools use on a task's behalf. `unpriced` is
    the price counted for a model the table does not know (the ceiling, under a budget); None counts nothing."""

    def __init__(
        self, model: Model, prices: PriceTable, spend: SideSpend, *, unpriced: ModelPrice | None = None
    ) -> None:
        self._model = model
        self._prices = prices
        self._spend = spend
        self._unpriced = unpriced

    @property
    def provider(self) -> str:
        return self._model.provider

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        response = await self._model.request(request)
        price = self._prices.price(request.model) or self._unpriced
        if price is not None:
            self._spend.cost_usd += price.cost(response.usage)
        return response


class PriceFiles:
    """Reads `modelPrices` from settings files given lowest precedence first (later files win), again only when a
    file changed."""

    def __init__(self, *files: Path | None) -> None:
        self._files = tuple(path for path in files if path is not None)
        self._seen: tuple[tuple[float, int] | None, ...] | None = None
        self._table = PriceTable()
        self._reported: set[str] = set()

    def table(self) -> PriceTable:
        stamps = tuple(_stamp(path) for path in self._files)
        if stamps != self._seen:
            self._seen = stamps
            self._table = self._load()
        return self._table

    def _load(self) -> PriceTable:
        merged: dict[str, ModelPrice] = {}
        for path in self._files:
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a missing or broken settings file is reported by the code that owns it
            data = document.get(PRICES_KEY) if isinstance(document, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            prices, problems = parse_prices(data, origin=str(path))
            merged.update(prices)
            for problem in problems:
                if problem not in self._reported:
                    self._reported.add(problem)
                    logger.warning("%s", problem)
        return PriceTable(merged)


def _stamp(path: Path) -> tuple[float, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime, stat.st_size


def format_usd(cost: float) -> str:
    """`$0.0123` for a person; amounts under a cent keep six decimals rather than rounding to zero."""
    if cost >= 10:
        return f"${cost:.2f}"
    if cost >= 0.01:
        return f"${cost:.4f}"
    shown = f"{cost:.6f}".rstrip("0").rstrip(".")
    return "$0" if cost == 0 else ("<$0.000001" if shown == "0" else f"${shown}")
