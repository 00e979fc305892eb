"""Is the database really taking writes? What ``GET /healthz`` reports.

``SELECT 1`` answers even while every write is lost: a SQLite file deleted under a
running process keeps answering from the unlinked inode, and a full disk still reads. So
the check writes one small row (``nod_meta``'s health stamp) and, on SQLite, also checks
that the file Nod opened is still the one at its path. Any failure is a reason, one
sentence without the driver's SQL, for a 503.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from core.clock import Clock
from core.storage.database import describe, sqlite_file, storage_error, writing
from core.storage.schema import nod_meta

log = logging.getLogger("nod.health")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


class DatabaseHealth:
    def __init__(self, engine: AsyncEngine, url: str, clock: Clock) -> None:
        self._engine = engine
        self._url = url
        self._clock = clock
        self._file = sqlite_file(url)
        self._opened = _identity(self._file) if self._file is not None else None

    async def problem(self) -> str | None:
        """None when a write reaches the database Nod opened; otherwise why not."""
        if self._file is not None and self._opened is not None:
            now = _identity(self._file)
            if now is None:
                return f"{describe(self._url, first=True)} is gone; restore it and restart Nod."
            if now != self._opened:
                return f"{describe(self._url, first=True)} was replaced while Nod ran; restart Nod."
        try:
            async with writing(self._engine, single_statement=True) as conn:
                stamp = update(nod_meta).where(nod_meta.c.key == "health").values(value=self._clock.now().isoformat())
                await conn.execute(stamp)
        except Exception as exc:  # noqa: BLE001 - whatever the driver raises means "cannot write"
            log.warning("health_check_failed error=%s", type(exc).__name__)
            return str(storage_error(exc, self._url))
        return None
