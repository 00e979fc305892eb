"""A thread's newest messages, not yet in the derived index (its tail), matched straight from the database.

Catching the index up commits a segment: 15–20 ms on a million-message index, paid by
every search when each caught up first. So a search asks the index only up to the id it
already holds (the ``split``, kept in later pages' cursors so every page sees the same
order) and reads the searched thread's messages after it from the database — on a live
conversation a handful (stemmed once, see ``_message``), found through ``messages (thread_id, id)`` — matching, shaping and
placing them here exactly as the index would (adapters.storage.search_index.documents). The index catches
up in the background (adapters.storage.search_index.derived). Ids above the split come first in the
backend's order; the re-ranked window then orders them among the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any, Protocol

from adapters.storage.keyword_matcher import FREQUENCY_CAP
from adapters.storage.search_index.documents import micros, stemmed, utc
from core.history.ranking import shape_of
from core.history.scope import Hit, Scope, Shape
from core.text import stem

TAIL_LIMIT = 256  # more unindexed messages in one thread: caught up first when few, else (an import) the database answers


class Indexed(Protocol):
    """What the tail is merged with: the derived index's reader, asked up to the split."""

    async def count_matches(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int: ...

    async def ranked(self, terms: Sequence[str], scope: Scope, limit: int, offset: int = 0) -> list[Hit]: ...

    async def ranked_and_counted(self, terms: Sequence[str], scope: Scope, limit: int) -> tuple[list[Hit], int]: ...

    async def newest_keyed(self, terms: Sequence[str], scope: Scope, wanted: int) -> list[tuple[int, int]]: ...

    async def which_match(self, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]: ...

    async def at_places(self, terms: Sequence[str], scope: Scope, places: Sequence[int]) -> list[tuple[Hit, bool]]: ...

    async def frequencies(self, terms: Sequence[str], thread_id: int) -> tuple[int, dict[str, int]]: ...


@dataclass(frozen=True)
class UnindexedMessage:
    """One unindexed message as the index would hold it: stems of its text and context, time, place."""

    id: int
    role: str
    sent_at: datetime
    own: frozenset[str]
    context: frozenset[str]
    shape: Shape
    seq: int

    def matches(self, wanted: frozenset[str], scope: Scope, own_words: bool) -> bool:
        """As documents.words_query: a word in the text (or the context), within the dates."""
        return bool(wanted & self.own or (not own_words and wanted & self.context)) and self.within(scope)

    def within(self, scope: Scope) -> bool:
        """Within the scope's dates (the thread and snapshot are the caller's to test)."""
        sent = micros(self.sent_at)
        if scope.start is not None and sent < micros(scope.start):
            return False
        return all(upper is None or sent < micros(upper) for upper in (scope.end, scope.before))

    def hit(self) -> Hit:
        role = "owner" if self.role == "owner" else "assistant"  # as the index's ``owner`` field tells it
        return Hit(self.id, role, "", 0.0, self.sent_at, self.shape, self.seq)


@lru_cache(maxsize=4 * TAIL_LIMIT)
def _message(id_: int, role: str, sent_at: Any, text: str, context: str, seq: int) -> UnindexedMessage:
    """A row as matching reads it, a pure function of the row and its place: a busy thread's
    tail is read again by every search until the index holds it (on three workers appending
    to one thread, ~60 rows a search), and each row is stemmed and shaped once, not rebuilt
    each time (0.5 ms a search)."""
    own, context_stems = frozenset(stemmed(text).split()), frozenset(stemmed(context).split())
    return UnindexedMessage(id_, role, utc(sent_at), own, context_stems, shape_of(text), seq)


def unindexed_messages(rows: Sequence[Any], first_place: int) -> tuple[UnindexedMessage, ...]:
    """Rows of ``thread_reads.tail`` (id, role, text, sent_at, context, …), unpacked by
    position: a Row's attribute access costs half a microsecond a column."""
    return tuple(
        _message(int(id_), str(role), sent_at, str(text), str(context), first_place + n)
        for n, (id_, role, text, sent_at, context, *_) in enumerate(rows)
    )


class WithUnindexed:
    """A Matcher: the derived index up to ``split``, and the thread's messages after it."""

    def __init__(self, index: Indexed, split: int, tail: Sequence[UnindexedMessage]) -> None:
        self._index = index
        self._split = split
        self._tail = tuple(sorted(tail, key=lambda m: -m.id))  # newest first: the backend's order

    def _upto(self, scope: Scope) -> Scope:
        return replace(scope, snapshot=min(scope.snapshot, self._split))

    def _matching(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> list[UnindexedMessage]:
        wanted = frozenset(stem(t) for t in terms)
        return [m for m in self._tail if m.id <= scope.snapshot and m.matches(wanted, scope, own_words)]

    async def count_matches(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int:
        indexed = await self._index.count_matches(terms, self._upto(scope), own_words)
        return indexed + len(self._matching(terms, scope, own_words))

    async def ranked(self, terms: Sequence[str], scope: Scope, limit: int, offset: int = 0) -> list[Hit]:
        tail = [m.hit() for m in self._matching(terms, scope)]
        head = tail[offset:offset + limit]
        if len(head) == limit:
            return head
        return head + await self._index.ranked(terms, self._upto(scope), limit - len(head), max(0, offset - len(tail)))

    async def ranked_and_counted(self, terms: Sequence[str], scope: Scope, limit: int) -> tuple[list[Hit], int]:
        tail = [m.hit() for m in self._matching(terms, scope)]
        hits, total = await self._index.ranked_and_counted(terms, self._upto(scope), max(0, limit - len(tail)))
        return (tail + hits)[:limit], total + len(tail)

    async def newest(self, terms: Sequence[str], scope: Scope, limit: int, offset: int) -> list[int]:
        keyed = await self._index.newest_keyed(terms, self._upto(scope), offset + limit)
        keyed += [(micros(m.sent_at), m.id) for m in self._matching(terms, scope, own_words=True)]
        keyed.sort(key=lambda k: (-k[0], -k[1]))
        return [i for _, i in keyed[offset:offset + limit]]

    async def which_match(self, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]:
        tail = {m.id for m in self._matching(terms, scope)} & set(ids)
        indexed = [i for i in ids if i <= self._split]
        return tail | await self._index.which_match(terms, self._upto(scope), indexed)

    async def at_places(self, terms: Sequence[str], scope: Scope, places: Sequence[int]) -> list[tuple[Hit, bool]]:
        """As the index's: the tail's messages at ``places`` here, the others from the index."""
        wanted = frozenset(stem(t) for t in terms)
        tail = {m.seq: m for m in self._tail if m.id <= scope.snapshot and m.within(scope)}
        found = [(tail[p].hit(), tail[p].matches(wanted, scope, False)) for p in places if p in tail]
        first = min((m.seq for m in self._tail), default=None)
        rest = [p for p in places if first is None or p < first]
        return found + await self._index.at_places(terms, self._upto(scope), rest)

    async def frequencies(self, terms: Sequence[str], thread_id: int) -> tuple[int, dict[str, int]]:
        """The index's for the thread, with the tail's messages counted in as the index will
        count them."""
        documents, per_stem = await self._index.frequencies(terms, thread_id)
        for s in per_stem:
            held = sum((s in m.own) + (s in m.context) for m in self._tail)
            per_stem[s] = min(FREQUENCY_CAP, per_stem[s] + held)
        return max(1, documents + len(self._tail)), per_stem
