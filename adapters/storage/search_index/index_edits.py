"""The derived index following edits: a message's new words replace its document, and its successor's context.

Messages are appended in id order, which the catch-up follows; an edit changes a row the
index already holds. Each edit leaves a ``message_versions`` row (adapters.storage.message_edits),
with ids that, like messages', never commit behind the settled horizon (the same fence
lock), so the index follows them by id too: the marker records the newest edit it holds
the words of (``IndexDirectory.edits``), written after tantivy's commit. Re-applying an
edit is harmless — each touched document is made again from the row as it is now, at its
old place — so a crash between the commit and the marker costs only repeating it.

The check before a search (adapters.storage.search_index.index_check) reads the newest edit with the row
it compares: a pending edit is followed first, where this process writes the index, so
an edited row never reads as another database and starts a rebuild; a process that only
reads lets the database answer until the writer has followed it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import fence, index_feed
from adapters.storage.search_index.documents import document_of
from adapters.storage.search_index.index_directory import IndexDirectory
from adapters.storage.search_index.index_reads import IndexReads, guarded

log = logging.getLogger("nod.history.index")


class IndexEdits(IndexReads):
    """Following edits; the index's life (adapters.storage.search_index.derived) provides the state and the writer."""

    _engine: AsyncEngine
    _place: IndexDirectory
    _watermark: int
    _lock: asyncio.Lock
    _writer: Any | None
    _edits_known = 0  # the newest edit this process saw the index hold: a search with none newer reads no file

    def _acquire_writer(self) -> Any | None:
        raise NotImplementedError

    async def edits_followed(self, newest: int) -> bool:
        """Whether the index holds the words of every edit up to ``newest`` (following them now when it can)."""
        if newest <= self._edits_known:
            return True
        if self._acquire_writer() is not None:
            async with self._lock:
                await self._follow_edits()
        self._edits_known = self._place.edits()  # another process writing the index may have followed them
        return self._edits_known >= newest

    def _forget_edits(self) -> None:
        """The index was emptied: it holds no edit's words until it follows them again."""
        self._edits_known = 0

    async def _follow_edits(self) -> None:
        """Remake the documents edits changed since the marker (the caller holds the lock and the writer)."""
        done = self._place.edits()
        horizon = await fence.settled(self._engine, edits=True)
        if horizon is None or horizon <= done:  # an edit in flight: the next search follows it
            return
        async with self._engine.connect() as conn:
            rows = (await conn.execute(index_feed.EDITED, {"after": done, "upto": horizon, "mark": self._watermark})).all()
        if rows:
            await asyncio.to_thread(guarded, partial(self._remade, rows))
        self._place.mark_edits(horizon)
        log.info("search_index_followed_edits documents=%s edits=%s", len(rows), horizon)

    def _remade(self, rows: Sequence[Any]) -> None:
        writer = self._writer
        assert writer is not None
        try:
            for row in rows:
                seq = self.field_at(int(row.id), "seq")
                if seq is None:  # not indexed (yet): the catch-up indexes its words as they are
                    continue
                writer.delete_documents_by_term("id", int(row.id))
                writer.add_document(document_of(row, seq))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        self._opened().reload()
