"""history_search: the conversation itself, searched the way the specification says.

Every search reads only the owner's active thread (a reset conversation is not searched,
another owner's messages are never in it) and only up to a snapshot id fixed by the first
page. Three shapes share one result format: ``around`` (a message and its five
neighbours each side), a period listing (no query: oldest first, or newest), and a word
search (best first, or newest). Each result carries its date in the owner's time zone,
its text cut at 1,200 characters and marked ``truncated``, and the message before and
after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.clock import model_time
from core.errors import IndexFailure, InvalidInput, NotFound
from core.history.cursor import MAX_OFFSET, Cursor, decode, encode, fingerprint
from core.history.preceding import preceding
from core.history.ranking import NEIGHBOUR_REACH, WINDOW, Frequencies, Hints, around_by_position, rerank
from core.history.request import HistorySearchArguments, Order, SearchRequest, parse_request
from core.history.scope import Scope
from core.message import StoredMessage
from core.owner import Owner
from core.ports import Conversation, Keys, Matcher, Messages, SearchIndex
from core.text import QueryTerms, query_terms, stems, words

MAX_EXCERPT_CHARS = 1_200
MAX_NEIGHBOUR_CHARS = 300
AROUND_EACH_SIDE = 5


@dataclass(frozen=True)
class Page:
    ids: tuple[int, ...]
    total: int
    next_offset: int | None  # None when the list is complete
    added: int = 0  # how many the relevance window added (core.history.preceding)
    by_next: frozenset[int] = frozenset()  # those of them on this page
    frequencies: Frequencies | None = None  # what the window was re-ranked with, for the next pages


def cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` at most ``limit`` characters, ending on a word where one is near."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    space = head.rfind(" ", limit - 80)
    return (head[:space] if space > 0 else head).rstrip() + "…", True


class HistorySearch:
    def __init__(self, messages: Messages, keywords: Matcher, conversation: Conversation, keys: Keys,
                 index: SearchIndex | None = None) -> None:
        self._messages = messages
        self._keywords = keywords  # the database's own index: always there, exact, the fallback of any faster one
        self._conversation = conversation
        self._keys = keys
        self._index = index

    async def _usable_and_current(self, owner_id: int, terms: QueryTerms | None) -> tuple[bool, tuple[int, int] | None]:
        """Whether the derived index may answer a word search, and the owner's active thread
        and its last message id: one statement with the index's check, else the database's."""
        if terms is not None and self._index is not None:
            return await self._index.usable_and_current(owner_id)
        return False, await self._conversation.current(owner_id)

    async def _matcher(self, usable: bool, scope: Scope, cursor: Cursor | None) -> tuple[Matcher, int | None]:
        """The derived index (with the thread's newest messages from the database) and how
        far it answers, else the database's own index and None. Later pages keep the first
        page's answer: the cursor says which it was."""
        if not usable or self._index is None or (cursor is not None and cursor.split is None):
            return self._keywords, None
        view = await self._index.view(scope.thread_id, scope.snapshot, cursor.split if cursor else None, checked=True)
        return view if view is not None else (self._keywords, None)

    async def search(self, owner: Owner, args: HistorySearchArguments) -> dict[str, Any]:
        """Run history_search for ``owner``; the tool's JSON result, or InvalidInput/NotFound."""
        request = parse_request(args, owner.zone)
        terms = self._terms(owner, request) if request.around is None else None
        usable, found = await self._usable_and_current(owner.id, terms)
        thread_id, last = found if found else (await self._messages.active_thread(owner.id), 0)
        if request.around is not None:
            return await self._around(owner, thread_id, request.around)
        search_print = fingerprint({
            "owner": owner.id, "thread": thread_id, "terms": terms.terms if terms else None,
            "from": request.start, "to": request.end, "before": request.before, "order": request.order.value,
        })
        key = await self._keys.key("signing_key")
        cursor = decode(request.cursor, search_print, key) if request.cursor else None
        snap = cursor.snapshot if cursor else last
        scope = Scope(thread_id, snap, request.start, request.end, request.before)
        matcher, split = await self._matcher(usable, scope, cursor)
        offset, added = (cursor.offset, cursor.added) if cursor else (0, 0)
        counted = _from_cursor(cursor.counts) if cursor and cursor.counts else None
        try:
            page = await self._page(matcher, scope, request, terms, owner, offset, added, counted)
        except IndexFailure:
            page, split = await self._page(self._keywords, scope, request, terms, owner, offset, added, counted), None
        deep = page.next_offset is not None and page.next_offset > MAX_OFFSET
        # only the index's counts travel: they are the thread's own, the database's every owner's (a cursor is readable)
        counts = _for_cursor(page.frequencies) if split is not None else None
        following = Cursor(search_print, page.next_offset or 0, snap, split, page.added, counts)
        next_cursor = None if page.next_offset is None or deep else encode(following, key)
        results = await self._results(owner, thread_id, page.ids, True, terms.stems if terms else None, page.by_next)
        answer: dict[str, Any] = {
            "results": results, "totalMatches": page.total, "nextCursor": next_cursor,
            "complete": page.next_offset is None,
        }
        notes = []
        if terms and terms.dropped:
            notes.append(f"Only the first {len(terms.groups)} distinct words were searched.")
        if deep:
            notes.append(f"Pages end after {MAX_OFFSET:,} results; narrow the search with from and to.")
        if notes:
            answer["note"] = " ".join(notes)
        return answer

    def _terms(self, owner: Owner, request: SearchRequest) -> QueryTerms | None:
        if request.query is None:
            return None
        terms = query_terms(request.query, ignore=frozenset(words(owner.name)))
        if not terms.terms:
            raise InvalidInput("The query has no words to search for; use words from the messages.")
        return terms

    async def _around(self, owner: Owner, thread_id: int, message_id: int) -> dict[str, Any]:
        found = await self._messages.get(message_id)
        if found is None or found.thread_id != thread_id or found.role.value == "tool":
            raise NotFound(f"Message {message_id} is not in this conversation.")
        ids = await self._conversation.window(thread_id, message_id, AROUND_EACH_SIDE)
        results = await self._results(owner, thread_id, ids, False, None, frozenset())
        return {"results": results, "totalMatches": len(results), "nextCursor": None, "complete": True}

    async def _results(
        self, owner: Owner, thread_id: int, ids: Sequence[int], with_neighbours: bool,
        query_stems: frozenset[str] | None, by_next: frozenset[int],
    ) -> list[dict[str, Any]]:
        near: dict[int, tuple[int | None, int | None]] = {}
        read: Mapping[int, StoredMessage]
        if with_neighbours:
            read, near = await self._conversation.shown(thread_id, ids)
        else:
            read = await self._messages.get_many(ids)
        # read back and checked here, whatever an index said: only this owner's thread is shown
        stored = {i: m for i, m in read.items() if m.owner_id == owner.id and m.thread_id == thread_id}
        results = []
        for message_id in ids:
            if message_id not in stored:
                continue
            result = _render(owner, stored[message_id], MAX_EXCERPT_CHARS)
            if message_id in by_next:
                result["matched_by"] = "next message"  # the message after it matches strongly
            elif query_stems and not query_stems & stems(stored[message_id].text):
                result["matched_by"] = "previous message"  # found by the words just before it
            if with_neighbours:
                before, after = near.get(message_id, (None, None))
                result["before"] = _render(owner, stored[before], MAX_NEIGHBOUR_CHARS) if before in stored else None
                result["after"] = _render(owner, stored[after], MAX_NEIGHBOUR_CHARS) if after in stored else None
            results.append(result)
        return results

    async def _page(
        self, matcher: Matcher, scope: Scope, request: SearchRequest, terms: QueryTerms | None, owner: Owner,
        offset: int, added: int, counted: Frequencies | None,
    ) -> Page:
        limit = request.limit
        by_next: frozenset[int] = frozenset()
        frequencies = None
        if terms is None:
            total = await self._conversation.count_period(scope)
            ids = await self._conversation.period(scope, request.order is Order.NEWEST, limit, offset)
        elif request.order is Order.NEWEST:  # a time listing holds only messages saying the words
            total = await matcher.count_matches(terms.terms, scope, own_words=True)
            ids = await matcher.newest(terms.terms, scope, limit, offset)
        else:
            hints = Hints.of(request.query or "", owner.name, owner.zone)
            ids, total, extra, added, frequencies = await self._relevance(
                matcher, scope, terms, hints, limit, offset, added, counted)
            by_next = frozenset(ids) & extra
        end = offset + len(ids)
        return Page(tuple(ids), total, end if end < total and ids else None, added, by_next, frequencies)

    async def _relevance(
        self, matcher: Matcher, scope: Scope, terms: QueryTerms, hints: Hints, limit: int, offset: int, added: int,
        counted: Frequencies | None,
    ) -> tuple[list[int], int, frozenset[int], int, Frequencies | None]:
        """One page of the relevance order (the re-ranked window first, then the backend's
        order), how many it lists in all, the window's added messages and their count, and
        the word statistics it was re-ranked with.

        ``added`` and ``counted`` are the first page's (from the cursor): a page past the
        window starts that much earlier in the backend's order, and the window is re-ranked
        with the first page's statistics, whatever the index holds now.
        """
        if offset >= WINDOW + added:
            total = await matcher.count_matches(terms.terms, scope)
            ranked = await matcher.ranked(terms.terms, scope, limit, offset - added)
            return [h.id for h in ranked], total + added, frozenset(), added, counted
        hits, total = await matcher.ranked_and_counted(terms.terms, scope, WINDOW)
        if not hits:
            return [], total, frozenset(), 0, counted
        extra = await preceding(self._conversation, self._messages, matcher, scope, terms.terms, hits)
        pool = [*hits, *extra]
        if all(h.seq is not None for h in pool):  # the derived index knows each one's place
            around = around_by_position(pool)
        else:
            around = await self._conversation.neighbours(scope.thread_id, [h.id for h in pool], NEIGHBOUR_REACH)
        frequencies = counted or Frequencies(*await matcher.frequencies(terms.terms, scope.thread_id))
        ordered = rerank(pool, terms.stem_groups, around, frequencies, hints)
        ids = ordered[offset : offset + limit]
        if len(ids) < limit and len(hits) == WINDOW:
            more = await matcher.ranked(terms.terms, scope, limit - len(ids), WINDOW + max(0, offset - len(ordered)))
            ids += [h.id for h in more]
        return ids, total + len(extra), frozenset(h.id for h in extra), len(extra), frequencies


def _for_cursor(frequencies: Frequencies | None) -> tuple[int, tuple[tuple[str, int], ...]] | None:
    """Statistics as a cursor carries them."""
    return None if frequencies is None else (frequencies.documents, tuple(frequencies.of.items()))


def _from_cursor(counts: tuple[int, tuple[tuple[str, int], ...]]) -> Frequencies:
    return Frequencies(counts[0], dict(counts[1]))


def _render(owner: Owner, message: StoredMessage, limit: int) -> dict[str, Any]:
    text, truncated = cut(message.text, limit)
    rendered: dict[str, Any] = {
        "id": message.id, "role": message.role.value,
        "sent_at": model_time(message.sent_at, owner.zone),
        "text": text,
    }
    if truncated:
        rendered["truncated"] = True
    for flag in ("card_title", "forwarded", "attachment", "voice"):
        if getattr(message, flag):
            rendered[flag] = True
    if message.media is not None:  # the file is named; what it showed was never stored
        rendered["file"] = message.media.label
    return rendered
