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


def parse_rule(repeat: str, start_local: datetime) -> rrule:
    """``repeat`` read as an RRULE starting at ``start_local``; InvalidInput with a sentence otherwise."""
    text = repeat.strip()
    if text.upper().startswith("RRULE:"):
        text = text[6:]
    if "DTSTART" in text.upper() or "\n" in text:
        raise InvalidInput("repeat must be one RRULE line without DTSTART (the time comes from at).")
    try:
        rule = rrulestr(text, dtstart=start_local.replace(tzinfo=None))
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"repeat is not an RFC 5545 RRULE ({exc}); e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=19;BYMINUTE=0.") from None
    if not isinstance(rule, rrule):
        raise InvalidInput("repeat must be a single RRULE.")
    return rule


def occurrences_after(schedule_start: datetime, repeat: str | None, zone: ZoneInfo, after: datetime,
                      limit: int = 1) -> list[datetime]:
    """The next ``limit`` runs (UTC) strictly after ``after`` (UTC)."""
    if repeat is None:
        at = local_to_utc(schedule_start, zone)
        return [at] if at > after else []
    rule = parse_rule(repeat, schedule_start)
    found: list[datetime] = []
    # local candidates start a day early: a zone's offset never exceeds 26 hours
    local_after = after.astimezone(zone).replace(tzinfo=None) - timedelta(days=1, hours=2)
    candidate = rule.after(local_after, inc=False)
    while candidate is not None and len(found) < limit:
        at = local_to_utc(candidate, zone)
        if at > after and (not found or at > found[-1]):
            found.append(at)
        candidate = rule.after(candidate, inc=False)
    return found


def check_repeat(start_local: datetime, repeat: str, zone: ZoneInfo, now: datetime) -> None:
    """A repeat no more often than every 15 minutes, and one that runs at least once more."""
    runs = occurrences_after(start_local, repeat, zone, now - timedelta(seconds=1), limit=20)
    if not runs:
        raise InvalidInput("That repeat has no future run; check its UNTIL or COUNT.")
    if any(later - earlier < MIN_REPEAT for earlier, later in zip(runs, runs[1:], strict=False)):
        raise InvalidInput("A schedule may repeat at most every 15 minutes.")


def spoken_time(moment: datetime, zone: ZoneInfo) -> str:
    """"Sunday 7 December, 19:00 Lisbon time": how a person says when."""
    local = moment.astimezone(zone)
    place = str(zone.key).rsplit("/", 1)[-1].replace("_", " ")
    return f"{local:%A} {local.day} {local:%B}, {local:%H:%M} {place} time"
