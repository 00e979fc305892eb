"""The clock port: the core asks for the time instead of reading it, so tests can set it."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Protocol

MODEL_TIME = "%A %Y-%m-%d %H:%M"


def model_time(moment: datetime, zone: tzinfo) -> str:
    """A moment as every model reads it — the owner's local weekday, date and minute ("Thursday
    2026-12-03 09:00"): one form in the context, the tool results and the memory calls, so a model
    never reconciles two, and the weekday is there for "last Sunday"."""
    return moment.astimezone(zone).strftime(MODEL_TIME)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that stands still until moved; for tests and reproducible benchmarks."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment
