"""Receipts: which deliveries of a channel were already taken in, kept in the database.

A message's own external id makes its redelivery a no-op; a command (``/reset``,
``/memory``) leaves no message, so its delivery is recorded here instead. The insert is
the test — the first writer of (owner, channel, external id) wins on every worker and
after every restart, so a redelivered ``/reset`` resets nothing and a digest is sent once.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import nod_meta, receipts


class Receipts:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def first(self, owner_id: int, channel: str, external_id: str, kind: str, now: datetime) -> bool:
        """Record the delivery; True only for the first time it is seen."""
        async with writing(self._engine, single_statement=True) as conn:
            insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
            statement = insert(receipts).values(
                owner_id=owner_id, channel=channel, external_id=external_id, kind=kind, received_at=now,
            ).on_conflict_do_nothing(index_elements=["owner_id", "channel", "external_id"])
            result = await conn.execute(statement)
        return result.rowcount == 1

    async def first_mark(self, key: str, now: datetime) -> bool:
        """Record that ``key`` happened (a marker, no content: ``nod_meta``); True only the first time."""
        async with writing(self._engine, single_statement=True) as conn:
            insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
            statement = insert(nod_meta).values(key=key, value=now.isoformat()).on_conflict_do_nothing(
                index_elements=["key"])
            result = await conn.execute(statement)
        return result.rowcount == 1
