"""The six older owner messages that share the most words with a request.

Before a turn started by an owner message, the context gets a few of the owner's own
earlier messages, from outside the recent turns, that share words with the request, so
that "book the same place as last time" arrives with last time. Candidates come from the
owner-only full-text index (the message's own words, not its neighbours'); they are
ordered by how many distinct words of the request they share, then by relevance, then
newest first. Card titles (Nod's wording) and messages holding a secret are never
offered.
"""

from __future__ import annotations

from sqlalchemy import and_, column, func, literal_column, select, table, text
from sqlalchemy.ext.asyncio import AsyncEngine

from core.history.engine import fts5_match, tsquery_any
from core.storage.messages import MessageStore, StoredMessage
from core.storage.schema import messages
from core.text import query_terms, stems

RELATED_COUNT = 6
_CANDIDATES = 60
_owner_fts = table("messages_fts", column("rowid"), column("rank"))


async def related_messages(
    engine: AsyncEngine, store: MessageStore, thread_id: int, request: str, older_than: int,
    count: int = RELATED_COUNT,
) -> list[StoredMessage]:
    """Up to ``count`` owner messages with id below ``older_than``, oldest first."""
    terms = query_terms(request)
    if not terms.terms:
        return []
    base = and_(
        messages.c.thread_id == thread_id, messages.c.role == "owner", messages.c.id < older_than,
        messages.c.card_title.is_(False), messages.c.secret.is_(False),
    )
    async with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            query = (
                select(messages.c.id, (-_owner_fts.c.rank).label("score"))
                .select_from(_owner_fts.join(messages, messages.c.id == _owner_fts.c.rowid))
                .where(text("messages_fts MATCH :m").bindparams(m=fts5_match(terms.terms)), base)
            )
        else:
            tsq = tsquery_any(terms.terms)
            vector = literal_column("messages.text_tsv")
            query = select(messages.c.id, func.ts_rank_cd(vector, tsq).label("score")).where(vector.op("@@")(tsq), base)
        rows = (await conn.execute(query.order_by(literal_column("score").desc(), messages.c.id.desc()).limit(_CANDIDATES))).all()
    found = await store.get_many(r.id for r in rows)
    score = {r.id: float(r.score) for r in rows}
    wanted = terms.stems
    best = sorted(found.values(), key=lambda m: (-len(wanted & stems(m.text)), -score[m.id], -m.id))[:count]
    return sorted(best, key=lambda m: m.id)
