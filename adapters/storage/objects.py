"""The private object store: (owner, path) → body, with a version for compare-and-swap.

A write names the version it read. The database applies it only if that is still the
stored version (one conditional statement), so a stale writer can never overwrite a
newer body; it gets ``StaleWrite`` and decides whether to re-read and re-apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import objects
from core.errors import StaleWrite


@dataclass(frozen=True)
class StoredObject:
    body: str
    version: int


class ObjectStore:
    """Bodies by owner and path; version 0 means "not stored yet"."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def get(self, owner_id: int, path: str) -> StoredObject | None:
        query = select(objects.c.body, objects.c.version).where(
            and_(objects.c.owner_id == owner_id, objects.c.path == path)
        )
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return StoredObject(row.body, row.version) if row else None

    async def put(
        self, owner_id: int, path: str, body: str, expected_version: int, now: datetime
    ) -> int:
        """Store ``body`` if the stored version is still ``expected_version``; return the new one."""
        async with writing(self._engine) as conn:
            statement: Any
            if expected_version == 0:
                insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
                statement = (
                    insert(objects)
                    .values(owner_id=owner_id, path=path, body=body, version=1, updated_at=now)
                    .on_conflict_do_nothing(index_elements=["owner_id", "path"])
                )
            else:
                statement = (
                    update(objects)
                    .where(
                        and_(
                            objects.c.owner_id == owner_id,
                            objects.c.path == path,
                            objects.c.version == expected_version,
                        )
                    )
                    .values(body=body, version=expected_version + 1, updated_at=now)
                )
            result = await conn.execute(statement)
        if result.rowcount != 1:
            raise StaleWrite(f"{path} changed since version {expected_version} was read.")
        return expected_version + 1
