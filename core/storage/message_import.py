"""Storing a long history in order, with Python's work and SQLite's overlapped.

An import is three kinds of work per batch: reading and parsing lines (the caller's
batches), preparing rows (a secret check per message, SQLAlchemy's parameters) and
SQLite inserting them, with its search trigger. Python's parts share one interpreter
lock; SQLite's runs without it, in the connection's thread. Done one after another, as
``append_many`` does, a million messages took the sum of the three. Here each batch is
inserted (its own transaction, in file order) while the next batch is read and its rows
are prepared, so an import takes about the longer of the two instead of their sum.

Batches stay in order and one at a time in the database: a batch's transaction begins
only after the one before it committed. When reading fails (a bad line), the batch being
inserted still commits and nothing after it is stored: what came before the bad line is
kept whole, batch by batch, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from core.message import NewMessage
from core.storage.message_rows import row_values
from core.storage.message_store import MessageStore


async def append_in_order(store: MessageStore, owner_id: int, batches: AsyncIterator[Sequence[NewMessage]]) -> int:
    """Store ``batches`` in the owner's active thread, in order; how many messages were new."""
    added = 0
    inserting: asyncio.Task[int] | None = None
    try:
        async for batch in batches:  # read while the batch before is in SQLite's thread
            thread_id = await store.active_thread(owner_id)  # each batch: a /reset meanwhile moves the rest
            rows = [row_values(m, thread_id) for m in batch]  # likewise
            if inserting is not None:
                done, inserting = inserting, None
                added += await done
            inserting = asyncio.create_task(store.insert_rows(owner_id, rows))
            await asyncio.sleep(0)  # it prepares its statement and hands it to SQLite's thread
    finally:
        if inserting is not None:  # reading failed: the batch in flight still commits, whole
            added += await inserting
    return added
