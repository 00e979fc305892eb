"""What a search asks the derived index: counts, the best hits, the newest, frequencies, places.

IndexReader only reads the searcher of the shared IndexState (adapters.storage.search_index.index_state);
it is the Matcher over what the index holds, which DerivedIndex hands a search whole or
joined with the thread's unindexed messages (adapters.storage.search_index.unindexed). Every call
runs guarded, so a failure inside tantivy becomes IndexFailure and the database's own index answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tantivy

from adapters.storage.search_index.documents import frequencies_of, places_query, read_hits, top_hits, words_query
from adapters.storage.search_index.index_state import IndexState, guarded
from core.errors import IndexFailure
from core.history.scope import Hit, Scope


class IndexReader:
    """A Matcher (core.ports) over the documents the index holds."""

    def __init__(self, state: IndexState) -> None:
        self._state = state

    def _bounded(self, scope: Scope) -> bool:
        """Whether the snapshot must filter: unless the thread's last indexed message is known
        and within it (a first page, caught up), the index may hold later ones."""
        last = self._state.last_indexed.get(scope.thread_id)
        return last is None or last > scope.snapshot

    def _query(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> Any:
        return words_query(self._state.schema, terms, scope, own_words, self._bounded(scope))

    def count(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int:
        return int(self._state.searcher().search(self._query(terms, scope, own_words), 1, count=True).count)

    async def count_matches(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int:
        return guarded(lambda: self.count(terms, scope, own_words))

    async def newest(self, terms: Sequence[str], scope: Scope, limit: int, offset: int) -> list[int]:
        keyed = await self.newest_keyed(terms, scope, offset + limit)
        return [i for _, i in keyed[offset:offset + limit]]

    async def newest_keyed(self, terms: Sequence[str], scope: Scope, wanted: int) -> list[tuple[int, int]]:
        """The ``wanted`` newest messages whose own words match, as (sent, id), newest first."""
        return guarded(lambda: self.newest_hits(terms, scope, wanted))

    def newest_hits(self, terms: Sequence[str], scope: Scope, wanted: int) -> list[tuple[int, int]]:
        found, _ = top_hits(self._state.searcher(), self._query(terms, scope, own_words=True), wanted, "sent")
        return sorted(((int(key), i) for key, i, _ in found), key=lambda k: (-k[0], -k[1]))[:wanted]

    def ranked_hits(self, terms: Sequence[str], scope: Scope, limit: int, offset: int,
                    counted: bool = False) -> tuple[list[Hit], int | None]:
        """The best matches with what re-ranking reads, all from the index's own fields (and,
        with ``counted``, how many match in all).

        No text leaves the index: a hit carries its shape (stems by sentence), place in the
        thread, time and whether the owner said it. What is shown is read from the
        database afterwards, within the searched thread (core.history.search).
        """
        searcher = self._state.searcher()
        found, total = top_hits(searcher, self._query(terms, scope), offset + limit, None, counted)
        chosen = sorted(found, key=lambda h: (-h[0], h[1]))[offset:offset + limit]
        return read_hits(searcher, chosen), total

    async def ranked(self, terms: Sequence[str], scope: Scope, limit: int, offset: int = 0) -> list[Hit]:
        return guarded(lambda: self.ranked_hits(terms, scope, limit, offset))[0]

    async def ranked_and_counted(self, terms: Sequence[str], scope: Scope, limit: int) -> tuple[list[Hit], int]:
        hits, total = guarded(lambda: self.ranked_hits(terms, scope, limit, 0, counted=True))
        assert total is not None  # a counted search always counts
        return hits, total

    async def which_match(self, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]:
        return guarded(lambda: self.matching_ids(terms, scope, ids))

    def matching_ids(self, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]:
        if not ids:
            return set()
        searcher = self._state.searcher()
        among = tantivy.Query.term_set_query(self._state.schema, "id", list(ids))
        query = tantivy.Query.boolean_query([
            (tantivy.Occur.Must, self._query(terms, scope)), (tantivy.Occur.Must, among)])
        found = searcher.search(query, len(ids), count=False)
        return {int(i) for i in searcher.fast_field_values("id", [address for _, address in found.hits])}

    async def at_places(self, terms: Sequence[str], scope: Scope, places: Sequence[int]) -> list[tuple[Hit, bool]]:
        return guarded(lambda: self.placed_hits(terms, scope, places))

    def placed_hits(self, terms: Sequence[str], scope: Scope, places: Sequence[int]) -> list[tuple[Hit, bool]]:
        """The scope's messages at ``places`` in its thread (``seq``), each with whether it
        matches the words: one search, no round trip to the database."""
        if not places:
            return []
        searcher = self._state.searcher()
        query = places_query(self._state.schema, terms, scope, places, self._bounded(scope))
        found = searcher.search(query, len(places), count=False)
        addresses = [address for _, address in found.hits]
        ids = searcher.fast_field_values("id", addresses)
        chosen = [(float(score), int(i), address) for (score, address), i in zip(found.hits, ids, strict=True)]
        return [(hit, score > 0) for hit, (score, _, _) in zip(read_hits(searcher, chosen), chosen, strict=True)]

    async def frequencies(self, terms: Sequence[str], thread_id: int) -> tuple[int, dict[str, int]]:
        """The thread's indexed documents and each stem's document frequency among them, text
        or context (in memory)."""
        return guarded(lambda: frequencies_of(self._state.searcher(), thread_id, terms))

    def field_at(self, message_id: int, field: str) -> int | None:
        """A fast field of the message's document (``seq``, ``digest``); None when not indexed."""
        searcher = self._state.searcher()
        found = searcher.search(tantivy.Query.term_query(self._state.schema, "id", message_id), 1, count=False)
        return int(searcher.fast_field_values(field, [found.hits[0][1]])[0]) if found.hits else None

    def place_after(self, message_id: int | None) -> int:
        """The place (``seq``) of the message after ``message_id`` in its thread; 0 after none."""
        if message_id is None:
            return 0
        place = self.field_at(message_id, "seq")
        if place is None:
            raise IndexFailure("The search index lacks a message it should hold; the database answers.")
        return place + 1
