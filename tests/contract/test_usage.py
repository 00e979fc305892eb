"""The UsageLedger port: one row per model call, summed for the spending limit and ``nod usage``."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.agent.usage import PurposeTotal, UsageRecord
from tests.contract.conftest import NOW, Ports


def _call(owner: int | None, purpose: str, cost: float, at_hours: float = 0, tokens: tuple[int, int, int] = (100, 20, 0),
          estimated: bool = False) -> UsageRecord:
    tokens_in, tokens_out, cached = tokens
    return UsageRecord(owner, purpose, "gpt-4o-mini", tokens_in, tokens_out, cost, 350, "ok",
                       NOW + timedelta(hours=at_hours), cached, estimated)


async def test_nothing_recorded_is_nothing_spent(ports: Ports) -> None:
    ana = (await ports.owners.add("ana", "UTC", (), NOW)).id
    assert await ports.usage.spent_since(ana, NOW - timedelta(days=30)) == 0.0
    assert await ports.usage.by_purpose(ana, NOW - timedelta(days=30)) == []


async def test_spending_is_the_owners_own_calls_from_the_start_on(ports: Ports) -> None:
    ana = (await ports.owners.add("ana", "UTC", (), NOW)).id
    bo = (await ports.owners.add("bo", "UTC", (), NOW)).id
    for row in (_call(ana, "agent", 0.25, -1), _call(ana, "agent", 0.5, 0), _call(ana, "reply_check", 0.125, 2),
                _call(bo, "agent", 4.0, 1), _call(None, "transcribe", 8.0, 1)):
        await ports.usage.record(row)
    assert await ports.usage.spent_since(ana, NOW) == pytest.approx(0.625)  # the call at the start counts
    assert await ports.usage.spent_since(ana, NOW - timedelta(hours=1)) == pytest.approx(0.875)
    assert await ports.usage.spent_since(ana, NOW + timedelta(hours=3)) == 0.0
    assert await ports.usage.spent_since(bo, NOW) == pytest.approx(4.0)


async def test_totals_by_purpose_are_grouped_and_in_purpose_order(ports: Ports) -> None:
    ana = (await ports.owners.add("ana", "UTC", (), NOW)).id
    bo = (await ports.owners.add("bo", "UTC", (), NOW)).id
    for row in (_call(ana, "reply_check", 0.5, 0, (10, 2, 0)), _call(ana, "agent", 0.25, 1, (100, 20, 60)),
                _call(ana, "agent", 0.25, 2, (300, 40, 0), estimated=True), _call(ana, "agent", 9.0, -2),
                _call(bo, "agent", 1.0, 1)):
        await ports.usage.record(row)
    assert await ports.usage.by_purpose(ana, NOW) == [PurposeTotal("agent", 2, 400, 60, 0.5, 60, 1),
                                                      PurposeTotal("reply_check", 1, 10, 2, 0.5, 0, 0)]
    assert await ports.usage.by_purpose(ana, NOW + timedelta(hours=2)) == [PurposeTotal("agent", 1, 300, 40, 0.25, 0, 1)]
