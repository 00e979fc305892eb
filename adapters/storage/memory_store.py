"""Load and change one owner's memory document, safely against concurrent writers.

``update`` takes an operation (a pure function of the document, from
``core.memory.document``), applies it to the newest version and saves with
compare-and-swap; ``apply`` does the same with an operation that also reports what it did
(``Changed``), and returns that report with the saved document (``Saved``). When another writer got there first it re-reads and re-applies, a
bounded number of times with jittered back-off; it never overwrites a newer version.
Writers in the same process queue on a per-owner lock first, so they do not burn each
other's work in retries; the compare-and-swap still guards against other processes.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import TypeVar

from adapters.storage.objects import ObjectStore
from core.clock import Clock
from core.errors import StaleWrite
from core.memory.codec import decode
from core.memory.document import fit_and_encode
from core.memory.values import MemoryDocument
from core.ports import Changed, Saved, VersionedDocument

MEMORY_PATH = "memory/MEMORY.md"
MAX_ATTEMPTS = 200
log = logging.getLogger("nod.memory")
T = TypeVar("T")


class MemoryStore:
    def __init__(self, objects: ObjectStore, clock: Clock, max_attempts: int = MAX_ATTEMPTS):
        self._objects = objects
        self._clock = clock
        self._max_attempts = max_attempts
        self._owner_locks: dict[int, asyncio.Lock] = {}

    async def load(self, owner_id: int) -> VersionedDocument:
        stored = await self._objects.get(owner_id, MEMORY_PATH)
        if stored is None:
            return VersionedDocument(MemoryDocument(), 0)
        return VersionedDocument(decode(stored.body), stored.version)

    async def save(self, owner_id: int, document: MemoryDocument, expected_version: int) -> int:
        """One compare-and-swap attempt; the document is trimmed to fit (or MemoryFull)."""
        _fitted, body = fit_and_encode(document)
        return await self._objects.put(
            owner_id, MEMORY_PATH, body, expected_version, self._clock.now()
        )

    async def update(self, owner_id: int, operation: Callable[[MemoryDocument], MemoryDocument]) -> VersionedDocument:
        """Apply ``operation`` to the newest document and save it, retrying lost races."""
        saved = await self.apply(owner_id, lambda doc: Changed(operation(doc), None))
        return VersionedDocument(saved.document, saved.version)

    async def apply(self, owner_id: int, operation: Callable[[MemoryDocument], Changed[T]]) -> Saved[T]:
        """``update`` for an operation that reports what it did: the report of the try that saved."""
        lock = self._owner_locks.setdefault(owner_id, asyncio.Lock())
        async with lock:
            return await self._apply_unlocked(owner_id, operation)

    async def _apply_unlocked(self, owner_id: int, operation: Callable[[MemoryDocument], Changed[T]]) -> Saved[T]:
        delay = 0.002
        for _attempt in range(self._max_attempts):
            current = await self.load(owner_id)
            outcome = operation(current.document)
            if outcome.document is current.document:
                return Saved(current.document, current.version, outcome.result)
            fitted, body = fit_and_encode(outcome.document)
            try:
                version = await self._objects.put(
                    owner_id, MEMORY_PATH, body, current.version, self._clock.now()
                )
            except StaleWrite:
                log.debug("memory_cas_lost owner=%s version=%s", owner_id, current.version)
                await asyncio.sleep(random.uniform(0, delay))
                delay = min(delay * 2, 0.05)
                continue
            log.info(
                "memory_saved owner=%s version=%s entries=%s bytes=%s",
                owner_id, version, len(fitted.entries), len(body.encode("utf-8")),
            )
            return Saved(fitted, version, outcome.result)
        log.warning("memory_cas_gave_up owner=%s attempts=%s", owner_id, self._max_attempts)
        raise StaleWrite(
            f"The memory document kept changing; gave up after {self._max_attempts} attempts."
        )
