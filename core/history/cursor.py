"""Page cursors: where the next page starts, bound to the search that made it.

A cursor carries the offset into one fixed ordering and the newest message id that
existed when the first page was read. Later pages never see messages that arrived in
between, so paging has no duplicates and no gaps even while the conversation goes on.
It also carries a fingerprint of the search (owner's thread, words, dates, order): a
cursor reused with other parameters would silently page through a different list, so it
is refused instead.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from core.errors import InvalidInput


@dataclass(frozen=True)
class Cursor:
    fingerprint: str
    offset: int
    snapshot: int  # the highest message id the search may see


def fingerprint(parts: dict[str, Any]) -> str:
    canonical = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def encode(cursor: Cursor) -> str:
    raw = json.dumps({"f": cursor.fingerprint, "o": cursor.offset, "s": cursor.snapshot})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(token: str, expected_fingerprint: str) -> Cursor:
    """The cursor in ``token``; refused when malformed or made by a different search."""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        cursor = Cursor(str(data["f"]), int(data["o"]), int(data["s"]))
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise InvalidInput("That cursor is not one history_search returned; search again without it.") from exc
    if cursor.offset < 0 or cursor.snapshot < 0:
        raise InvalidInput("That cursor is not one history_search returned; search again without it.")
    if cursor.fingerprint != expected_fingerprint:
        raise InvalidInput(
            "That cursor belongs to a different search: continue with the same query, dates and "
            "order, or search again without a cursor."
        )
    return cursor
