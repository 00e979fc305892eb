"""Dates and times as people write them, read for grounding a note: pure, no I/O.

A memory model rewrites "yesterday at 3pm" as "2026-12-02 15:00" and "May 3rd" as
"2027-05-03", so a note's dates and times are compared by value, not by spelling: each
is read into the set of values it can mean (12/05 is 12 May or 5 December; 7:30 without
am/pm is 07:30 or 19:30), and one shared value grounds it. Relative words ("yesterday",
"on Friday", "two weeks ago") ground the dates they can mean from the day the message
was sent. English only; what this module cannot read is compared as plain digits by the
caller, which is stricter, never looser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_DATES = [
    re.compile(r"(?<![\d.])(?P<year>\d{4})-(?P<m>\d{1,2})-(?P<day>\d{1,2})(?![\d-])"),
    re.compile(r"(?<![\d.,/])(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<year>\d{4}|\d{2})(?![\d/])"),
    re.compile(r"(?<![\d.,/])(?P<a>\d{1,2})/(?P<b>\d{1,2})(?![\d/])"),
    re.compile(rf"(?i)(?<!\d){_DAY}\s+(?:of\s+)?{_MONTH}\b(?:,?\s+{_YEAR}(?!\d))?"),
    re.compile(rf"(?i)\b{_MONTH}\s+{_DAY}(?![\d:])(?:,?\s+{_YEAR}(?!\d))?"),
    re.compile(rf"(?i)\b{_MONTH}\s+(?:of\s+)?{_YEAR}(?!\d)"),
]
_BARE_MONTH = re.compile(rf"(?i)\b{_MONTH}\b")
_AMPM = r"(?P<half>[ap])\.?\s?m\b\.?"
_TIMES = [
    re.compile(rf"(?i)(?<![\d:.])(?P<h>\d{{1,2}})(?:[:.](?P<m>\d{{2}}))?\s*{_AMPM}"),
    re.compile(r"(?i)(?<![\d:.])(?P<h>\d{1,2})h(?P<m>\d{2})?(?![\w])"),
    re.compile(r"(?<![\d:.])(?P<h>\d{1,2}):(?P<m>\d{2})(?!\d|:\d)"),
    re.compile(r"(?i)(?<![\d:.])(?P<h>\d{1,2})\s+o['’]clock"),
    re.compile(r"(?i)\b(?P<word>noon|midday|midnight)\b"),
]
_AT_HOUR = re.compile(r"(?i)(?:\b(?:at|by|around|from|until|till|before|after)\s+|@\s*)(?P<h>\d{1,2})(?![\d:.,/])")
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3,
}
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AGO = re.compile(r"(?i)\b(?P<n>\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")(?:\s+of)?\s+(?P<unit>day|week|month|year)s?\s+ago\b")
_IN = re.compile(r"(?i)\bin\s+(?P<n>\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")\s+(?P<unit>day|week|month|year)s?\b")
_RELATIVE = [  # (pattern, first day, last day) around the day the message was sent
    (re.compile(r"(?i)\bday\s+before\s+yesterday\b"), -2, -2),
    (re.compile(r"(?i)\bday\s+after\s+tomorrow\b"), 2, 2),
    (re.compile(r"(?i)\b(?:yesterday|last\s+night)\b"), -1, -1),
    (re.compile(r"(?i)\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b"), 0, 0),
    (re.compile(r"(?i)\btomorrow\b"), 1, 1),
    (re.compile(r"(?i)\b(?:last|this|next|coming)\s+week(?:end)?\b|\bweekend\b"), -14, 14),
    (re.compile(r"(?i)\b(?:last|this|next|coming)\s+month\b"), -62, 62),
    (re.compile(r"(?i)\b(?:last|this|next|coming)\s+year\b"), -400, 400),
]
_WEEKDAY = re.compile(r"(?i)\b(?P<weekday>" + "|".join(WEEKDAYS) + r")s?\b")


@dataclass(frozen=True)
class DateValue:
    """A calendar date as written: the year or the day may be missing ("May 2027", "3 May")."""

    year: int | None
    month: int
    day: int | None


@dataclass(frozen=True)
class Span:
    """Where a date or time was found, and the values it can mean."""

    start: int
    end: int
    dates: frozenset[DateValue] = frozenset()
    times: frozenset[tuple[int, int]] = frozenset()


def _valid(year: int | None, month: int, day: int | None) -> DateValue | None:
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31) or (year is not None and not 1900 <= year <= 2199):
        return None
    if year is not None and day is not None:
        try:
            date(year, month, day)
        except ValueError:
            return None
    return DateValue(year, month, day)


def _year(text: str | None) -> int | None:
    if text is None:
        return None
    return int(text) + (2000 if len(text) == 2 else 0)


def _values(match: re.Match[str]) -> frozenset[DateValue]:
    groups = match.groupdict()
    year = _year(groups.get("year"))
    if groups.get("a") is not None:  # 12/05: either order, as the writer's country reads it
        a, b = int(groups["a"]), int(groups["b"])
        found = {_valid(year, b, a), _valid(year, a, b)}
    else:
        month = int(groups["m"]) if groups.get("m") else MONTHS[groups["month"].lower().rstrip(".")]
        found = {_valid(year, month, int(groups["day"]) if groups.get("day") else None)}
    return frozenset(v for v in found if v is not None)


def dates_in(text: str) -> list[Span]:
    """Every date written in ``text``, longest reading first where two overlap."""
    found: list[Span] = []
    for pattern in _DATES:
        for match in pattern.finditer(text):
            if any(s.start < match.end() and match.start() < s.end for s in found):
                continue
            values = _values(match)
            if values:
                found.append(Span(match.start(), match.end(), dates=values))
    return sorted(found, key=lambda s: s.start)


def _hours(hour: int, minute: int, half: str | None, exact: bool) -> frozenset[tuple[int, int]]:
    if minute > 59 or hour > 24:
        return frozenset()
    if half is not None:
        if not 1 <= hour <= 12:
            return frozenset()
        return frozenset({(hour % 12 + (12 if half.lower() == "p" else 0), minute)})
    if exact or hour == 0 or hour > 12:
        return frozenset({(hour % 24, minute)})
    return frozenset({(hour, minute), ((hour + 12) % 24, minute)})  # 7:30 is morning or evening


def times_in(text: str) -> list[Span]:
    """Every time of day written in ``text``: 3pm, 3:30 p.m., 15:00, 15h30, 3 o'clock, noon."""
    found: list[Span] = []
    for index, pattern in enumerate(_TIMES):
        for match in pattern.finditer(text):
            if any(s.start < match.end() and match.start() < s.end for s in found):
                continue
            groups = match.groupdict()
            if groups.get("word"):
                values = frozenset({(0, 0)} if groups["word"].lower() == "midnight" else {(12, 0)})
            else:
                values = _hours(int(groups["h"]), int(groups["m"] or 0), groups.get("half"), exact=index == 1)
            if values:
                found.append(Span(match.start(), match.end(), times=values))
    return sorted(found, key=lambda s: s.start)


def spoken_hours(text: str) -> frozenset[tuple[int, int]]:
    """Hours said without minutes or am/pm ("at 3", "by 7"): 03:00 or 15:00."""
    values: set[tuple[int, int]] = set()
    for match in _AT_HOUR.finditer(text):
        values |= _hours(int(match.group("h")), 0, None, exact=False)
    return frozenset(values)


@dataclass(frozen=True)
class Window:
    """Days a relative phrase can mean: ``first``..``last``, only ``weekday`` when set."""

    first: date
    last: date
    weekday: int | None = None

    def days(self) -> Iterator[date]:
        day = self.first
        while day <= self.last:
            if self.weekday is None or day.weekday() == self.weekday:
                yield day
            day += timedelta(days=1)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def windows(text: str, sent: date) -> list[Window]:
    """The days ``text``'s relative phrases can mean, for a message sent on ``sent``.

    The day it was sent is always one: reflection dates an event the owner tells of on the
    day they told it, as the specification asks ("an entry about an event starts with its date").
    """
    found = [Window(sent, sent)] + [Window(sent + timedelta(days=a), sent + timedelta(days=b))
                                    for pattern, a, b in _RELATIVE if pattern.search(text)]
    for match in _WEEKDAY.finditer(text):
        found.append(Window(sent - timedelta(days=7), sent + timedelta(days=7), WEEKDAYS[match.group("weekday").lower()]))
    for pattern, sign in ((_AGO, -1), (_IN, 1)):
        for match in pattern.finditer(text):
            unit = _UNITS[match.group("unit").lower()]
            middle = sent + timedelta(days=sign * min(_count(match.group("n")), 200) * unit)
            slack = timedelta(days=0 if unit == 1 else unit // 2 + 1)
            found.append(Window(middle - slack, middle + slack))
    return found


def written_dates(text: str) -> frozenset[DateValue]:
    """Every date ``text`` names, a month alone ("in June") included."""
    values: set[DateValue] = set()
    for span in dates_in(text):
        values |= span.dates
    for match in _BARE_MONTH.finditer(text):
        values.add(DateValue(None, MONTHS[match.group("month").lower().rstrip(".")], None))
    return frozenset(values)


def date_grounded(value: DateValue, written: frozenset[DateValue], sent_years: frozenset[int],
                  relative: list[Window]) -> bool:
    """Does a note's date match one the owner wrote, or one their relative words can mean?

    A date the owner wrote without a year ("3 May") grounds that day in the year the message
    was sent or the next one: the model adds the year the owner meant.
    """
    for seen in written:
        if seen.month != value.month or seen.day != value.day:
            continue
        if value.year is None or seen.year == value.year:
            return True
        if seen.year is None and (value.year in sent_years or value.year - 1 in sent_years):
            return True
    for window in relative:
        for day in window.days():
            if value.month == day.month and value.day in (None, day.day) and value.year in (None, day.year):
                return True
    return False
