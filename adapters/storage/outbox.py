"""Replies stored but not yet accepted by their channel: what recovery sends after a crash.

A reply and its outbox row are written in one unit of work (``OutboxRows``, bound to the
transaction that stores the reply) and the row is deleted once the channel has taken the reply. So a reply is never sent unless
it is stored, and a reply a dead process stored but never sent is still owed: recovery takes
the row (deleting it, so one worker wins) and sends the stored text. Only rows older than a
grace period are taken, so a delivery still retrying in a live worker is left to it.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import messages, outbox
from core.message import StoredMessage


async def add(conn: AsyncConnection, message_id: int, owner_id: int, stored_at: datetime, unprompted: bool = False) -> None:
    """Inside the transaction that stores the reply; ``unprompted``: Nod spoke first (a reminder)."""
    await conn.execute(insert(outbox).values(message_id=message_id, owner_id=owner_id, stored_at=stored_at,
                                             unprompted=unprompted))


class OutboxRows:
    """The outbox as one transaction writes it (core.ports.OutboxWrites)."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def owe(self, reply: StoredMessage, unprompted: bool = False) -> None:
        await add(self._conn, reply.id, reply.owner_id, reply.sent_at, unprompted)


async def remove(engine: AsyncEngine, message_id: int) -> bool:
    """The row gone; True when this call removed it (the caller now owns the delivery)."""
    async with writing(engine, single_statement=True) as conn:
        return bool((await conn.execute(delete(outbox).where(outbox.c.message_id == message_id))).rowcount)


async def stored_before(engine: AsyncEngine, moment: datetime, channels: Collection[str], limit: int) -> list[Any]:
    """The rows (message columns and ``unprompted``) of at most ``limit`` replies on ``channels``
    stored before ``moment`` and still owed, oldest first."""
    query = (select(messages, outbox.c.unprompted).join(outbox, outbox.c.message_id == messages.c.id)
             .where(outbox.c.stored_at < moment, messages.c.channel.in_(tuple(channels)))
             .order_by(outbox.c.stored_at).limit(limit))
    async with engine.connect() as conn:
        return list((await conn.execute(query)).all())
