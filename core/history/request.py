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
from typing import Any
from zoneinfo import ZoneInfo

from core.errors import InvalidInput
from core.history.cursor import MAX_ID

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_QUERY_CHARS = 10_000
_ARGUMENTS = frozenset({"query", "from", "to", "around", "before", "order", "cursor", "limit"})


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


def _optional_text(args: dict[str, Any], name: str) -> str | None:
    raw = args.get(name)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidInput(f"`{name}` must be a string.")
    return raw.strip() or None


def _limit(raw: Any) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_LIMIT:
        raise InvalidInput(f"`limit` is a whole number from 1 to {MAX_LIMIT}.")
    return int(raw)


def _around(raw: Any) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().isdecimal() and len(raw.strip()) <= 19:
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_ID:
        raise InvalidInput("`around` is a message id (a positive whole number).")
    return int(raw)


def _order(raw: Any) -> Order:
    try:
        return Order(raw or Order.RELEVANCE.value)
    except ValueError as exc:
        raise InvalidInput("`order` is relevance or newest.") from exc


def parse_request(args: dict[str, Any], zone: ZoneInfo) -> SearchRequest:
    """Check the tool's arguments; raise InvalidInput with the fix in one sentence."""
    unknown = sorted(set(args) - _ARGUMENTS)
    if unknown:
        raise InvalidInput(f"history_search has no argument {', '.join(unknown)}; it takes {', '.join(sorted(_ARGUMENTS))}.")
    query = _optional_text(args, "query")
    if query is not None and len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"The query is {len(query):,} characters; keep it under {MAX_QUERY_CHARS:,}.")
    start = _moment("from", args["from"], zone, False) if args.get("from") is not None else None
    end = _moment("to", args["to"], zone, True) if args.get("to") is not None else None
    before = _moment("before", args["before"], zone, False) if args.get("before") is not None else None
    if start and end and start >= end:
        raise InvalidInput("`from` is after `to`; swap them.")
    request = SearchRequest(
        query=query, start=start, end=end, before=before, around=_around(args.get("around")),
        order=_order(args.get("order")), cursor=_optional_text(args, "cursor"), limit=_limit(args.get("limit")),
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
