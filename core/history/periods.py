"""Dates named inside a query's words ("what did I cook on 9 November 2022", "in June").

The ``from``/``to`` arguments filter by date; a date written in the query itself is only
a hint, so re-ranking prefers messages sent in that period (or in the week after it,
when such things get told) without leaving the others out. Written dates are English:
a month name with an optional day and year in either order, an ISO date, or a year.
A month without a year stands for that month of any year. "May" counts only with a
capital or next to a day or a year, since "may" is also a verb.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

SLACK = timedelta(days=7)  # a period's news often arrives in the days after it
MONTHS = "january february march april may june july august september october november december".split()
_MONTH = {name: number for number, name in enumerate(MONTHS, start=1)}
_NAME = "|".join(MONTHS)
_DATES = re.compile(
    rf"\b(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<month>{_NAME})\b"
    rf"(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?"
    r"|\b(?P<iso>(?:19|20)\d\d-\d\d-\d\d)\b|\b(?P<alone>(?:19|20)\d\d)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Period:
    """A day, a month or a year; ``year`` None means that month of any year."""

    year: int | None
    month: int | None = None
    day: int | None = None

    def _bounds(self, year: int) -> tuple[date, date] | None:
        try:
            if self.month is None:
                return date(year, 1, 1), date(year + 1, 1, 1)
            if self.day is None:
                return date(year, self.month, 1), date(year + self.month // 12, self.month % 12 + 1, 1)
            start = date(year, self.month, self.day)
        except ValueError:  # "31 February"
            return None
        return start, start + timedelta(days=1)

    def holds(self, day: date) -> bool:
        """Whether ``day`` is in the period or in the SLACK after it."""
        for year in (self.year,) if self.year is not None else (day.year, day.year - 1):
            bounds = self._bounds(year)
            if bounds and bounds[0] <= day < bounds[1] + SLACK:
                return True
        return False


def named_periods(query: str) -> tuple[Period, ...]:
    found = []
    for match in _DATES.finditer(query):
        if match["iso"]:
            try:
                day = date.fromisoformat(match["iso"])
            except ValueError:
                continue
            found.append(Period(day.year, day.month, day.day))
        elif match["alone"]:
            found.append(Period(int(match["alone"])))
        else:
            day_text = match["day1"] or match["day2"]
            if match["month"] == "may" and not (day_text or match["year"]):
                continue  # the verb, not the month
            found.append(Period(
                int(match["year"]) if match["year"] else None, _MONTH[match["month"].lower()],
                int(day_text) if day_text else None,
            ))
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class DateHint:
    """The periods a query names, read in the owner's time zone."""

    periods: tuple[Period, ...]
    zone: ZoneInfo

    @classmethod
    def of(cls, query: str, zone: ZoneInfo) -> DateHint | None:
        periods = named_periods(query)
        return cls(periods, zone) if periods else None

    def covers(self, moment: datetime) -> bool:
        day = moment.astimezone(self.zone).date()
        return any(p.holds(day) for p in self.periods)
