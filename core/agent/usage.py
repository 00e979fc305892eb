"""Every model call, as a value: who, why, which model, tokens, cost, time and outcome.

The rows are kept by a ``UsageLedger`` (``core.storage.usage_store`` on the database).

Cost comes from a per-model price table in US dollars per million tokens (input, output).
The defaults below are list prices the operator can override or extend with
``NOD_MODEL_PRICES``; a model missing from both costs nothing (a local Ollama or
llama.cpp model), and the row still counts its tokens. A model name matches its longest
priced prefix, so ``gpt-4o-mini-2024-07-18`` is priced as ``gpt-4o-mini``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

# US dollars per million tokens (input, output), as published by OpenAI.
DEFAULT_PRICES: Mapping[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
}


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, tuple[float, float]]

    @classmethod
    def with_overrides(cls, overrides: Mapping[str, tuple[float, float]]) -> PriceTable:
        return cls({**DEFAULT_PRICES, **overrides})

    def cost(self, model: str, tokens_in: int, tokens_out: int) -> float:
        matches = [name for name in self.prices if model == name or model.startswith(name + "-")]
        if not matches:
            return 0.0
        price_in, price_out = self.prices[max(matches, key=len)]
        return (tokens_in * price_in + tokens_out * price_out) / 1_000_000


@dataclass(frozen=True)
class UsageRecord:
    owner_id: int | None
    purpose: str  # "agent", or a memory-model purpose such as "memory_learn"
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    duration_ms: int
    outcome: str  # "ok", "timeout", "unavailable", "refused", "unreadable", "stopped"
    created_at: datetime


@dataclass(frozen=True)
class PurposeTotal:
    purpose: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float


def day_start(now: datetime, zone: ZoneInfo) -> datetime:
    """Midnight of ``now``'s day in the owner's zone (aware)."""
    local = now.astimezone(zone)
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def month_start(now: datetime, zone: ZoneInfo) -> datetime:
    """The first moment of ``now``'s month in the owner's zone: the spending period."""
    return day_start(now, zone).replace(day=1)


def period_key(now: datetime, zone: ZoneInfo) -> str:
    return now.astimezone(zone).strftime("%Y-%m")


def render_usage(today: list[PurposeTotal], month: list[PurposeTotal], limit: float | None) -> str:
    """The ``nod usage`` table: today and this month by purpose, then the limit."""
    lines = ["period  purpose               calls  tokens in  tokens out  cost USD"]
    for label, totals in (("today", today), ("month", month)):
        for t in totals or [PurposeTotal("(none)", 0, 0, 0, 0.0)]:
            lines.append(f"{label:<7} {t.purpose:<21} {t.calls:>5}  {t.tokens_in:>9}  {t.tokens_out:>10}  {t.cost_usd:>8.4f}")
    spent = sum(t.cost_usd for t in month)
    lines.append(f"this month: ${spent:.4f}" + ("" if limit is None else f" of a ${limit:.2f} limit"))
    return "\n".join(lines)



class UsageLedger(Protocol):
    """Where usage rows go and what the spending limit reads back."""

    async def record(self, row: UsageRecord) -> None: ...

    async def spent_since(self, owner_id: int, start: datetime) -> float: ...

    async def by_purpose(self, owner_id: int, start: datetime) -> list[PurposeTotal]: ...
