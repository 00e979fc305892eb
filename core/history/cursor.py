"""Page cursors: where the next page starts, bound to the search that made it, signed.

A cursor fixes what the first page saw (its snapshot, who answered it, its word counts), so
later pages neither repeat nor skip while the conversation goes on, and a fingerprint refuses
it for another search. It comes back from the model as a tool argument, so it is untrusted:
signed and bounded before anything reads it. Why each part: docs/search.md, docs/reliability.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from core.errors import InvalidInput
from core.history.preceding import PRECEDING_FROM
from core.text import FORMS, MAX_QUERY_TERMS

MAX_OFFSET = 10_000  # deeper than any reader pages; narrow with dates past it
MAX_ID = 2**62  # every id and snapshot fits a signed 64-bit integer on both backends
# a query's words with their irregular forms (core.text.query_terms): no cursor counts more stems
MAX_STEMS = MAX_QUERY_TERMS * (1 + max((len(forms) for forms in FORMS.values()), default=0))
_NOT_OURS = "That cursor is not one history_search returned; search again without it."


@dataclass(frozen=True)
class Cursor:
    fingerprint: str
    offset: int
    snapshot: int  # the highest message id the search may see
    split: int | None = None  # the derived index answered up to this id (adapters.storage.search_index.unindexed); None: the database
    added: int = 0  # messages the first page's window added (core.history.preceding): later pages skip past them
    # the first page's word statistics (documents, (stem, count) …): later pages re-rank the window with them
    counts: tuple[int, tuple[tuple[str, int], ...]] | None = None


def fingerprint(parts: dict[str, Any]) -> str:
    canonical = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode((text + "=" * (-len(text) % 4)).encode())


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()[:16]


def encode(cursor: Cursor, key: bytes) -> str:
    fields: dict[str, Any] = {"f": cursor.fingerprint, "o": cursor.offset, "s": cursor.snapshot}
    if cursor.split is not None:
        fields["w"] = cursor.split
    if cursor.added:
        fields["a"] = cursor.added
    if cursor.counts is not None:
        fields["q"] = [cursor.counts[0], dict(cursor.counts[1])]
    payload = json.dumps(fields, separators=(",", ":")).encode()
    return f"{_b64(payload)}.{_b64(_mac(key, payload))}"


def decode(token: str, expected_fingerprint: str, key: bytes) -> Cursor:
    """The cursor in ``token``; refused when forged, malformed, out of bounds or another search's."""
    try:
        body, _, signature = token.partition(".")
        payload = _unb64(body)
        if not hmac.compare_digest(_unb64(signature), _mac(key, payload)):
            raise InvalidInput(_NOT_OURS)
        data = json.loads(payload)
        split = None if data.get("w") is None else int(data["w"])
        counts = _counts(data["q"]) if "q" in data else None
        cursor = Cursor(str(data["f"]), int(data["o"]), int(data["s"]), split, int(data.get("a", 0)), counts)
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError, OverflowError) as exc:
        raise InvalidInput(_NOT_OURS) from exc
    if not (0 <= cursor.offset <= MAX_OFFSET and 0 <= cursor.snapshot <= MAX_ID
            and (cursor.split is None or 0 <= cursor.split <= cursor.snapshot)
            and 0 <= cursor.added <= PRECEDING_FROM
            and (cursor.counts is None or all(0 <= n <= MAX_ID for n in _numbers(cursor.counts)))):
        raise InvalidInput(_NOT_OURS)
    if cursor.fingerprint != expected_fingerprint:
        raise InvalidInput(
            "That cursor belongs to a different search: continue with the same query, dates and "
            "order, or search again without a cursor."
        )
    return cursor


def _counts(raw: Any) -> tuple[int, tuple[tuple[str, int], ...]]:
    documents, per_stem = raw
    if not isinstance(per_stem, dict) or len(per_stem) > MAX_STEMS:
        raise ValueError("not a cursor's counts")
    return int(documents), tuple((str(stem), int(n)) for stem, n in per_stem.items())


def _numbers(counts: tuple[int, tuple[tuple[str, int], ...]]) -> list[int]:
    return [counts[0], *(n for _, n in counts[1])]
