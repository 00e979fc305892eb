"""Sign-in links and page sessions on the database, each kept only as a hash of its secret.

Taking a link is one conditional UPDATE — unused, unexpired — so a link works exactly once
even when two requests race for it on two workers.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import page_links, page_sessions


class PageStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def add_link(self, token_hash: str, owner_id: int, now: datetime, expires_at: datetime) -> None:
        async with writing(self._engine) as conn:
            await conn.execute(insert(page_links).values(
                token_hash=token_hash, owner_id=owner_id, created_at=now, expires_at=expires_at))

    async def take_link(self, token_hash: str, now: datetime) -> int | None:
        """The owner of an unused, unexpired link, which is used up by this call; else None."""
        taking = (update(page_links)
                  .where(page_links.c.token_hash == token_hash, page_links.c.used_at.is_(None),
                         page_links.c.expires_at > now)
                  .values(used_at=now).returning(page_links.c.owner_id))
        async with writing(self._engine) as conn:
            found = (await conn.execute(taking)).scalar()
        return int(found) if found is not None else None

    async def add_session(self, session_hash: str, owner_id: int, now: datetime, expires_at: datetime) -> None:
        async with writing(self._engine) as conn:
            await conn.execute(insert(page_sessions).values(
                session_hash=session_hash, owner_id=owner_id, created_at=now, expires_at=expires_at))

    async def session_owner(self, session_hash: str, now: datetime) -> int | None:
        query = select(page_sessions.c.owner_id).where(
            page_sessions.c.session_hash == session_hash, page_sessions.c.revoked_at.is_(None),
            page_sessions.c.expires_at > now)
        async with self._engine.connect() as conn:
            found = (await conn.execute(query)).scalar()
        return int(found) if found is not None else None

    async def revoke_sessions(self, owner_id: int, now: datetime) -> int:
        """End every open session of the owner; how many there were."""
        ending = (update(page_sessions)
                  .where(page_sessions.c.owner_id == owner_id, page_sessions.c.revoked_at.is_(None))
                  .values(revoked_at=now))
        async with writing(self._engine) as conn:
            return int((await conn.execute(ending)).rowcount)
