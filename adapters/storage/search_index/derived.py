"""A tantivy index derived from the messages table, for fast history_search on both backends.

FTS5 and ``tsvector`` score every match before returning the best ten (~100 ms for a
common word in a million messages); tantivy answers in about a millisecond. The database
stays the only truth: the index lives beside the SQLite file (on PostgreSQL in
``NOD_SEARCH_INDEX_DIR``, one per host), holds nothing that cannot be rebuilt, and is
caught up by id in the background, at most once a second, up to the settled horizon
(``adapters.storage.fence``); a search never waits for that commit: the searched thread's
messages after what the index holds are read from the database (adapters.storage.search_index.tail). A
message's context is fixed when it is written, so a later catch-up gives the same
document (adapters.storage.search_index.documents says what one holds). It is checked before every
search, never trusted: its marker names the database it was built from and each document
carries a digest of its row, so another database or a restored backup is told apart and
the index rebuilt; rows shown are read back from the database within the searched
thread. One process writes (tantivy's lock is per directory); another reads what it wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import tantivy
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import fence, index_feed, thread_reads
from adapters.storage.database import for_reads, sqlite_file
from adapters.storage.search_index.documents import document_of, schema_of_documents
from adapters.storage.search_index.index_check import SAMPLE_EVERY_S, IndexCheck
from adapters.storage.search_index.index_directory import IndexDirectory
from adapters.storage.search_index.index_edits import IndexEdits
from adapters.storage.search_index.index_reads import guarded
from adapters.storage.search_index.tail import TAIL_LIMIT, WithTail, tail_messages
from core.errors import IndexFailure
from core.ports import Matcher

log = logging.getLogger("nod.history.index")
BATCH = 20_000
INLINE_GAP = 2_000  # a longer catch-up runs in the background and the database answers meanwhile
CATCH_UP_EVERY = 1.0  # seconds between background catch-ups: one commit covers what arrived meanwhile


class DerivedIndex(IndexEdits, IndexCheck):
    def __init__(self, directory: Path, engine: AsyncEngine, catch_up_every: float | None = CATCH_UP_EVERY, *,
                 batch: int = BATCH, inline_gap: int = INLINE_GAP, tail_limit: int = TAIL_LIMIT) -> None:
        """``batch``, ``inline_gap`` and ``tail_limit``: the module's sizes, smaller in tests."""
        self._directory = directory
        self._batch = batch
        self._inline_gap = inline_gap
        self._tail_limit = tail_limit
        self._engine = engine
        self._reads = for_reads(engine)
        self._schema = schema_of_documents()
        self._place = IndexDirectory(directory)
        self._index: Any | None = None  # opened on first use: `nod owners list` makes no index directory
        self._database: str | None = None
        self._writer: Any | None = None
        self._writer_tried = False
        self._watermark = 0
        self._lock = asyncio.Lock()
        self._background: asyncio.Task[None] | None = None
        self._inline: set[asyncio.Task[None]] = set()  # a busy thread's catch-ups, kept until done
        self._closing = asyncio.Event()  # set by close(): a catch-up stops between batches, never mid-statement
        self._wake = asyncio.Event()  # a busy thread (or close()) ends a waiting catch-up's pause early
        self._rebuilds = 0  # two searches that both find the database changed rebuild once
        self._every = catch_up_every  # None: only when asked (``warm``, ``ready_for``)
        self._caught_up_at = -(catch_up_every or 0.0)
        self._sampled_at = -SAMPLE_EVERY_S  # the first check in a process samples
        self._places: dict[int, int] = {}  # thread → the place its next message takes (``seq``)
        self._last_indexed: dict[int, int] = {}  # see IndexReads: set before each commit, emptied with the index

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def watermark(self) -> int:
        """The highest message id indexed."""
        self._opened()
        return self._watermark

    def _opened(self) -> Any:
        if self._index is None:
            self._index = self._place.open(self._schema)
            self._database = self._place.bound_to()
            self._watermark = self._indexed_max()
        return self._index

    @classmethod
    def beside(cls, database_url: str, engine: AsyncEngine, directory: Path | None = None) -> DerivedIndex | None:
        """The index next to a SQLite file (``nod.db`` → ``nod.db.search/``), or in ``directory``
        for PostgreSQL (``NOD_SEARCH_INDEX_DIR``, one per host); None without either."""
        path = sqlite_file(database_url)
        if path is not None:
            return cls(path.with_name(path.name + ".search"), engine)
        if directory is not None and engine.dialect.name == "postgresql":
            return cls(directory, engine)
        return None

    def _indexed_max(self) -> int:
        self._opened().reload()
        searcher = self._opened().searcher()
        found = searcher.search(tantivy.Query.all_query(), 1, count=False, order_by_field="id")
        return int(found.hits[0][0]) if found.hits else 0

    def _acquire_writer(self) -> Any | None:
        if self._closing.is_set():  # closed: the writer lock stays free for the next process
            return self._writer
        if not self._writer_tried:
            self._writer_tried = True
            try:
                self._writer = self._opened().writer(heap_size=64_000_000, num_threads=1)
            except ValueError as exc:  # another process holds the lock: read-only here
                log.info("search_index_read_only reason=%s", exc)
        return self._writer

    async def view(
        self, thread_id: int, snapshot: int, split: int | None = None, checked: bool = False
    ) -> tuple[Matcher, int] | None:
        """What answers a search of ``thread_id`` up to ``snapshot``, and the split to keep in
        its cursors: the index up to the id it holds (or the cursor's ``split``) and the
        thread's newer messages from the database (adapters.storage.search_index.tail); None when the
        database's own index must answer. Waits for a commit only when the thread has more
        unindexed messages than the tail holds; otherwise a catch-up starts in the background.
        ``checked``: the caller has just had True from ``usable`` (it ran beside another read).
        """
        if not checked and not await self.usable():
            return None
        if self._watermark < snapshot:
            self._catch_up_soon()
        if split is not None:  # a later page: the first page's split, whatever the index holds now
            if self._watermark < split <= self._watermark + self._inline_gap:  # another worker answered page one
                await self._catch_up_now()
            return await self._with_tail(thread_id, snapshot, split) if split <= self._watermark else None
        split = min(self._watermark, snapshot)
        answer = await self._with_tail(thread_id, snapshot, split)
        if answer is None and snapshot - self._watermark <= self._inline_gap:
            # a busy thread (several workers appending to it): one commit now (~20 ms at a
            # million) is cheaper than the database's ranking (100-300 ms); an import is not waited for
            await self._catch_up_now()
            answer = await self._with_tail(thread_id, snapshot, min(self._watermark, snapshot))
        return answer

    async def _catch_up_now(self) -> None:
        """Catch up (or, read-only, re-read how far the writer got) before answering: in a task
        of its own, shielded, so a cancelled search (a new message cancels the turn) never cuts
        a commit short, and a background catch-up still sleeping out its pause is not waited for."""
        inline = asyncio.create_task(self._catch_up_locked(), name="search-index-catch-up-inline")
        self._inline.add(inline)
        inline.add_done_callback(self._inline.discard)
        await asyncio.shield(inline)

    async def _with_tail(self, thread_id: int, snapshot: int, split: int) -> tuple[Matcher, int] | None:
        """The index up to ``split`` and the thread's messages after it; None past the tail limit."""
        if split >= snapshot:
            return self, split
        rows, before = await thread_reads.tail(self._reads, thread_id, split, snapshot, self._tail_limit + 1)
        if len(rows) > self._tail_limit:  # too many to match here
            return None
        if len(rows) > self._tail_limit // 2:  # a busy thread: the next catch-up starts now, not at its second
            self._wake.set()
        first_place = guarded(lambda: self.place_after(before)) if rows else 0
        return WithTail(self, split, tail_messages(rows, first_place)), split

    def _catch_up_soon(self) -> None:
        """One background catch-up at a time, at most one per ``catch_up_every`` seconds."""
        if self._every is not None:
            self._catch_up_in_background(later=True)

    async def _catch_up_later(self) -> None:
        wait = self._caught_up_at + (self._every or 0.0) - time.monotonic()
        if wait > 0 and not self._wake.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
        self._wake.clear()
        if self._closing.is_set():  # the next process catches up
            return
        await self._catch_up_locked()
        self._caught_up_at = time.monotonic()

    async def caught_up(self) -> None:
        """Wait for the background catch-up in progress, if any (tests; a bench's first build)."""
        if self._background is not None:
            await asyncio.wait({self._background})

    async def ready_for(self, snapshot: int) -> bool:
        """Whether the index may answer a search up to ``snapshot``, catching up when it can.

        Checked before every search, never assumed: the index must have been built from
        this database, and the message it holds last must still be in it, unchanged. A
        restored, replaced or truncated database fails that test and the index is rebuilt
        (or, in a process that may not write it, not used). A small gap is indexed before
        the search; a large one (a rebuild, a first start) in the background, while the
        database's own index answers. Searches use ``view``, which never waits for this.
        """
        if not await self.usable():
            return False
        try:
            if self._watermark >= snapshot:
                return True
            if self._lock.locked() or snapshot - self._watermark > self._inline_gap:
                self._catch_up_in_background()
                return False
            async with self._lock:
                if self._watermark < snapshot:  # another process may have caught up meanwhile
                    latest = await asyncio.to_thread(guarded, self._indexed_max)
                    self._watermark = max(self._watermark, latest)
                if self._watermark < snapshot and self._acquire_writer() is not None:
                    await self._catch_up()
        except IndexFailure:
            return False
        return self._watermark >= snapshot

    def _clear(self) -> None:
        writer = self._writer
        assert writer is not None  # a rebuild happens only where this process may write
        writer.delete_all_documents()
        writer.commit()
        self._opened().reload()
        self._watermark = 0
        self._places.clear()
        self._last_indexed.clear()
        self._forget_edits()

    def _catch_up_in_background(self, later: bool = False) -> None:
        if not self._closing.is_set() and (self._background is None or self._background.done()):
            work = self._catch_up_later() if later else self._catch_up_locked()
            self._background = asyncio.create_task(work, name="search-index-catch-up")

    async def _catch_up_locked(self) -> None:
        """Index what arrived; where another process writes the index, re-read how far it got."""
        try:
            async with self._lock:
                if self._acquire_writer() is not None:
                    await self._catch_up()
                else:
                    latest = await asyncio.to_thread(guarded, self._indexed_max)
                    self._watermark = max(self._watermark, latest)
        except Exception:  # noqa: BLE001 - a background catch-up only logs; the database answers meanwhile
            log.exception("search_index_catch_up_failed")

    async def warm(self) -> None:
        """Index everything stored so far (``nod run`` does this at start, in the background)."""
        try:
            self._opened()
            if await self._verified():
                await self._catch_up_locked()
        except IndexFailure:  # already told in the log, in a sentence: no traceback
            return
        except Exception:  # noqa: BLE001 - a background warm-up only logs; searches catch up themselves
            log.exception("search_index_warm_failed")

    async def close(self) -> None:
        """Stop background work without cancelling it: a statement cancelled mid-way leaves
        aiosqlite's thread answering a closed loop, and a half-written batch rolled back.
        A catch-up in progress finishes its batch (at most ``BATCH`` messages) and stops.
        Never raises: tantivy failing here is logged and the process goes on stopping."""
        self._closing.set()
        self._wake.set()
        if self._background is not None and not self._background.done():
            await asyncio.wait({self._background})
        async with self._lock:  # a warm-up or a search's own catch-up stops at its batch's end too
            if self._writer is not None:  # frees tantivy's writer lock for the next process
                writer, self._writer = self._writer, None
                # a shutdown path never raises: nod run still stops its web server and tasks
                with contextlib.suppress(IndexFailure):  # logged by guarded; the lock goes with the process
                    await asyncio.to_thread(guarded, writer.wait_merging_threads)

    async def _catch_up(self) -> None:
        """Index every message up to the settled horizon (``adapters.storage.fence``): on PostgreSQL
        an id still being inserted could otherwise be passed by and never indexed."""
        horizon = await fence.settled(self._engine)
        if horizon is None:  # inserts in flight: the database answers this time, the next search catches up
            return
        added = 0
        async with self._engine.connect() as conn:
            while not self._closing.is_set():
                rows = (await conn.execute(index_feed.GAP, {"after": self._watermark, "upto": horizon, "batch": self._batch})).all()
                if not rows:
                    break
                await asyncio.to_thread(guarded, partial(self._add, rows))
                added += len(rows)
        if added:
            log.info("search_index_caught_up added=%s watermark=%s", added, self._watermark)
        await self._follow_edits()

    def _add(self, rows: Sequence[Any]) -> None:
        writer = self._writer
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
            self._opened().reload()
        finally:
            self._watermark = int(rows[-1].id)
        self._places.update(places)

    def _next_place(self, thread_id: int) -> int:
        """The place the thread's next message takes: how many of its messages are indexed
        (they are indexed in id order, so that is the count)."""
        if thread_id not in self._places:
            query = tantivy.Query.term_query(self._schema, "thread", thread_id)
            self._places[thread_id] = int(self._opened().searcher().search(query, 1, count=True).count)
        return self._places[thread_id]

    def _write(self, writer: Any, rows: Sequence[Any]) -> dict[int, int]:
        places: dict[int, int] = {}
        for row in rows:
            thread = int(row.thread_id)
            seq = places.get(thread, self._next_place(thread))
            places[thread] = seq + 1
            self._last_indexed[thread] = int(row.id)  # before the commit shows it: a search keeps the filter
            writer.add_document(document_of(row, seq))
        writer.commit()
        return places
