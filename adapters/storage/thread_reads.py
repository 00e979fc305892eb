"""What a search reads of a thread besides its matches (core.ports.Conversation): the current
thread and snapshot, a message's neighbours, the window around one, the rows a page of results
shows; and, through the full-text queries of adapters.storage.keyword_matcher, periods and
related older messages.

The same statements serve SQLite and PostgreSQL, except the rows a page shows, which
PostgreSQL gets in a form its plan cache keeps (``_SHOWN_POSTGRESQL``). Those a search runs
every time are built once (building a SQLAlchemy statement costs more than running it) with
the ids bound. The reads run on ``for_reads``: on PostgreSQL one round trip each, not three.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import and_, bindparam, func, select, text, union_all
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage import keyword_matcher
from adapters.storage.database import for_reads
from adapters.storage.message_store import stored_messages
from adapters.storage.schema import messages, threads
from core.history.scope import Scope
from core.message import StoredMessage


@lru_cache(maxsize=1)
def _current_query() -> Any:
    last = select(func.coalesce(func.max(messages.c.id), 0)).where(messages.c.thread_id == threads.c.id)
    return select(threads.c.id, last.scalar_subquery().label("last")).where(
        and_(threads.c.owner_id == bindparam("owner"), threads.c.ended_at.is_(None)))


async def current(conn: AsyncConnection, owner_id: int) -> tuple[int, int] | None:
    """The owner's active thread and its last message id (0 when empty); None before the first."""
    found = (await conn.execute(_current_query(), {"owner": owner_id})).first()
    return None if found is None else (int(found.id), int(found.last))


def _step(anchor: Any, later: bool, skip: int) -> Any:
    """The id of the message ``skip + 1`` places before or after ``anchor`` in the thread."""
    other = messages.alias()
    direction = other.c.id > anchor if later else other.c.id < anchor
    ordering = other.c.id if later else other.c.id.desc()
    return (
        select(other.c.id)
        .where(and_(other.c.thread_id == bindparam("thread"), other.c.role != "tool", direction))
        .order_by(ordering)
        .limit(1)
        .offset(skip)
        .scalar_subquery()
    )


@lru_cache(maxsize=8)
def _neighbours_query(reach: int) -> Any:
    """Built once per reach (building it costs more than running it); ids and thread are bound."""
    steps = [_step(messages.c.id, False, skip).label(f"b{skip}") for skip in reversed(range(reach))]
    steps += [_step(messages.c.id, True, skip).label(f"a{skip}") for skip in range(reach)]
    return select(messages.c.id, *steps).where(messages.c.id.in_(bindparam("ids", expanding=True)))


async def neighbours(
    conn: AsyncConnection, thread_id: int, ids: Sequence[int], reach: int
) -> dict[int, tuple[int | None, ...]]:
    """For each id, the ids ``reach`` places before it and after it in the thread.

    The tuple is (before_reach, …, before_1, after_1, …, after_reach); None past either end.
    """
    if not ids:
        return {}
    rows = await conn.execute(_neighbours_query(reach), {"thread": thread_id, "ids": list(ids)})
    return {row[0]: tuple(row[1:]) for row in rows}


@lru_cache(maxsize=1)
def _shown_query() -> Any:
    """The messages asked for and the one before and after each (``thread`` and ``ids`` bound)."""
    near = _neighbours_query(1).subquery()
    wanted: Any = bindparam("ids", expanding=True)
    # one list of ids, then the rows by primary key: PostgreSQL plans ``id IN (…) OR id IN
    # (subquery) OR …`` as a scan of every message (160 ms at a million), a union as lookups
    every = union_all(select(messages.c.id.label("id")).where(messages.c.id.in_(wanted)),
                      select(near.c.b0.label("id")), select(near.c.a0.label("id"))).subquery()
    return select(messages).where(messages.c.id.in_(select(every.c.id)))


# PostgreSQL's own form of the same: the ids as one array and each neighbour found once, with
# literal limits, so the prepared statement gets a generic plan after its first five runs and
# is no longer planned each time (planning cost as much as running it: 0.43 + 0.47 ms). The
# union above re-plans the neighbour subqueries for each branch, with bound LIMITs.
_SHOWN_POSTGRESQL = text(
    f"""SELECT {", ".join(f"m.{c.name}" for c in messages.columns)} FROM messages m WHERE m.id IN (
      SELECT unnest(ARRAY[w.id,
        (SELECT p.id FROM messages p WHERE p.thread_id = :thread AND p.role != 'tool' AND p.id < w.id
         ORDER BY p.id DESC LIMIT 1),
        (SELECT n.id FROM messages n WHERE n.thread_id = :thread AND n.role != 'tool' AND n.id > w.id
         ORDER BY n.id LIMIT 1)])
      FROM messages w WHERE w.id = ANY(:ids))"""
).columns(*messages.columns)


async def shown(
    conn: AsyncConnection, thread_id: int, ids: Sequence[int]
) -> tuple[dict[int, StoredMessage], dict[int, tuple[int | None, int | None]]]:
    """The messages ``ids`` with their neighbours in the thread, in one statement.

    Each one's neighbours are among the rows read, and no message of the thread lies
    between an id and its neighbour, so the nearest thread row read on either side of it
    is that neighbour (None past either end).
    """
    if not ids:
        return {}, {}
    query = _SHOWN_POSTGRESQL if conn.dialect.name == "postgresql" else _shown_query()
    rows = await conn.execute(query, {"thread": thread_id, "ids": list(ids)})
    found = {message.id: message for message in stored_messages(rows)}
    line = sorted(i for i, m in found.items() if m.thread_id == thread_id and m.role.value != "tool")
    near: dict[int, tuple[int | None, int | None]] = {}
    for message_id in ids:
        at = bisect_left(line, message_id)
        after = at + 1 if at < len(line) and line[at] == message_id else at
        near[message_id] = (line[at - 1] if at > 0 else None, line[after] if after < len(line) else None)
    return found, near


async def window(conn: AsyncConnection, thread_id: int, message_id: int, each_side: int) -> list[int]:
    """The message and up to ``each_side`` messages on either side, in thread order."""
    base = and_(messages.c.thread_id == thread_id, messages.c.role != "tool")
    earlier = select(messages.c.id).where(base, messages.c.id < message_id).order_by(messages.c.id.desc()).limit(each_side)
    later = select(messages.c.id).where(base, messages.c.id > message_id).order_by(messages.c.id).limit(each_side)
    found = [r.id for r in await conn.execute(earlier)] + [r.id for r in await conn.execute(later)]
    return sorted([*found, message_id])



class ThreadReads:
    """The conversation port (core.ports.Conversation) on the database."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._reads = for_reads(engine)  # reads only: on PostgreSQL in autocommit, never for writes

    async def current(self, owner_id: int) -> tuple[int, int] | None:
        async with self._reads.connect() as conn:
            return await current(conn, owner_id)

    async def neighbours(self, thread_id: int, ids: Sequence[int], reach: int) -> dict[int, tuple[int | None, ...]]:
        async with self._reads.connect() as conn:
            return await neighbours(conn, thread_id, ids, reach)

    async def shown(
        self, thread_id: int, ids: Sequence[int]
    ) -> tuple[dict[int, StoredMessage], dict[int, tuple[int | None, int | None]]]:
        async with self._reads.connect() as conn:
            return await shown(conn, thread_id, ids)

    async def window(self, thread_id: int, message_id: int, each_side: int) -> list[int]:
        async with self._reads.connect() as conn:
            return await window(conn, thread_id, message_id, each_side)

    async def count_period(self, scope: Scope) -> int:
        async with self._reads.connect() as conn:
            return await keyword_matcher.count_period(conn, scope)

    async def period(self, scope: Scope, newest_first: bool, limit: int, offset: int) -> list[int]:
        async with self._reads.connect() as conn:
            return await keyword_matcher.period(conn, scope, newest_first, limit, offset)

    async def related(self, thread_id: int, request: str, older_than: int, count: int) -> list[StoredMessage]:
        async with self._reads.connect() as conn:
            return await keyword_matcher.related(conn, thread_id, request, older_than, count)


_TAIL = text(
    """SELECT m.id, m.role, m.text, m.sent_at, coalesce((SELECT p.text FROM messages p
        WHERE p.thread_id = m.thread_id AND p.id < m.id AND p.role != 'tool'
        ORDER BY p.id DESC LIMIT 1), '') AS context,
      (SELECT max(b.id) FROM messages b WHERE b.thread_id = :thread AND b.id <= :after AND b.role != 'tool') AS before
    FROM messages m WHERE m.thread_id = :thread AND m.id > :after AND m.id <= :upto AND m.role != 'tool'
    ORDER BY m.id LIMIT :limit"""
)


async def tail(engine: AsyncEngine, thread_id: int, after: int, upto: int, limit: int) -> tuple[list[Any], int | None]:
    """At most ``limit`` of the thread's messages in (after, upto], each with the text before
    it, and the id of the thread's last message at or before ``after`` (None: there is none).
    The derived index answers up to ``after``; these it has not indexed yet (adapters.storage.search_index.unindexed)."""
    async with engine.connect() as conn:
        rows = (await conn.execute(_TAIL, {"thread": thread_id, "after": after, "upto": upto, "limit": limit})).all()
    before = rows[0].before if rows else None
    return list(rows), None if before is None else int(before)
