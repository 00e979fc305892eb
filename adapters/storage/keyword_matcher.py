"""The database's own full-text index, one query per backend behind one class.

SQLite answers with FTS5 (``porter unicode61 remove_diacritics 2``) ranked by BM25;
PostgreSQL with an accent-folding english ``tsvector`` (the nod_search configuration)
and a GIN index, ranked by ``ts_rank_cd``. Both index a message's own words and, as a
second, lower-weighted field, the words of the message just before it (migration 3 writes
that field as each message arrives). ``KeywordMatcher`` is the Matcher history_search uses
when the derived index cannot answer; the conversation port (adapters.storage.thread_reads)
runs this module's period and related-message queries. The words are bound as parameters
and, for FTS5, each is quoted as a phrase, so nothing the owner typed is ever read as query
syntax. Ties are broken by id so that every ordering is total and paging is stable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, column, func, literal_column, select, table, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage.database import for_reads
from adapters.storage.message_store import stored_message
from adapters.storage.schema import messages
from core.history.related import closest
from core.history.scope import CONTEXT_WEIGHT, Hit, Scope
from core.message import StoredMessage
from core.text import query_terms, stem

_fts = table("search_fts", column("rowid"))
def _scope_filter(scope: Scope) -> ColumnElement[bool]:
    conditions = [
        messages.c.thread_id == scope.thread_id,
        messages.c.id <= scope.snapshot,
        messages.c.role != "tool",
    ]
    return and_(*conditions, *_date_filter(scope))


def _date_filter(scope: Scope) -> list[ColumnElement[bool]]:
    conditions = []
    if scope.start is not None:
        conditions.append(messages.c.sent_at >= scope.start)
    if scope.end is not None:
        conditions.append(messages.c.sent_at < scope.end)
    if scope.before is not None:
        conditions.append(messages.c.sent_at < scope.before)
    return conditions


def _fts_scope_filter(scope: Scope) -> ColumnElement[bool]:
    """The scope for a query that FTS5 must drive: the matches first, then their rows.

    Left to itself SQLite's planner may walk the whole thread by its index and look each
    message up in FTS5 — on a million-message thread 25 times slower. The unary ``+``
    (SQLite's documented way to keep a column's index out of a plan) makes the thread
    test a check on each match; the snapshot bound goes to FTS5 as a rowid range. The
    index holds no tool messages, so the role needs no test.
    """
    thread: ColumnElement[Any] = literal_column("+messages.thread_id")
    return and_(thread == scope.thread_id, _fts.c.rowid <= scope.snapshot, *_date_filter(scope))


def _fts_matches(terms: Sequence[str], scope: Scope, *columns: Any, own_words: bool = False) -> Select[Any]:
    return (
        select(*columns)
        .select_from(_fts.join(messages, messages.c.id == _fts.c.rowid))
        .where(text("search_fts MATCH :match").bindparams(match=fts5_match(terms, own_words)))
        .where(_fts_scope_filter(scope))
    )


def fts5_match(terms: Sequence[str], own_words: bool = False) -> str:
    """An FTS5 query matching any of the words, each quoted so it is only ever a word;
    ``own_words`` limits it to the message's own text (a column filter), not its context."""
    words_ = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f"text : ({words_})" if own_words else words_


def _tsquery_own(terms: Sequence[str]) -> ColumnElement[Any]:
    """Any of the words in the message's own text: lexemes labelled A (the text's weight)."""
    return func.to_tsquery(literal_column("'nod_search'::regconfig"),
                           " | ".join(_tsquery_word(t) + ":A" for t in terms))


def tsquery_any(terms: Sequence[str]) -> ColumnElement[Any]:
    parts = [func.plainto_tsquery(literal_column("'nod_search'::regconfig"), term) for term in terms]
    combined: ColumnElement[Any] = parts[0]
    for part in parts[1:]:
        combined = combined.op("||")(part)
    return combined


def _matching(conn: AsyncConnection, terms: Sequence[str], scope: Scope, *columns: Any) -> Select[Any]:
    """SELECT ``columns`` plus a relevance score over the messages matching any word."""
    if conn.dialect.name == "sqlite":
        bm25 = func.bm25(literal_column("search_fts"), 1.0, CONTEXT_WEIGHT)
        return _fts_matches(terms, scope, *columns, (-bm25).label("score"))
    query = tsquery_any(terms)
    vector: ColumnElement[Any] = literal_column("messages.search_tsv")
    weights: ColumnElement[Any] = literal_column(f"'{{0.1, 0.2, {CONTEXT_WEIGHT}, 1.0}}'::float4[]")  # D, C, B (context), A (text)
    score = func.ts_rank_cd(weights, vector, query).label("score")
    return select(*columns, score).where(vector.op("@@")(query)).where(_scope_filter(scope))


def _own_matching(conn: AsyncConnection, terms: Sequence[str], scope: Scope, *columns: Any) -> Select[Any]:
    """SELECT ``columns`` of the messages whose own words match (no score: listings are by time)."""
    if conn.dialect.name == "sqlite":
        return _fts_matches(terms, scope, *columns, own_words=True)
    vector: ColumnElement[Any] = literal_column("messages.search_tsv")
    return select(*columns).where(vector.op("@@")(_tsquery_own(terms))).where(_scope_filter(scope))


async def count_matches(conn: AsyncConnection, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int:
    """How many messages match: by their own words or their context, or (``own_words``) their own only."""
    if own_words:
        return int((await conn.execute(_own_matching(conn, terms, scope, func.count()))).scalar_one())
    if conn.dialect.name == "sqlite":
        query = _fts_matches(terms, scope, func.count())
        return int((await conn.execute(query)).scalar_one())
    inner = _matching(conn, terms, scope, messages.c.id).subquery()
    return int((await conn.execute(select(func.count()).select_from(inner))).scalar_one())


async def ranked(
    conn: AsyncConnection, terms: Sequence[str], scope: Scope, limit: int, offset: int = 0
) -> list[Hit]:
    """Matches, best first, by the backend's own relevance score.

    The sort carries only ids and scores; the texts are read for the page alone, so a
    common word's thousands of matches never drag their texts through the sort.
    """
    query = _matching(conn, terms, scope, messages.c.id)
    query = query.order_by(literal_column("score").desc(), messages.c.id).limit(limit).offset(offset)
    best = (await conn.execute(query)).all()
    if not best:
        return []
    found = select(messages.c.id, messages.c.role, messages.c.text, messages.c.sent_at).where(
        messages.c.id.in_([r.id for r in best]))
    rows = {r.id: r for r in await conn.execute(found)}
    return [Hit(r.id, rows[r.id].role, rows[r.id].text, float(r.score), rows[r.id].sent_at) for r in best]


async def which_match(conn: AsyncConnection, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]:
    """Which of ``ids`` match, by their own words or their context, within the scope."""
    if not ids:
        return set()
    if conn.dialect.name == "sqlite":
        query = _fts_matches(terms, scope, messages.c.id)
    else:
        query = select(messages.c.id).where(
            literal_column("messages.search_tsv").op("@@")(tsquery_any(terms))).where(_scope_filter(scope))
    return {int(i) for i in (await conn.execute(query.where(messages.c.id.in_(list(ids))))).scalars()}


FREQUENCY_CAP = 2_000  # counting stops here: past it a word is common, how common matters little


async def frequencies(conn: AsyncConnection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """How many messages are indexed, and how many each word's stem matches (text or context).

    Counted over the whole index like the backends' own BM25 statistics, each count
    capped at FREQUENCY_CAP so that a common word costs no more than a rare one; one
    statement for all the words. Both fields count, as the match itself does: restricting
    PostgreSQL to the text's weight would read every matching row. The count of messages
    is the newest id (ids only grow), which is all an IDF needs.
    """
    first: dict[str, str] = {}
    for term in terms:
        first.setdefault(stem(term), term)  # one word per stem
    words_ = list(first.values())
    if not words_:
        return 1, {}
    if conn.dialect.name == "sqlite":
        match = "SELECT rowid FROM search_fts WHERE search_fts MATCH :m{i} LIMIT :cap"
        params = {f"m{i}": fts5_match([w]) for i, w in enumerate(words_)}
    else:
        match = "SELECT 1 FROM messages WHERE search_tsv @@ to_tsquery('nod_search'::regconfig, :m{i}) LIMIT :cap"
        params = {f"m{i}": _tsquery_word(w) for i, w in enumerate(words_)}
    counts = ", ".join(f"(SELECT count(*) FROM ({match.format(i=i)}) AS f{i})" for i in range(len(words_)))
    query = text(f"SELECT (SELECT coalesce(max(id), 0) FROM messages), {counts}").bindparams(cap=FREQUENCY_CAP, **params)
    row = (await conn.execute(query)).one()
    return max(1, int(row[0])), {stem(w): int(n) for w, n in zip(words_, row[1:], strict=True)}


def _tsquery_word(term: str) -> str:
    """A word as one to_tsquery operand: quoted, so nothing in it is read as an operator."""
    return "'" + term.replace("'", "''").replace("\\", "\\\\") + "'"


async def newest(
    conn: AsyncConnection, terms: Sequence[str], scope: Scope, limit: int, offset: int
) -> list[int]:
    """The messages whose own words match, newest first: a listing by time shows what was said,
    never a reply that only follows a matching message."""
    query = _own_matching(conn, terms, scope, messages.c.id)
    query = query.order_by(messages.c.sent_at.desc(), messages.c.id.desc()).limit(limit).offset(offset)
    return [r.id for r in await conn.execute(query)]


async def count_period(conn: AsyncConnection, scope: Scope) -> int:
    query = select(func.count()).select_from(messages).where(_scope_filter(scope))
    return int((await conn.execute(query)).scalar_one())


async def period(conn: AsyncConnection, scope: Scope, newest_first: bool, limit: int, offset: int) -> list[int]:
    """A period's messages in time order (oldest first unless ``newest_first``)."""
    keys = (messages.c.sent_at.desc(), messages.c.id.desc()) if newest_first else (messages.c.sent_at, messages.c.id)
    query = select(messages.c.id).where(_scope_filter(scope)).order_by(*keys).limit(limit).offset(offset)
    return [r.id for r in await conn.execute(query)]


RELATED_CANDIDATES = 60


async def related(conn: AsyncConnection, thread_id: int, request: str, older_than: int, count: int) -> list[StoredMessage]:
    """Up to ``count`` owner messages with id below ``older_than`` sharing the most words, oldest first.

    Candidates come from history_search's own index, by a message's own words only (the
    text column on SQLite, weight A on PostgreSQL), not its neighbours'; core.history.related
    orders them with the words' document frequencies (one more statement, only when more
    than ``count`` match). Card titles and messages with a secret never come.
    """
    terms = query_terms(request)
    if not terms.terms:
        return []
    base = and_(
        messages.c.role == "owner", messages.c.id < older_than,
        messages.c.card_title.is_(False), messages.c.secret.is_(False),
    )
    if conn.dialect.name == "sqlite":
        own_score = -func.bm25(literal_column("search_fts"), 1.0, 0.0)
        query = (
            select(messages, own_score.label("score"))
            .select_from(_fts.join(messages, messages.c.id == _fts.c.rowid))
            .where(text("search_fts MATCH :m").bindparams(m=fts5_match(terms.terms, own_words=True)), base,
                   literal_column("+messages.thread_id") == thread_id)
        )
    else:
        tsq = _tsquery_own(terms.terms)
        vector: ColumnElement[Any] = literal_column("messages.search_tsv")
        query = select(messages, func.ts_rank_cd(vector, tsq).label("score")).where(
            vector.op("@@")(tsq), base, messages.c.thread_id == thread_id)
    query = query.order_by(literal_column("score").desc(), messages.c.id.desc()).limit(RELATED_CANDIDATES)
    found = [stored_message(r) for r in await conn.execute(query)]
    if len(found) <= count:  # each is shown: no order to choose
        return sorted(found, key=lambda m: m.id)
    return closest(request, found, count)


class KeywordMatcher:
    """The database's full-text index as a Matcher (core.ports.Matcher)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._reads = for_reads(engine)  # reads only: on PostgreSQL in autocommit, never for writes

    async def count_matches(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int:
        async with self._reads.connect() as conn:
            return await count_matches(conn, terms, scope, own_words)

    async def ranked(self, terms: Sequence[str], scope: Scope, limit: int, offset: int = 0) -> list[Hit]:
        async with self._reads.connect() as conn:
            return await ranked(conn, terms, scope, limit, offset)

    async def ranked_and_counted(self, terms: Sequence[str], scope: Scope, limit: int) -> tuple[list[Hit], int]:
        async with self._reads.connect() as conn:
            return await ranked(conn, terms, scope, limit, 0), await count_matches(conn, terms, scope)

    async def newest(self, terms: Sequence[str], scope: Scope, limit: int, offset: int) -> list[int]:
        async with self._reads.connect() as conn:
            return await newest(conn, terms, scope, limit, offset)

    async def which_match(self, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]:
        async with self._reads.connect() as conn:
            return await which_match(conn, terms, scope, ids)

    async def frequencies(self, terms: Sequence[str], thread_id: int) -> tuple[int, dict[str, int]]:
        """The whole database's (FTS5's and tsvector's statistics are not kept per thread)."""
        async with self._reads.connect() as conn:
            return await frequencies(conn, terms)
