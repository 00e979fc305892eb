"""history_search arguments, checked and turned into one frozen request.

The agent writes these arguments, often from the owner's own words, so every field is
validated here and a bad one becomes a sentence the model can act on, never a database
error. Dates are read in the owner's time zone: a bare date means the whole day, so
``from`` and ``to`` are inclusive, while ``before`` excludes the day it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import Enum
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field

from core.errors import InvalidInput
from core.history.cursor import MAX_ID
from core.structured import Arguments

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_QUERY_CHARS = 10_000


class HistorySearchArguments(Arguments):
    """The tool's arguments as the model sends them (the JSON schema it is shown, and their first check)."""

    query: str | None = Field(None, description="Words to search for; any of them matches, in any form.")
    start: str | None = Field(None, alias="from", description="First day (YYYY-MM-DD, the owner's zone), inclusive.")
    to: str | None = Field(None, description="Last day (YYYY-MM-DD), inclusive.")
    around: int | None = Field(None, description="A message id: that message and five on each side.")
    before: str | None = Field(None, description="Only messages sent before this date.")
    order: Literal["relevance", "newest"] | None = None
    cursor: str | None = Field(None, description="nextCursor of the previous page, with the same query, dates and order.")
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT)


class Order(str, Enum):
    RELEVANCE = "relevance"
    NEWEST = "newest"


@dataclass(frozen=True)
class SearchRequest:
    query: str | None
    start: datetime | None  # inclusive, UTC-aware
    end: datetime | None  # exclusive, UTC-aware
    before: datetime | None  # exclusive, UTC-aware
    around: int | None
    order: Order
    cursor: str | None
    limit: int


def _parse_moment(name: str, raw: Any, zone: ZoneInfo, end_of_day: bool) -> datetime:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput(f"`{name}` is a date like 2024-05-08 or a date-time like 2024-05-08T14:30.")
    value = raw.strip()
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            start = datetime.combine(day, time(), tzinfo=zone)
            return start + timedelta(days=1) if end_of_day else start
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInput(
            f"`{name}` {value!r} is not a date like 2024-05-08 or a date-time like 2024-05-08T14:30."
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment + timedelta(microseconds=1) if end_of_day else moment


def _moment(name: str, raw: Any, zone: ZoneInfo, end_of_day: bool) -> datetime:
    """A bounded moment: dates outside 1900–2199 (9999-12-31 overflows a day later) are refused."""
    try:
        moment = _parse_moment(name, raw, zone, end_of_day)
        utc = moment.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidInput(f"`{name}` must be a date between 1900 and 2199.") from exc
    if not EARLIEST <= utc <= LATEST:
        raise InvalidInput(f"`{name}` must be a date between 1900 and 2199.")
    return utc


def _text(raw: str | None) -> str | None:
    return raw.strip() or None if raw is not None else None


def _around(raw: int | None) -> int | None:
    if raw is not None and not 1 <= raw <= MAX_ID:
        raise InvalidInput("`around` is a message id (a positive whole number).")
    return raw


def parse_request(args: HistorySearchArguments, zone: ZoneInfo) -> SearchRequest:
    """Turn the checked arguments into one request; InvalidInput with the fix in one sentence."""
    query = _text(args.query)
    if query is not None and len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"The query is {len(query):,} characters; keep it under {MAX_QUERY_CHARS:,}.")
    start = _moment("from", args.start, zone, False) if args.start is not None else None
    end = _moment("to", args.to, zone, True) if args.to is not None else None
    before = _moment("before", args.before, zone, False) if args.before is not None else None
    if start and end and start >= end:
        raise InvalidInput("`from` is after `to`; swap them.")
    request = SearchRequest(
        query=query, start=start, end=end, before=before, around=_around(args.around),
        order=Order(args.order or Order.RELEVANCE.value), cursor=_text(args.cursor), limit=args.limit or DEFAULT_LIMIT,
    )
    _check_combination(request)
    return request


def _check_combination(request: SearchRequest) -> None:
    if request.around is not None:
        if request.query or request.start or request.end or request.before or request.cursor:
            raise InvalidInput("`around` stands alone: it returns one message with the five before and after.")
        return
    if request.query is None and not (request.start or request.end or request.before):
        raise InvalidInput("Give a `query`, a period (`from`/`to`, or `before`), or `around` with a message id.")
