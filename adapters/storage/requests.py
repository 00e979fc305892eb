"""Owner messages awaiting their answer, as statements on the messages table.

A request is a message stored ``awaiting``. Whatever answers it — a reply, a notice, a
voice note's transcript — settles it in the unit of work that stores the answer
(``RequestRows``, bound to that transaction), so after a crash the awaiting messages are
exactly the requests nothing answered, and a claimed one is never answered twice.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, update
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.storage.schema import messages


def settling(owner_id: int, up_to: int | None) -> Any:
    """The owner's requests up to ``up_to`` (all when None) settled, their voice notes' references
    dropped with them: a settled note is not heard later."""
    condition = and_(messages.c.owner_id == owner_id, messages.c.awaiting)
    if up_to is not None:
        condition = and_(condition, messages.c.id <= up_to)
    return update(messages).where(condition).values(awaiting=False, voice_note=None)


class RequestRows:
    """The requests as one transaction changes them (core.ports.RequestWrites)."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def claim(self, request_id: int, owner_id: int) -> bool:
        """The request answered now (still awaiting, or False), then every earlier one of the
        owner's: a restarted turn answers the messages before its own too, they were in its view."""
        claimed = update(messages).where(messages.c.id == request_id, messages.c.awaiting).values(
            awaiting=False, voice_note=None)
        if (await self._conn.execute(claimed)).rowcount != 1:
            return False
        await self._conn.execute(settling(owner_id, request_id))
        return True

    async def retire(self, message_id: int) -> None:
        await self._conn.execute(update(messages).where(messages.c.id == message_id).values(voice_note=None, awaiting=False))
