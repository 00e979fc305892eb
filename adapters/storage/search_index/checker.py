"""The derived index's check before a search: built from this database, as the database is now.

The index is never trusted: before every search the row at its watermark is read from the
database and compared with the digest the index keeps of it (and, once a minute, rows
spread over the whole index), and the marker must name this database. A restored backup,
another file or a replaced database fails and the index is rebuilt (or, where this
process may not write it, not used). The same statement reads the owner's active thread,
which a search needs first anyway. A pending edit is followed first where this process
writes the index, so an edited row never reads as another database.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import index_feed, thread_reads
from adapters.storage.search_index.documents import row_digest
from adapters.storage.search_index.index_state import IndexState, guarded
from adapters.storage.search_index.reader import IndexReader
from adapters.storage.search_index.writer import IndexWriter
from core.errors import IndexFailure

log = logging.getLogger("nod.history.index")
SAMPLE_SIZE = 16
SAMPLE_EVERY_S = 60.0


@dataclass(frozen=True)
class _Check:
    """What the check before a search read: at which watermark (and rebuild), the database's
    identity, its row at that mark, a wider sample when due, and the owner's current thread."""

    mark: int
    rebuilds: int
    instance: str | None
    edits: int  # the newest edit (message_versions id) the database holds
    row: Any
    sample: list[Any] | None
    current: tuple[int, int] | None


class IndexChecker:
    """Whether the index may answer: checked against the database, rebuilt (by the writer) when it differs."""

    def __init__(self, state: IndexState, reader: IndexReader, writer: IndexWriter, reads: AsyncEngine) -> None:
        self._state = state
        self._reader = reader
        self._writer = writer
        self._reads = reads  # the engine for reads (adapters.storage.database.for_reads)
        self._rebuilds = 0  # two searches that both find the database changed rebuild once
        self._sampled_at = -SAMPLE_EVERY_S  # the first check in a process samples

    async def usable(self) -> bool:
        """Opened, and built from this database as it is now (rebuilt here when not)."""
        return (await self.usable_and_current(None))[0]

    async def usable_and_current(self, owner_id: int | None) -> tuple[bool, tuple[int, int] | None]:
        """``usable``, and given an owner, their active thread and its last message id (as
        the database's ``current``), read in the check's own statement: a search needs both
        before anything else, and one round trip costs half of two (0.30 against 0.70 ms)."""
        check: _Check | None = None
        try:
            self._state.opened()
            check = await self._read_check(owner_id)
            return await self.verified(check), check.current
        except IndexFailure:  # a directory that is not Nod's, or tantivy failed (logged): the database answers
            pass
        except (OSError, ValueError) as exc:  # an unusable directory: the database's own index answers
            log.warning("search_index_unavailable error=%s", type(exc).__name__)
        if check is not None or owner_id is None:
            return False, check.current if check is not None else None
        async with self._reads.connect() as conn:
            return False, await thread_reads.current(conn, owner_id)

    async def _read_check(self, owner_id: int | None) -> _Check:
        # the watermark as it was when read: a background catch-up may move it during the awaits,
        # and comparing the row read at one mark with the index's at another reads as a changed database
        mark, rebuilds = self._state.watermark, self._rebuilds
        async with self._reads.connect() as conn:
            if owner_id is None:
                found = (await conn.execute(index_feed.INSTANCE_AND_ROW, {"id": mark})).one()
            else:
                found = (await conn.execute(index_feed.INSTANCE_ROW_AND_CURRENT, {"id": mark, "owner": owner_id})).one()
            sample = await index_feed.sample(conn, mark, SAMPLE_SIZE) if self._sample_due() else None
        current = None
        if owner_id is not None and found.current_thread is not None:
            current = (int(found.current_thread), int(found.current_last))
        return _Check(mark, rebuilds, found.instance, int(found.edits or 0), found if mark and found.id is not None else None,
                      sample, current)

    async def verified(self, check: _Check | None = None) -> bool:
        """True when the index belongs to the database as it is now; rebuilds it when not."""
        if check is None:
            check = await self._read_check(None)
        mark, rebuilds, instance, row, sample = check.mark, check.rebuilds, check.instance, check.row, check.sample
        state = self._state
        if state.database == instance and not await self._writer.edits_followed(check.edits):
            return False  # an edit this process may not write in yet: the database answers, nothing is rebuilt
        if state.database == instance and self._holds(row, mark) and (sample is None or self._holds_all(sample)):
            return True
        if state.closing.is_set():  # shutting down: nothing to report, the next process checks again
            return False
        if not self._writer.acquire():  # another process writes it: re-read what it did, answer from the database
            state.database = state.directory.bound_to()
            state.watermark = await asyncio.to_thread(guarded, state.indexed_max)
            log.info("search_index_not_used reason=%s", "unbound" if state.database is None else "mismatch")
            return False
        if state.database is None and not state.watermark:  # a new index: bind it to this database
            state.database = instance
            state.directory.mark(instance)
            return True
        reason = "another database" if state.database != instance else "the database changed"
        async with state.lock:
            if self._rebuilds == rebuilds:  # not already rebuilt by a search that saw the same
                log.warning("search_index_rebuild reason=%s dir=%s", reason, state.directory.path)
                await asyncio.to_thread(guarded, self._writer.clear)
                self._rebuilds += 1
                state.database = instance
                state.directory.mark(instance)
        return True

    def _sample_due(self) -> bool:
        """A wider check — rows spread over the whole index — at first use and every minute."""
        now = time.monotonic()
        if self._state.watermark and now - self._sampled_at >= SAMPLE_EVERY_S:
            self._sampled_at = now
            return True
        return False

    def _holds_all(self, rows: list[Any]) -> bool:
        """Each sampled row is in the index with its digest (one restored backup replaced none of them)."""
        return all(row_digest(row) == guarded(partial(self._reader.field_at, int(row.id), "digest")) for row in rows)

    def _holds(self, row: Any, mark: int) -> bool:
        """The message at ``mark`` (the last the index held) is in the database, unchanged
        (trivially so when empty)."""
        if not mark:
            return True
        return row is not None and row_digest(row) == guarded(lambda: self._reader.field_at(mark, "digest"))
