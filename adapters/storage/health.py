"""Is the database really taking writes? What ``GET /healthz`` reports.

``SELECT 1`` answers even while every write is lost: a SQLite file deleted under a
running process keeps answering from the unlinked inode, and a full disk still reads. So
the check writes one small row (``nod_meta``'s health stamp) through the same door every
write takes (``writing``), which on SQLite also checks that the file Nod opened is still
the one at its path. Any failure is a reason, one sentence without the driver's SQL, for a
503.
"""

from __future__ import annotations

import logging

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import storage_error, writing
from adapters.storage.schema import nod_meta
from core.clock import Clock
from core.errors import StorageError

log = logging.getLogger("nod.health")


class DatabaseHealth:
    def __init__(self, engine: AsyncEngine, url: str, clock: Clock) -> None:
        self._engine = engine
        self._url = url
        self._clock = clock

    async def problem(self) -> str | None:
        """None when a write reaches the database Nod opened; otherwise why not."""
        try:
            async with writing(self._engine, single_statement=True) as conn:
                stamp = update(nod_meta).where(nod_meta.c.key == "health").values(value=self._clock.now().isoformat())
                await conn.execute(stamp)
        except StorageError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - whatever the driver raises means "cannot write"
            log.warning("health_check_failed error=%s", type(exc).__name__)
            return str(storage_error(exc, self._url))
        return None
