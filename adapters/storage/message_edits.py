"""Edited messages and attachments awaiting their turn: the two ways a stored message changes after it arrives.

An edit finds the owner's message by the platform's own id of it (``platform_id``: a
Telegram chat and message id), keeps the text it replaces as a row of
``message_versions`` — which no index and no reader of the conversation reads — and
writes the new words in its place, made as a message is (``StoredMessage.edited``: the
secret flag worked out again), in one transaction. Migration 13's triggers move the
database's full-text index to the new words (the message's entry and the next message's,
whose context it is); the derived index follows the versions table by id
(``adapters.storage.search_index.derived``), so the edit takes the same shared insert lock (id_horizon)
as an insert: on PostgreSQL a version id can then not commit behind one the index has passed.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import id_horizon
from adapters.storage.database import writing
from adapters.storage.schema import message_versions, messages
from core.message import Edited, Role, StoredMessage

log = logging.getLogger("nod.messages")


class MessageEdits:
    """The part of the message store (adapters.storage.message_store) that changes stored messages."""

    _engine: AsyncEngine

    async def edit(self, owner_id: int, channel: str, platform_id: str, text_: str, edited_at: datetime) -> Edited | None:
        """Put ``text_`` in place of the owner's message ``platform_id`` on ``channel``, the old kept as its
        previous version; None when there is no such message."""
        return await _edit(self._engine, owner_id, channel, platform_id, text_, edited_at)

    async def pending_media(self, owner_id: int, up_to: int) -> list[StoredMessage]:
        """The owner's messages up to ``up_to`` with a photo or document still awaiting their answer, oldest first."""
        from adapters.storage.message_store import stored_message

        query = (select(messages).where(messages.c.owner_id == owner_id, messages.c.awaiting, messages.c.id <= up_to,
                                        messages.c.media.is_not(None)).order_by(messages.c.id))
        async with self._engine.connect() as conn:
            return [stored_message(r) for r in (await conn.execute(query)).all()]


async def _edit(engine: AsyncEngine, owner_id: int, channel: str, platform_id: str, text_: str,
                edited_at: datetime) -> Edited | None:
    from adapters.storage.message_store import stored_message  # the row reader lives with the store

    query = select(messages).where(messages.c.owner_id == owner_id, messages.c.channel == channel,
                                   messages.c.platform_id == platform_id, messages.c.role == Role.OWNER.value)
    async with writing(engine) as conn:
        await id_horizon.enter(conn)
        row = (await conn.execute(query.order_by(messages.c.id).limit(1))).first()
        if row is None:
            return None
        before = stored_message(row)
        wanted = before.edited(text_)  # the new words made as a message is: storable, the secret flag anew
        if wanted.text == before.text:
            return Edited(before, changed=False)
        await conn.execute(insert(message_versions).values(
            message_id=before.id, owner_id=owner_id, text=before.text, replaced_at=edited_at))
        after = (await conn.execute(update(messages).where(messages.c.id == before.id).values(
            text=wanted.text, secret=wanted.secret, attachment=wanted.attachment).returning(*messages.c))).one()
    log.info("message_edited owner=%s message=%s awaiting=%s", owner_id, before.id, before.awaiting)
    return Edited(stored_message(after), changed=True)


async def previous_versions(engine: AsyncEngine, message_id: int) -> list[str]:
    """The texts the message had before its edits, oldest first."""
    query = select(message_versions.c.text).where(message_versions.c.message_id == message_id).order_by(message_versions.c.id)
    async with engine.connect() as conn:
        found: list[str] = list((await conn.execute(query)).scalars())
    return found
