"""A tantivy index derived from the messages table, for fast history_search on both backends.

FTS5 and ``tsvector`` score every match before returning the best ten (~100 ms for a
common word in a million messages); tantivy answers in about a millisecond. The database
stays the only truth: the index lives beside the SQLite file (on PostgreSQL in
``NOD_SEARCH_INDEX_DIR``, one per host), holds nothing that cannot be rebuilt, and is
caught up by id in the background, at most once a second; a search never waits for that
commit: the searched thread's messages after what the index holds are read from the
database (adapters.storage.search_index.unindexed). It is checked before every search, never
trusted (adapters.storage.search_index.checker). One process writes (tantivy's lock is per
directory); another reads what it wrote. DerivedIndex is the SearchIndex port: it decides
what answers a search and when to catch up, and owns the parts that do the work — an
IndexReader, an IndexChecker and an IndexWriter over one IndexState. More: docs/search.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import thread_reads
from adapters.storage.database import for_reads, sqlite_file
from adapters.storage.search_index.checker import IndexChecker
from adapters.storage.search_index.index_directory import IndexDirectory
from adapters.storage.search_index.index_state import IndexState, guarded
from adapters.storage.search_index.reader import IndexReader
from adapters.storage.search_index.unindexed import TAIL_LIMIT, WithUnindexed, unindexed_messages
from adapters.storage.search_index.writer import BATCH, IndexWriter
from core.errors import IndexFailure
from core.ports import Matcher

__all__ = ["DerivedIndex", "sqlite_file"]
log = logging.getLogger("nod.history.index")
INLINE_GAP = 2_000  # a longer catch-up runs in the background and the database answers meanwhile
CATCH_UP_EVERY = 1.0  # seconds between background catch-ups: one commit covers what arrived meanwhile


class DerivedIndex:
    """The SearchIndex port (core.ports.search): one directory's index, its parts composed here."""

    def __init__(self, directory: Path, engine: AsyncEngine, catch_up_every: float | None = CATCH_UP_EVERY, *,
                 batch: int = BATCH, inline_gap: int = INLINE_GAP, tail_limit: int = TAIL_LIMIT,
                 wrap_tantivy: Callable[[Any], Any] | None = None) -> None:
        """``batch``, ``inline_gap`` and ``tail_limit``: the modules' sizes, smaller in tests.

        ``wrap_tantivy`` is a test hook, None in production: it wraps the tantivy index once
        opened (and, through its ``writer()``, tantivy's writer), so a test can make tantivy
        fail or watch its calls where no real failure can be caused; Nod's own code is never replaced.
        """
        self._directory = directory
        self._inline_gap = inline_gap
        self._tail_limit = tail_limit
        self._reads = for_reads(engine)
        self._state = IndexState(IndexDirectory(directory), wrap_tantivy)
        self._reader = IndexReader(self._state)
        self._writer = IndexWriter(self._state, self._reader, engine, batch)
        self._checker = IndexChecker(self._state, self._reader, self._writer, self._reads)
        self._background: asyncio.Task[None] | None = None
        self._inline: set[asyncio.Task[None]] = set()  # a busy thread's catch-ups, kept until done
        self._wake = asyncio.Event()  # a busy thread (or close()) ends a waiting catch-up's pause early
        self._every = catch_up_every  # None: only when asked (``warm``, ``ready_for``)
        self._caught_up_at = -(catch_up_every or 0.0)

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

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def watermark(self) -> int:
        """The highest message id indexed (the index is opened on first use)."""
        self._state.opened()
        return self._state.watermark

    @property
    def reader(self) -> IndexReader:
        """The Matcher over what the index holds now, without the unindexed tail: what ``view``
        hands a search when the index holds the whole snapshot (and what tests count with)."""
        return self._reader

    async def usable(self) -> bool:
        """Opened, and built from this database as it is now (rebuilt here when not)."""
        return await self._checker.usable()

    async def usable_and_current(self, owner_id: int | None) -> tuple[bool, tuple[int, int] | None]:
        """``usable``, and the owner's active thread and last message id, in one statement (IndexChecker)."""
        return await self._checker.usable_and_current(owner_id)

    async def view(
        self, thread_id: int, snapshot: int, split: int | None = None, checked: bool = False
    ) -> tuple[Matcher, int] | None:
        """What answers a search of ``thread_id`` up to ``snapshot``, and the split to keep in
        its cursors: the index up to the id it holds (or the cursor's ``split``) and the
        thread's newer messages from the database (adapters.storage.search_index.unindexed); None when the
        database's own index must answer. Waits for a commit only when the thread has more
        unindexed messages than the tail holds; otherwise a catch-up starts in the background.
        ``checked``: the caller has just had True from ``usable`` (it ran beside another read).
        """
        if not checked and not await self.usable():
            return None
        state = self._state
        if state.watermark < snapshot:
            self._catch_up_soon()
        if split is not None:  # a later page: the first page's split, whatever the index holds now
            if state.watermark < split <= state.watermark + self._inline_gap:  # another worker answered page one
                await self._catch_up_now()
            return await self._with_tail(thread_id, snapshot, split) if split <= state.watermark else None
        split = min(state.watermark, snapshot)
        answer = await self._with_tail(thread_id, snapshot, split)
        if answer is None and snapshot - state.watermark <= self._inline_gap:
            # a busy thread (several workers appending to it): one commit now (~20 ms at a
            # million) is cheaper than the database's ranking (100-300 ms); an import is not waited for
            await self._catch_up_now()
            answer = await self._with_tail(thread_id, snapshot, min(state.watermark, snapshot))
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
            return self._reader, split
        rows, before = await thread_reads.tail(self._reads, thread_id, split, snapshot, self._tail_limit + 1)
        if len(rows) > self._tail_limit:  # too many to match here
            return None
        if len(rows) > self._tail_limit // 2:  # a busy thread: the next catch-up starts now, not at its second
            self._wake.set()
        first_place = guarded(lambda: self._reader.place_after(before)) if rows else 0
        return WithUnindexed(self._reader, split, unindexed_messages(rows, first_place)), split

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
        if self._state.closing.is_set():  # the next process catches up
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
        state = self._state
        try:
            if state.watermark >= snapshot:
                return True
            if state.lock.locked() or snapshot - state.watermark > self._inline_gap:
                self._catch_up_in_background()
                return False
            async with state.lock:
                if state.watermark < snapshot:  # another process may have caught up meanwhile
                    await state.reread_watermark()
                if state.watermark < snapshot and self._writer.acquire():
                    await self._writer.catch_up()
        except IndexFailure:
            return False
        return state.watermark >= snapshot

    def _catch_up_in_background(self, later: bool = False) -> None:
        if not self._state.closing.is_set() and (self._background is None or self._background.done()):
            work = self._catch_up_later() if later else self._catch_up_locked()
            self._background = asyncio.create_task(work, name="search-index-catch-up")

    async def _catch_up_locked(self) -> None:
        """Index what arrived; where another process writes the index, re-read how far it got."""
        try:
            async with self._state.lock:
                if self._writer.acquire():
                    await self._writer.catch_up()
                else:
                    await self._state.reread_watermark()
        except Exception:  # noqa: BLE001 - a background catch-up only logs; the database answers meanwhile
            log.exception("search_index_catch_up_failed")

    async def warm(self) -> None:
        """Index everything stored so far (``nod run`` does this at start, in the background)."""
        try:
            self._state.opened()
            if await self._checker.verified():
                await self._catch_up_locked()
        except IndexFailure:  # already told in the log, in a sentence: no traceback
            return
        except Exception:  # noqa: BLE001 - a background warm-up only logs; searches catch up themselves
            log.exception("search_index_warm_failed")

    async def close(self) -> None:
        """Stop background work without cancelling it: a statement cancelled mid-way leaves
        aiosqlite's thread answering a closed loop, and a half-written batch rolled back.
        A catch-up in progress finishes its batch (at most ``batch`` messages) and stops.
        Never raises: tantivy failing here is logged and the process goes on stopping."""
        self._state.closing.set()
        self._wake.set()
        if self._background is not None and not self._background.done():
            await asyncio.wait({self._background})
        async with self._state.lock:  # a warm-up or a search's own catch-up stops at its batch's end too
            await self._writer.release()  # frees tantivy's writer lock for the next process
