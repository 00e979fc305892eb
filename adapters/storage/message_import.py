"""Storing a long history in order, with Python's work and SQLite's overlapped.

Each batch is inserted (its own transaction, in file order) while the next is read and its
rows are prepared, so an import takes about the longer of the two instead of their sum; a
bad line stores nothing after the batch in flight. A line without an id is keyed by its time,
then its hash, so a re-run stores nothing twice. Measurements and the old keys: docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

from adapters.storage.message_rows import row_values
from adapters.storage.message_store import MessageStore
from core.message import Message

LINE_KEY_PREFIX = "line "
LEGACY_KEY_PREFIX = "sha1:"  # how versions before 2026-12 keyed a line without an id


def _digest(line: str) -> str:
    return hashlib.sha1(line.strip().encode()).hexdigest()


def line_key(line: str, sent_at: datetime) -> str:
    """The external id of an imported line that has none: its time, then its SHA-1.

    ``sent_at`` as the line wrote it: a time with a zone is keyed in UTC, one without as
    written. Stable for the same line whatever the owner's zone (a re-import skips it),
    and in file order for a file in time order.
    """
    try:
        moment = sent_at.astimezone(UTC) if sent_at.tzinfo is not None else sent_at
        when = moment.isoformat(" ", "microseconds")[:26]
    except (OverflowError, ValueError):  # year 1 east of UTC: no such UTC time; storing it is refused anyway
        when = "out of range"
    return f"{LINE_KEY_PREFIX}{when} {_digest(line)}"


def legacy_line_key(line: str) -> str:
    """The key an earlier version gave the same line (looked up, never written)."""
    return LEGACY_KEY_PREFIX + _digest(line)


async def append_in_order(store: MessageStore, owner_id: int, batches: AsyncIterator[Sequence[Message]]) -> int:
    """Store ``batches`` in the owner's active thread, in order; how many messages were new."""
    added = 0
    inserting: asyncio.Task[int] | None = None
    try:
        async for batch in batches:  # read while the batch before is in SQLite's thread
            thread_id = await store.active_thread(owner_id)  # each batch: a /reset meanwhile moves the rest
            rows = store.prepare_rows([row_values(m, thread_id) for m in batch])  # likewise, bound too
            if inserting is not None:
                done, inserting = inserting, None
                added += await done
            inserting = asyncio.create_task(store.insert_rows(owner_id, rows))
            await asyncio.sleep(0)  # it prepares its statement and hands it to SQLite's thread
    finally:
        if inserting is not None:  # reading failed: the batch in flight still commits, whole
            added += await inserting
    return added
