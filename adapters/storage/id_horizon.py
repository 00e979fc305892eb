"""Message ids that will not be overtaken: what lets an index follow the messages table by id.

SQLite has one writer, so messages commit in id order and "every id up to the newest is
here" holds whenever it is read. PostgreSQL takes an id from a sequence when a row is
inserted and makes it visible when its transaction commits: id 100 can become visible
after 101, and an index that caught up to 101 would never see 100.

So on PostgreSQL every transaction that inserts messages first takes a shared
transaction-level advisory lock (``enter``), and ``settled`` takes the same lock
exclusively for a moment, with ``pg_try_advisory_xact_lock``: when it gets it, no insert is
in flight, every id up to the newest committed one is final (later inserts draw larger
ids), and that newest id is the horizon. When inserts are in flight it does not wait: it
answers None and the caller uses the database's own index this time.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

_KEY = 0x4E0D_1D5  # any constant: "messages are being inserted"
_NEWEST = text("SELECT coalesce(max(id), 0) FROM messages")
_NEWEST_EDIT = text("SELECT coalesce(max(id), 0) FROM message_versions")


async def enter(conn: AsyncConnection) -> None:
    """Call first in a transaction that inserts messages (PostgreSQL; nothing on SQLite)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock_shared(:k)"), {"k": _KEY})


async def settled(engine: AsyncEngine, edits: bool = False) -> int | None:
    """The newest message id with no insert still able to take a smaller one; None while one can.
    ``edits``: the same for the versions edits leave (``message_versions``), which take the lock too."""
    newest = _NEWEST_EDIT if edits else _NEWEST
    if engine.dialect.name != "postgresql":
        async with engine.connect() as conn:
            return int((await conn.execute(newest)).scalar_one())
    async with engine.begin() as conn:
        if not (await conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": _KEY})).scalar():
            return None
        return int((await conn.execute(newest)).scalar_one())
