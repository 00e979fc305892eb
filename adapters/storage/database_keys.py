"""The keys Nod keeps in its own database (``nod_meta``), made once with the database.

Every worker on the database reads the same key, so a cursor signed by one is accepted by
another; a key never changes, so it is read once per process.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.schema import nod_meta
from core.errors import StorageError


class DatabaseKeys:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._known: dict[str, bytes] = {}

    async def key(self, name: str) -> bytes:
        if name not in self._known:
            async with self._engine.connect() as conn:
                found = (await conn.execute(select(nod_meta.c.value).where(nod_meta.c.key == name))).scalar()
            if not found:
                raise StorageError(f"The database has no {name}; start Nod once so it can migrate the database.")
            self._known[name] = bytes.fromhex(found)
        return self._known[name]
