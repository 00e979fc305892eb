"""Writing the derived index: catching up by id, following edits, emptying it for a rebuild, letting go.

One process writes an index (tantivy's writer lock is per directory); elsewhere it is only
read. Messages are added in id order up to the settled horizon (adapters.storage.id_horizon), a
batch whole or not at all, the watermark moving in the commit's own thread after the
searcher reloads: no cancelled await or concurrent check sees a mark the searcher lacks.
Edits are followed by their ``message_versions`` id the same way (docs/search.md). The
caller holds the state's lock around every change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from functools import partial
from typing import Any

import tantivy
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import id_horizon, index_feed
from adapters.storage.search_index.documents import document_of
from adapters.storage.search_index.index_state import IndexState, guarded
from adapters.storage.search_index.reader import IndexReader
from core.errors import IndexFailure

log = logging.getLogger("nod.history.index")
BATCH = 20_000
HEAP_BYTES = 64_000_000


class IndexWriter:
    """tantivy's writer for this process, when it may write, and what it writes."""

    def __init__(self, state: IndexState, reader: IndexReader, engine: AsyncEngine, batch: int = BATCH) -> None:
        self._state = state
        self._reader = reader
        self._engine = engine
        self._batch = batch
        self._tantivy: Any | None = None
        self._tried = False
        self._places: dict[int, int] = {}  # thread → the place its next message takes (``seq``)
        self._edits_known = 0  # the newest edit this process saw the index hold: a search with none newer reads no file

    def acquire(self) -> bool:
        """Whether this process writes the index: it asks for tantivy's lock once; closed, never again."""
        if self._state.closing.is_set():  # closed: the writer lock stays free for the next process
            return self._tantivy is not None
        if not self._tried:
            self._tried = True
            try:
                self._tantivy = self._state.opened().writer(heap_size=HEAP_BYTES, num_threads=1)
            except ValueError as exc:  # another process holds the lock: read-only here
                log.info("search_index_read_only reason=%s", exc)
        return self._tantivy is not None

    async def release(self) -> None:
        """Free tantivy's writer lock for the next process. Never raises: on a shutdown path,
        nod run must still stop its web server and tasks; tantivy failing is logged by guarded
        and the lock goes with the process."""
        if self._tantivy is not None:
            writer, self._tantivy = self._tantivy, None
            with contextlib.suppress(IndexFailure):
                await asyncio.to_thread(guarded, writer.wait_merging_threads)

    async def catch_up(self) -> None:
        """Index every message up to the settled horizon, batch by batch, stopping between
        batches once closing; then follow the edits."""
        horizon = await id_horizon.settled(self._engine)
        if horizon is None:  # inserts in flight: the database answers this time, the next search catches up
            return
        added = 0
        async with self._engine.connect() as conn:
            while not self._state.closing.is_set():
                after = self._state.watermark
                rows = (await conn.execute(index_feed.GAP, {"after": after, "upto": horizon, "batch": self._batch})).all()
                if not rows:
                    break
                await asyncio.to_thread(guarded, partial(self._add, rows))
                added += len(rows)
        if added:
            log.info("search_index_caught_up added=%s watermark=%s", added, self._state.watermark)
        await self._follow_edits()

    def _add(self, rows: Sequence[Any]) -> None:
        writer = self._tantivy
        assert writer is not None  # catching up happens only where this process may write
        try:
            places = self._write(writer, rows)
        except BaseException:
            writer.rollback()  # nothing half-added stays behind; the watermark did not move
            raise
        # moved here, in the thread, as the commit lands: a cancelled await of this call must not
        # leave a committed batch behind an unmoved watermark (the next catch-up would add it twice).
        # After the reload: a search checking the index meanwhile (on the event loop) reads the
        # watermark's document from the searcher, and one not yet there read as a changed database
        try:
            self._state.opened().reload()
        finally:
            self._state.watermark = int(rows[-1].id)
        self._places.update(places)

    def _next_place(self, thread_id: int) -> int:
        """The place the thread's next message takes: how many of its messages are indexed
        (they are indexed in id order, so that is the count)."""
        if thread_id not in self._places:
            query = tantivy.Query.term_query(self._state.schema, "thread", thread_id)
            self._places[thread_id] = int(self._state.searcher().search(query, 1, count=True).count)
        return self._places[thread_id]

    def _write(self, writer: Any, rows: Sequence[Any]) -> dict[int, int]:
        places: dict[int, int] = {}
        for row in rows:
            thread = int(row.thread_id)
            seq = places.get(thread, self._next_place(thread))
            places[thread] = seq + 1
            self._state.last_indexed[thread] = int(row.id)  # before the commit shows it: a search keeps the filter
            writer.add_document(document_of(row, seq))
        writer.commit()
        return places

    def clear(self) -> None:
        """Empty the index for a rebuild (only where this process writes it)."""
        writer = self._tantivy
        assert writer is not None
        writer.delete_all_documents()
        writer.commit()
        self._state.opened().reload()
        self._state.watermark = 0
        self._places.clear()
        self._state.last_indexed.clear()
        self._edits_known = 0  # it holds no edit's words until it follows them again

    async def edits_followed(self, newest: int) -> bool:
        """Whether the index holds the words of every edit up to ``newest`` (following them now when it can)."""
        if newest <= self._edits_known:
            return True
        if self.acquire():
            async with self._state.lock:
                await self._follow_edits()
        self._edits_known = self._state.directory.edits()  # another process writing the index may have followed them
        return self._edits_known >= newest

    async def _follow_edits(self) -> None:
        """Remake the documents edits changed since the marker (the caller holds the lock and the writer)."""
        done = self._state.directory.edits()
        horizon = await id_horizon.settled(self._engine, edits=True)
        if horizon is None or horizon <= done:  # an edit in flight: the next search follows it
            return
        async with self._engine.connect() as conn:
            rows = (await conn.execute(index_feed.EDITED, {"after": done, "upto": horizon,
                                                           "mark": self._state.watermark})).all()
        if rows:
            await asyncio.to_thread(guarded, partial(self._remade, rows))
        self._state.directory.mark_edits(horizon)
        log.info("search_index_followed_edits documents=%s edits=%s", len(rows), horizon)

    def _remade(self, rows: Sequence[Any]) -> None:
        writer = self._tantivy
        assert writer is not None
        try:
            for row in rows:
                seq = self._reader.field_at(int(row.id), "seq")
                if seq is None:  # not indexed (yet): the catch-up indexes its words as they are
                    continue
                writer.delete_documents_by_term("id", int(row.id))
                writer.add_document(document_of(row, seq))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        self._state.opened().reload()
