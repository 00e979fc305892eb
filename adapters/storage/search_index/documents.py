"""The derived index's documents: its schema, how a message becomes one, how a search becomes a query.

Each stem is a term of its thread, so a search reads only that thread's postings and no other
owner's words weigh in its scores. The fields and why: docs/search.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import tantivy

from adapters.storage.keyword_matcher import FREQUENCY_CAP
from core.history.ranking import shape_of
from core.history.scope import CONTEXT_WEIGHT, Hit, Scope, Shape
from core.text import stem, words

ANALYZER = "nod_words"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(moment: datetime) -> int:
    return int((moment - _EPOCH).total_seconds() * 1_000_000)


def utc(value: Any) -> datetime:
    """A raw row's sent time: a datetime on PostgreSQL, ISO text on SQLite."""
    sent = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return sent if sent.tzinfo else sent.replace(tzinfo=UTC)


def row_digest(row: Any) -> int:
    """A fingerprint of a stored message (id, owner, thread, role, time, text), 62 bits.

    The index keeps it per document; a database whose row under the same id differs —
    restored from a backup, replaced, another file — is told apart by it.
    """
    parts = (row.id, row.owner_id, row.thread_id, row.role, micros(utc(row.sent_at)), row.text)
    raw = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big") >> 2


def document_of(row: Any, seq: int) -> Any:
    """A message's document (a row as ``index_feed.GAP`` reads it) at ``seq``, its place in its thread."""
    thread = int(row.thread_id)
    return tantivy.Document(
        text=thread_terms(thread, row.text), context=thread_terms(thread, row.context), id=int(row.id), thread=thread,
        sent=micros(utc(row.sent_at)), digest=row_digest(row), seq=seq, owner=int(row.role == "owner"),
        shape=encode_shape(shape_of(row.text)))


def schema_of_documents() -> Any:
    builder = tantivy.SchemaBuilder()
    # frequencies only: every query is words, never a phrase, so positions would be read by
    # nothing (the index is 17 % smaller without them, and a search 10 % faster)
    builder.add_text_field("text", tokenizer_name=ANALYZER, index_option="freq")
    builder.add_text_field("context", tokenizer_name=ANALYZER, index_option="freq")
    builder.add_integer_field("id", stored=False, indexed=True, fast=True)
    builder.add_integer_field("thread", stored=False, indexed=True, fast=True)
    builder.add_integer_field("sent", stored=False, indexed=True, fast=True)
    builder.add_integer_field("digest", stored=False, indexed=False, fast=True)
    # place among the thread's messages; indexed: a match's previous message is found by it
    builder.add_integer_field("seq", stored=False, indexed=True, fast=True)
    builder.add_integer_field("owner", stored=False, indexed=False, fast=True)  # 1: the owner's words
    builder.add_bytes_field("shape", stored=True)  # what re-ranking reads (ranking.shape_of)
    return builder.build()


def encode_shape(shape: Shape) -> bytes:
    """A shape as stored: a line per sentence, ``?`` or ``.`` then its stems (stems hold no spaces)."""
    return "\n".join(("?" if question else ".") + " ".join(sentence) for sentence, question in shape).encode()


def decode_shape(raw: bytes) -> Shape:
    lines = raw.decode().split("\n") if raw else []
    return tuple((tuple(line[1:].split()), line[:1] == "?") for line in lines)


def analyzer() -> Any:
    """Documents arrive as stems joined by spaces (``stemmed``): the index only splits them."""
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()


def stemmed(text_: str) -> str:
    """The words Nod compares everywhere else (folded, Porter-stemmed), ready to index."""
    return " ".join(stem(w) for w in words(text_))


def scoped(thread_id: int, stem_: str) -> str:
    """A stem as a term of one thread (stems are word characters: no colon, no space)."""
    return f"{thread_id}:{stem_}"


def thread_terms(thread_id: int, text_: str) -> str:
    """``text_``'s stems as the index holds them: terms of the thread."""
    return " ".join(scoped(thread_id, stem(w)) for w in words(text_))


def _words(schema: Any, thread_id: int, terms: Sequence[str], own_words: bool) -> Any:
    """Any of the words in the thread's texts (and, unless ``own_words``, in their context, boosted lower)."""
    wanted = list(dict.fromkeys(scoped(thread_id, stem(t)) for t in terms))
    should = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t)) for t in wanted]
    if not own_words:
        should += [
            (tantivy.Occur.Should,
             tantivy.Query.boost_query(tantivy.Query.term_query(schema, "context", t), CONTEXT_WEIGHT))
            for t in wanted
        ]
    return tantivy.Query.boolean_query(should)


def _within(schema: Any, scope: Scope, bounded: bool, thread: bool) -> list[tuple[Any, Any]]:
    """The scope as filters that add nothing to a score: the thread (unless the query's own
    terms are the thread's), the snapshot, the dates.

    ``bounded`` False: the index holds none of the thread's messages past the snapshot, so
    that filter would keep every document; a range over a fast field reads the whole
    column (0.3-0.6 ms a search at a million documents), so it is left out then.
    """
    Integer = tantivy.FieldType.Integer
    filters = [tantivy.Query.term_query(schema, "thread", scope.thread_id)] if thread else []
    if bounded:
        filters.append(tantivy.Query.range_query(schema, "id", Integer, None, scope.snapshot))
    if scope.start is not None:
        filters.append(tantivy.Query.range_query(schema, "sent", Integer, micros(scope.start), None))
    for upper in (scope.end, scope.before):
        if upper is not None:
            filters.append(tantivy.Query.range_query(schema, "sent", Integer, None, micros(upper), include_upper=False))
    return [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in filters]


def words_query(schema: Any, terms: Sequence[str], scope: Scope, own_words: bool = False, bounded: bool = True) -> Any:
    """Any of the words (own text, and context boosted lower unless ``own_words``) within the scope."""
    words_ = _words(schema, scope.thread_id, terms, own_words)  # the thread's terms: no thread filter
    must = [(tantivy.Occur.Must, words_), *_within(schema, scope, bounded, thread=False)]
    return tantivy.Query.boolean_query(must)


def places_query(schema: Any, terms: Sequence[str], scope: Scope, places: Sequence[int], bounded: bool = True) -> Any:
    """The scope's messages at ``places`` in its thread, matching the words or not: those that
    match score above zero (a word's BM25 is positive), the others zero."""
    # one term query a place, not term_set_query: that scans the whole seq column (0.4 ms at a
    # million documents), ten postings lookups do not (the page's search 0.51 -> 0.19 ms)
    anywhere = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "seq", p)) for p in places]
    at = tantivy.Query.const_score_query(tantivy.Query.boolean_query(anywhere), 0.0)
    return tantivy.Query.boolean_query([
        (tantivy.Occur.Should, _words(schema, scope.thread_id, terms, False)), (tantivy.Occur.Must, at),
        *_within(schema, scope, bounded, thread=True)])


def read_hits(searcher: Any, chosen: Sequence[tuple[float, int, Any]]) -> list[Hit]:
    """(score, id, address) as Hits carrying shape, place, time and role from the index."""
    addresses = [address for _, _, address in chosen]
    values = {name: searcher.fast_field_values(name, addresses) for name in ("seq", "sent", "owner")}
    hits = []
    for n, (score, message_id, address) in enumerate(chosen):
        shape = decode_shape(bytes(searcher.doc(address).get_first("shape") or b""))
        sent = _EPOCH + timedelta(microseconds=int(values["sent"][n] or 0))
        role = "owner" if values["owner"][n] else "assistant"
        hits.append(Hit(message_id, role, "", score, sent, shape, int(values["seq"][n] or 0)))
    return hits


def top_hits(searcher: Any, query: Any, wanted: int, field: str | None,
             counted: bool = False) -> tuple[list[tuple[float, int, Any]], int | None]:
    """At least ``wanted`` hits of ``query`` as (key, id, address), read on until the key at
    the boundary changes; ordered by ``field`` (a time listing), else by score. With
    ``counted``, also how many match in all, from the same pass.

    By score, ties are common (short messages holding the same word score the same): with a
    margin of 16, 27 % of the million-message bench's searches ran a second time; fetching
    twice ``wanted`` made that none of 200, for a fraction of a second search's cost."""
    fetch = wanted + (16 if field else max(16, wanted))
    total: int | None = None
    while True:
        if field:
            found = searcher.search(query, fetch, count=counted, order_by_field=field)
        else:
            found = searcher.search(query, fetch, count=counted)
        if counted:
            total, counted = int(found.count), False
        ids = searcher.fast_field_values("id", [address for _, address in found.hits])
        hits = [(float(key), int(i), address) for (key, address), i in zip(found.hits, ids, strict=True)]
        if len(hits) < fetch or wanted == 0 or hits[-1][0] != hits[wanted - 1][0]:
            return hits, total
        fetch *= 4


def frequencies_of(searcher: Any, thread_id: int, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """The thread's indexed documents and each stem's document frequency among them, text or
    context: as in SQL, capped, a message holding it in both fields counting twice
    (adapters.storage.keyword_matcher)."""
    counts = {
        s: min(FREQUENCY_CAP, int(searcher.doc_freq("text", scoped(thread_id, s)))
               + int(searcher.doc_freq("context", scoped(thread_id, s))))
        for s in dict.fromkeys(stem(t) for t in terms)
    }
    return int(searcher.doc_freq("thread", thread_id)), counts
