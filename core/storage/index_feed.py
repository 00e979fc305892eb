"""The statements that feed the derived search index (core.history.derived) from the messages table.

Kept with the storage code so the SQL lives in one layer: the rows to index in id order with
each one's context (the message before it in its thread), and the rows the index is checked
against before it is trusted.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# the next rows to index, each with the text of the message before it in its thread
GAP = text(
    """SELECT m.id, m.owner_id, m.thread_id, m.role, m.text, m.sent_at, coalesce((SELECT p.text FROM messages p
        WHERE p.thread_id = m.thread_id AND p.id < m.id AND p.role != 'tool'
        ORDER BY p.id DESC LIMIT 1), '') AS context
    FROM messages m WHERE m.id > :after AND m.id <= :upto AND m.role != 'tool' ORDER BY m.id LIMIT :batch"""
)
# the database's identity and the row the index holds last, in one round trip (no row: NULLs)
INSTANCE_AND_ROW = text("""SELECT (SELECT value FROM nod_meta WHERE key = 'instance') AS instance,
    m.id, m.owner_id, m.thread_id, m.role, m.text, m.sent_at
    FROM (SELECT 1 AS one) AS here LEFT JOIN messages m ON m.id = :id""")
# the same and the owner's active thread with its last message id (as thread_reads.current),
# for a search, which needs both before anything else: one round trip instead of two
INSTANCE_ROW_AND_CURRENT = text("""SELECT (SELECT value FROM nod_meta WHERE key = 'instance') AS instance,
    m.id, m.owner_id, m.thread_id, m.role, m.text, m.sent_at, t.id AS current_thread,
    (SELECT coalesce(max(x.id), 0) FROM messages x WHERE x.thread_id = t.id) AS current_last
    FROM (SELECT 1 AS one) AS here LEFT JOIN messages m ON m.id = :id
    LEFT JOIN threads t ON t.owner_id = :owner AND t.ended_at IS NULL""")
AT_OR_AFTER = text("""SELECT id, owner_id, thread_id, role, text, sent_at FROM messages
    WHERE id >= :id AND id <= :upto AND role != 'tool' ORDER BY id LIMIT 1""")


async def sample(conn: AsyncConnection, mark: int, size: int) -> list[Any]:
    """The first indexable row at or after each of ``size`` ids spread up to ``mark``: rows
    over the whole index to check it against (a restored backup replaces some of them)."""
    step = max(mark // size, 1)
    rows = []
    for target in sorted({min(mark, 1 + n * step) for n in range(size)}):
        found = (await conn.execute(AT_OR_AFTER, {"id": target, "upto": mark})).first()
        if found is not None:
            rows.append(found)
    return rows
