"""The price table: list prices, dated model names, overrides, free local models."""

from __future__ import annotations

import pytest

from core.agent.usage import PriceTable


def test_a_dated_model_name_uses_its_base_price_and_the_longest_prefix_wins() -> None:
    table = PriceTable.with_overrides({})
    assert table.cost("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert table.cost("gpt-4o-2024-08-06", 0, 1_000_000) == pytest.approx(10.0)


def test_overrides_win_and_unknown_models_cost_nothing() -> None:
    table = PriceTable.with_overrides({"gpt-4o-mini": (1.0, 2.0), "llama3": (0.5, 0.5)})
    assert table.cost("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(3.0)
    assert table.cost("llama3", 2_000_000, 0) == pytest.approx(1.0)
    assert table.cost("qwen2.5:7b", 10**9, 10**9) == 0.0


def test_transcription_is_priced_per_minute_of_audio_and_a_local_whisper_costs_nothing() -> None:
    table = PriceTable.with_overrides({})
    assert table.audio_cost("whisper-1", 90) == pytest.approx(0.009)
    assert table.audio_cost("gpt-4o-mini-transcribe-2025-03-20", 60) == pytest.approx(0.003)
    assert table.audio_cost("Systran/faster-whisper-small", 600) == 0.0
    assert table.cost("whisper-1", 1_000, 1_000) == 0.0  # not a chat model's token price
