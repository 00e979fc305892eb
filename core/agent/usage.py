"""Every model call, as a value: who, why, which model, tokens, cost, time and outcome.

Cost comes from a price table in US dollars (per million tokens, per minute of audio for a
transcription) that the operator overrides or extends with ``NOD_MODEL_PRICES``; a model in
neither, such as a local one, costs nothing and its row still counts the tokens. How a name
finds its price: docs/turn.md (Usage).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

Price = tuple[float, float] | tuple[float, float, float]  # input, output[, cached input]
# US dollars per million tokens (input, output, cached input), as published by OpenAI.
DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1-nano": (0.10, 0.40, 0.025),
    "gpt-5": (1.25, 10.00, 0.125),
    "gpt-5-mini": (0.25, 2.00, 0.025),
    "gpt-5-nano": (0.05, 0.40, 0.005),
    "o4-mini": (1.10, 4.40, 0.275),
}
# US dollars per minute of audio transcribed, as published by OpenAI.
AUDIO_PRICES: Mapping[str, float] = {
    "whisper-1": 0.006,
    "gpt-4o-transcribe": 0.006,
    "gpt-4o-mini-transcribe": 0.003,
}


def _priced(prices: Mapping[str, object], model: str) -> str | None:
    matches = [name for name in prices if model == name or model.startswith(name + "-")]
    return max(matches, key=len) if matches else None


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, Price]
    per_minute: Mapping[str, float] = field(default_factory=lambda: dict(AUDIO_PRICES))

    @classmethod
    def with_overrides(cls, overrides: Mapping[str, Price]) -> PriceTable:
        return cls({**DEFAULT_PRICES, **overrides})

    def cost(self, model: str, tokens_in: int, tokens_out: int, cached: int = 0) -> float:
        """Dollars for a call; ``cached`` of the input tokens at the cached price (the full one if none is known)."""
        name = _priced(self.prices, model)
        if name is None:
            return 0.0
        price = self.prices[name]
        price_in, price_out = price[0], price[1]
        price_cached = price[2] if len(price) == 3 else price_in
        cached = min(max(cached, 0), tokens_in)
        return ((tokens_in - cached) * price_in + cached * price_cached + tokens_out * price_out) / 1_000_000

    def audio_cost(self, model: str, seconds: float) -> float:
        """Dollars for transcribing ``seconds`` of audio with ``model`` (0 for a model not priced)."""
        name = _priced(self.per_minute, model)
        return 0.0 if name is None else self.per_minute[name] * max(seconds, 0.0) / 60


@dataclass(frozen=True)
class UsageRecord:
    owner_id: int | None
    purpose: str  # "agent", "transcribe", or a memory-model purpose such as "memory_learn"
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    duration_ms: int
    outcome: str  # "ok", "timeout", "unavailable", "refused", "unreadable", "cut", "stopped"
    created_at: datetime
    cached_tokens: int = 0
    estimated: bool = False  # the server reported no usage: tokens (and cost) are Nod's estimate


@dataclass(frozen=True)
class PurposeTotal:
    purpose: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    cached_tokens: int = 0
    estimated_calls: int = 0  # calls whose server reported no usage: their tokens are estimates


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
    lines = ["period  purpose               calls  tokens in     cached  tokens out  cost USD  estimated"]
    for label, totals in (("today", today), ("month", month)):
        for t in totals or [PurposeTotal("(none)", 0, 0, 0, 0.0)]:
            lines.append(
                f"{label:<7} {t.purpose:<21} {t.calls:>5}  {t.tokens_in:>9}  {t.cached_tokens:>9}  {t.tokens_out:>10}"
                f"  {t.cost_usd:>8.4f}  {t.estimated_calls:>9}"
            )
    spent = sum(t.cost_usd for t in month)
    lines.append(f"this month: ${spent:.4f}" + ("" if limit is None else f" of a ${limit:.2f} limit"))
    estimated = sum(t.estimated_calls for t in month)
    if estimated:
        lines.append(
            f"{estimated} call(s) this month had no usage from the model server: their tokens and cost are estimates"
            " (about four characters a token)."
        )
    return "\n".join(lines)



