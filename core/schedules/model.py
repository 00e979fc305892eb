"""Schedules as values, and their times: local wall-clock times in the owner's zone.

A schedule keeps the local date-time the owner asked for and, when it repeats, an RFC 5545
RRULE; its next run is computed from those in the owner's *current* zone (python-dateutil's
``rrule`` does the calendar), so "every day at 9" is 9:00 in Lisbon in January and in July,
and a zone change moves future runs. A local time that does not exist (inside a spring
gap) moves forward by the gap; an ambiguous one (the autumn hour that happens twice) is
the first of the two — ``zoneinfo``'s reading of a wall time with ``fold=0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from zoneinfo import ZoneInfo

from dateutil.rrule import rrule, rrulestr

from core.errors import InvalidInput

MAX_ACTIVE = 50
MAX_TEXT_CHARS = 1_000
MIN_REPEAT = timedelta(minutes=15)
HORIZON = timedelta(days=400)  # the calendar is searched this far past a schedule's anchor, never further
ALLOWED_FREQ = ("HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY")
DAYS_IN_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
ALLOWED_PARTS = {"FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYMONTH", "BYHOUR", "BYMINUTE", "WKST"}


class Kind(str, Enum):
    REMINDER = "reminder"  # its text is delivered as written
    TASK = "task"  # its text is an instruction: an agent turn runs it


@dataclass(frozen=True)
class Schedule:
    id: int
    owner_id: int
    kind: Kind
    text: str
    start_local: datetime  # naive: a wall-clock time in the owner's zone
    repeat: str | None  # an RRULE without DTSTART, or None for once
    next_run_at: datetime | None  # UTC; None once a one-off ran or the schedule was cancelled
    created_at: datetime
    created_from: int | None  # the owner message that asked for it


@dataclass(frozen=True)
class DueRun:
    """One claimed run of a schedule: delivered at most once per (schedule, due time)."""

    schedule: Schedule
    due_at: datetime  # UTC
    late: bool  # Nod was offline when it fell due, within the bound


def local_to_utc(local: datetime, zone: ZoneInfo) -> datetime:
    """A wall time in ``zone`` as UTC: a time in a spring gap moves forward, an ambiguous one is the first."""
    aware = local.replace(tzinfo=zone, fold=0)
    moment = aware.astimezone(UTC)
    if moment.astimezone(zone).replace(tzinfo=None) != local.replace(tzinfo=None):  # inside a gap
        gap = moment.astimezone(zone).utcoffset() - aware.utcoffset()  # type: ignore[operator]
        return (aware + gap).astimezone(UTC) if gap > timedelta(0) else moment
    return moment


def _parts(text: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for piece in text.split(";"):
        name, _, value = piece.partition("=")
        if not name or not value:
            raise InvalidInput(f"repeat is not an RFC 5545 RRULE: {piece!r} is not NAME=VALUE; "
                               "e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=19;BYMINUTE=0.")
        parts[name.strip().upper()] = value.strip()
    return parts


def _local_until(value: str, zone: ZoneInfo | None) -> str:
    """UNTIL as the owner's wall clock: RFC 5545's UTC form (…Z) is read and turned local."""
    if not value.upper().endswith("Z") or zone is None:
        return value
    try:
        moment = datetime.strptime(value.upper(), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput("repeat's UNTIL is not a date-time like 20261208T090000Z.") from None
    return moment.astimezone(zone).strftime("%Y%m%dT%H%M%S")


def _checked_parts(parts: dict[str, str]) -> None:
    """Only the rules a person asks for, and none whose calendar work has no bound."""
    if parts.get("FREQ", "").upper() not in ALLOWED_FREQ:
        raise InvalidInput("repeat's FREQ must be HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY.")
    refused = set(parts) - ALLOWED_PARTS
    if refused:
        raise InvalidInput(f"repeat may not use {', '.join(sorted(refused))}; keep to FREQ, INTERVAL, COUNT, UNTIL, "
                           "BYDAY, BYMONTHDAY, BYMONTH, BYHOUR and BYMINUTE.")
    for name, most in (("INTERVAL", 1000), ("COUNT", 1000)):
        if name in parts and (not parts[name].isdecimal() or not 1 <= int(parts[name]) <= most):
            raise InvalidInput(f"repeat's {name} must be a whole number from 1 to {most}.")
    if len(parts.get("BYMINUTE", "").split(",")) > 4 or len(parts.get("BYHOUR", "").split(",")) > 24:
        raise InvalidInput("repeat may name at most 4 minutes (BYMINUTE) and 24 hours (BYHOUR).")
    if "BYMONTH" in parts and "BYMONTHDAY" in parts and not _some_day_exists(parts["BYMONTH"], parts["BYMONTHDAY"]):
        raise InvalidInput("repeat names days that no named month has (such as 31 February).")


def _some_day_exists(months: str, days: str) -> bool:
    """Whether some BYMONTHDAY falls in some BYMONTH: a rule that never matches would make the
    calendar library walk day by day to the year 9999."""
    try:
        longest = max(DAYS_IN_MONTH[int(m)] for m in months.split(","))
        return any(abs(int(d)) <= longest for d in days.split(","))
    except (ValueError, KeyError):
        return True  # malformed: the RRULE parser says so


def parse_rule(repeat: str, start_local: datetime, zone: ZoneInfo | None = None) -> rrule:
    """``repeat`` read as an RRULE starting at ``start_local``; InvalidInput with a sentence otherwise."""
    text = repeat.strip()
    if text.upper().startswith("RRULE:"):
        text = text[6:]
    if "DTSTART" in text.upper() or "\n" in text or len(text) > 300:
        raise InvalidInput("repeat must be one short RRULE line without DTSTART (the time comes from at).")
    parts = _parts(text)
    _checked_parts(parts)
    if "UNTIL" in parts:
        parts["UNTIL"] = _local_until(parts["UNTIL"], zone)
    try:
        rule = rrulestr(";".join(f"{k}={v}" for k, v in parts.items()), dtstart=start_local.replace(tzinfo=None))
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"repeat is not an RFC 5545 RRULE ({exc}); e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=19;BYMINUTE=0.") from None
    if not isinstance(rule, rrule):
        raise InvalidInput("repeat must be a single RRULE.")
    return rule


def next_local(repeat: str, anchor: datetime, zone: ZoneInfo, after: datetime) -> datetime | None:
    """The rule's next wall-clock time after ``after`` (UTC), iterating from ``anchor``, a recent
    occurrence (the scheduler moves it forward as runs fire), within ``HORIZON`` of it."""
    rule = parse_rule(repeat, anchor, zone)
    bounded = rule.replace(until=min(rule._until or datetime.max, anchor + HORIZON))  # type: ignore[attr-defined]
    local_after = after.astimezone(zone).replace(tzinfo=None) - timedelta(days=1, hours=2)  # no zone is 26 h off
    for candidate in bounded.xafter(max(local_after, anchor - timedelta(seconds=1)), inc=False):
        if local_to_utc(candidate, zone) > after:
            return candidate
    return None


def occurrences_after(schedule_start: datetime, repeat: str | None, zone: ZoneInfo, after: datetime,
                      limit: int = 1) -> list[datetime]:
    """The next ``limit`` runs (UTC) strictly after ``after`` (UTC)."""
    if repeat is None:
        at = local_to_utc(schedule_start, zone)
        return [at] if at > after else []
    found: list[datetime] = []
    anchor, moment = schedule_start, after
    while len(found) < limit:
        candidate = next_local(repeat, anchor, zone, moment)
        if candidate is None:
            break
        found.append(local_to_utc(candidate, zone))
        anchor, moment = candidate, found[-1]
    return found


def next_run(schedule_start: datetime, repeat: str | None, zone: ZoneInfo, after: datetime) -> tuple[datetime, datetime] | None:
    """The next run after ``after`` as (UTC, the rule's wall-clock time): the wall-clock time is the
    schedule's new anchor, so the calendar is walked from its last run, not from its first
    (a year-old hourly reminder walked 8,760 hours each time). A COUNT rule keeps its start:
    its count starts there, and COUNT is at most 1,000."""
    if repeat is None:
        at = local_to_utc(schedule_start, zone)
        return (at, schedule_start) if at > after else None
    candidate = next_local(repeat, schedule_start, zone, after)
    if candidate is None:
        return None
    anchor = schedule_start if "COUNT=" in repeat.upper() else candidate
    return local_to_utc(candidate, zone), anchor


def check_repeat(start_local: datetime, repeat: str, zone: ZoneInfo, now: datetime) -> None:
    """A repeat that runs within a year, and no more often than every 15 minutes."""
    runs = occurrences_after(start_local, repeat, zone, now - timedelta(seconds=1), limit=20)
    if not runs:
        raise InvalidInput("That repeat has no run within a year of its start; check its UNTIL, COUNT and BY parts.")
    if any(later - earlier < MIN_REPEAT for earlier, later in zip(runs, runs[1:], strict=False)):
        raise InvalidInput("A schedule may repeat at most every 15 minutes.")


def spoken_time(moment: datetime, zone: ZoneInfo) -> str:
    """"Sunday 7 December, 19:00 Lisbon time": how a person says when."""
    local = moment.astimezone(zone)
    place = str(zone.key).rsplit("/", 1)[-1].replace("_", " ")
    return f"{local:%A} {local.day} {local:%B}, {local:%H:%M} {place} time"
