"""The unit of work on SQLAlchemy: one connection, one transaction, the stores bound to it.

``SqlUnitOfWork()`` is a write transaction (``database.writing``: on SQLite the engine's write
lock and ``BEGIN IMMEDIATE``, on PostgreSQL ``engine.begin()``) whose connection every store of
its ``SqlTransaction`` writes on; it commits when the block ends and rolls back when it raises,
so what the use case states together is stored together or not at all, and no reader on
another connection sees part of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage.database import writing
from adapters.storage.message_store import MessageStore
from adapters.storage.outbox import OutboxRows
from adapters.storage.requests import RequestRows
from adapters.storage.schedule_store import RunRows
from core.message import Appended, Message


class MessageRows:
    """The conversation as one transaction appends to it (core.ports.MessageWrites)."""

    def __init__(self, conn: AsyncConnection, store: MessageStore) -> None:
        self._conn = conn
        self._store = store

    async def append(self, message: Message) -> Appended:
        return await self._store.append_within(self._conn, message)


class SqlTransaction:
    """The stores of one unit of work (core.ports.Transaction), all on its connection."""

    def __init__(self, conn: AsyncConnection, store: MessageStore) -> None:
        self.messages = MessageRows(conn, store)
        self.requests = RequestRows(conn)
        self.outbox = OutboxRows(conn)
        self.runs = RunRows(conn)


class SqlUnitOfWork:
    """core.ports.UnitOfWork over ``engine``; ``store`` lends its statements and its clock."""

    def __init__(self, engine: AsyncEngine, store: MessageStore) -> None:
        self._engine = engine
        self._store = store

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[SqlTransaction]:
        async with writing(self._engine) as conn:
            yield SqlTransaction(conn, self._store)
