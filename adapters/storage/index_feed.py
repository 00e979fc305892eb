"""The statements that feed the derived search index (adapters.storage.search_index.derived) from the messages table.

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
    (SELECT coalesce(max(v.id), 0) FROM message_versions v) AS edits, m.id, m.owner_id, m.thread_id, m.role, m.text, m.sent_at
    FROM (SELECT 1 AS one) AS here LEFT JOIN messages m ON m.id = :id""")
# the same and the owner's active thread with its last message id (as thread_reads.current),
# for a search, which needs both before anything else: one round trip instead of two
INSTANCE_ROW_AND_CURRENT = text("""SELECT (SELECT value FROM nod_meta WHERE key = 'instance') AS instance,
    (SELECT coalesce(max(v.id), 0) FROM message_versions v) AS edits,
    m.id, m.owner_id, m.thread_id, m.role, m.text, m.sent_at, t.id AS current_thread,
    (SELECT coalesce(max(x.id), 0) FROM messages x WHERE x.thread_id = t.id) AS current_last
    FROM (SELECT 1 AS one) AS here LEFT JOIN messages m ON m.id = :id
    LEFT JOIN threads t ON t.owner_id = :owner AND t.ended_at IS NULL""")
# the messages whose document an edit changed, up to the index's watermark: each edited one (its own
# words) and the next in its thread (whose context they are), with their context as GAP reads it
EDITED = text(
    """WITH edited AS (SELECT DISTINCT message_id AS id FROM message_versions WHERE id > :after AND id <= :upto),
    touched AS (SELECT e.id FROM edited e UNION SELECT (SELECT n.id FROM messages n JOIN messages m
        ON n.thread_id = m.thread_id WHERE m.id = e.id AND n.id > m.id AND n.role != 'tool' ORDER BY n.id LIMIT 1)
        FROM edited e)
    SELECT m.id, m.owner_id, m.thread_id, m.role, m.text, m.sent_at, coalesce((SELECT p.text FROM messages p
        WHERE p.thread_id = m.thread_id AND p.id < m.id AND p.role != 'tool'
        ORDER BY p.id DESC LIMIT 1), '') AS context
    FROM messages m WHERE m.id IN (SELECT id FROM touched) AND m.id <= :mark AND m.role != 'tool' ORDER BY m.id"""
)
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
