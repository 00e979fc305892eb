"""What the derived index's reader, checker and writer share: one open tantivy index and how far it got.

DerivedIndex (adapters.storage.search_index.derived) makes one IndexState and hands it to each
of its parts, so everything they read and move together is named here, once: the directory
and its marker, the tantivy index (opened on first use), the database it was built from,
the watermark, what this process indexed last per thread, and the lock and closing flag
that order their work. Each part keeps what only it uses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import tantivy

from adapters.storage.search_index.documents import schema_of_documents
from adapters.storage.search_index.index_directory import IndexDirectory
from core.errors import IndexFailure

log = logging.getLogger("nod.history.index")
T = TypeVar("T")


def guarded(work: Callable[[], T]) -> T:
    """Run a tantivy call; its failures (a Rust panic is a BaseException) become IndexFailure."""
    try:
        return work()
    except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
        raise
    except BaseException as exc:  # noqa: BLE001 - pyo3's PanicException is not an Exception
        log.error("search_index_failed error=%s", type(exc).__name__)
        raise IndexFailure("The search index failed; the database's own index answers instead.") from exc


class IndexState:
    """The open index and how far it got; mutable, owned by one DerivedIndex."""

    def __init__(self, directory: IndexDirectory, wrap_tantivy: Callable[[Any], Any] | None = None) -> None:
        self.directory = directory
        self.schema = schema_of_documents()
        self.database: str | None = None  # the database's identity the marker names (read on opening)
        self.watermark = 0  # the highest message id indexed
        # thread -> the highest id of it this process indexed, set before the commit that shows
        # it (IndexWriter): past it the index holds none of the thread's messages (IndexReader)
        self.last_indexed: dict[int, int] = {}
        self.lock = asyncio.Lock()  # one catch-up, rebuild or release at a time
        self.closing = asyncio.Event()  # set by close(): nothing starts writing again
        self._wrap = wrap_tantivy
        self._tantivy: Any | None = None  # opened on first use: `nod owners list` makes no index directory

    def opened(self) -> Any:
        """The tantivy index, opened (or made) on first use, with the watermark it holds."""
        if self._tantivy is None:
            opened = self.directory.open(self.schema)
            self._tantivy = self._wrap(opened) if self._wrap is not None else opened
            self.database = self.directory.bound_to()
            self.watermark = self.indexed_max()
        return self._tantivy

    def searcher(self) -> Any:
        return self.opened().searcher()

    def indexed_max(self) -> int:
        """The highest id the index holds now (another process may have written it meanwhile)."""
        self.opened().reload()
        found = self.searcher().search(tantivy.Query.all_query(), 1, count=False, order_by_field="id")
        return int(found.hits[0][0]) if found.hits else 0

    async def reread_watermark(self) -> None:
        """Where another process writes the index: move the watermark to what it holds now."""
        latest = await asyncio.to_thread(guarded, self.indexed_max)
        self.watermark = max(self.watermark, latest)
