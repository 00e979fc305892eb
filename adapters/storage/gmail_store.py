"""Gmail connections and consents in progress on the database (``core.ports.GmailConnections``).

The store never sees a refresh token or a PKCE verifier in the clear: ``core.gmail`` seals
them before they arrive. Taking a consent is one conditional UPDATE — unused, unexpired —
so a state works exactly once even when two callbacks race on two workers. A run's record
is counts and one sentence; disconnecting deletes the row, sealed token and all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import gmail_connections, gmail_consents
from core.gmail.values import Connection, PendingConsent, RunReport

MAX_OUTCOME = 300


class GmailStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def add_consent(self, state_hash: str, pending: PendingConsent, now: datetime, expires_at: datetime) -> None:
        async with writing(self._engine) as conn:
            await conn.execute(delete(gmail_consents).where(gmail_consents.c.expires_at < now))  # old ones go
            await conn.execute(insert(gmail_consents).values(
                state_hash=state_hash, owner_id=pending.owner_id, session_hash=pending.session_hash,
                sealed_verifier=pending.sealed_verifier, created_at=now, expires_at=expires_at))

    async def take_consent(self, state_hash: str, now: datetime, session_hash: str | None) -> PendingConsent | None:
        """The consent for an unused, unexpired state, used up by this call; else None.

        A consent bound to a page session is only taken from that session: a callback opened
        in another browser (or by a link preview) refuses without using up the owner's state.
        """
        session = or_(gmail_consents.c.session_hash.is_(None), gmail_consents.c.session_hash == session_hash)
        taking = (update(gmail_consents)
                  .where(gmail_consents.c.state_hash == state_hash, gmail_consents.c.used_at.is_(None),
                         gmail_consents.c.expires_at > now, session)
                  .values(used_at=now, sealed_verifier=None)
                  .returning(gmail_consents.c.owner_id, gmail_consents.c.session_hash))
        verifier = select(gmail_consents.c.sealed_verifier).where(gmail_consents.c.state_hash == state_hash)
        async with writing(self._engine) as conn:
            sealed = (await conn.execute(verifier)).scalar()
            row = (await conn.execute(taking)).first()
        if row is None:
            return None
        return PendingConsent(int(row.owner_id), row.session_hash, sealed)

    async def connect(self, owner_id: int, sealed_token: str, now: datetime) -> None:
        """Store (or replace) the owner's sealed token; a new connection starts with no runs."""
        values = {"sealed_token": sealed_token, "connected_at": now, "last_run_at": None, "last_ok": False,
                  "sampled": 0, "skipped": 0, "outcome": None, "reconnect": False}
        async with writing(self._engine) as conn:
            dialect_insert: Any = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
            statement = dialect_insert(gmail_connections).values(owner_id=owner_id, **values)
            await conn.execute(statement.on_conflict_do_update(index_elements=["owner_id"], set_=values))

    async def get(self, owner_id: int) -> Connection | None:
        query = select(gmail_connections).where(gmail_connections.c.owner_id == owner_id)
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        return Connection(owner_id=row.owner_id, sealed_token=row.sealed_token, connected_at=row.connected_at,
                          last_run_at=row.last_run_at, last_ok=bool(row.last_ok), sampled=row.sampled,
                          skipped=row.skipped, outcome=row.outcome, reconnect=bool(row.reconnect))

    async def record_run(self, owner_id: int, now: datetime, report: RunReport) -> None:
        """The last run's counts and sentence (a disconnect meanwhile leaves nothing to record on)."""
        async with writing(self._engine) as conn:
            await conn.execute(update(gmail_connections).where(gmail_connections.c.owner_id == owner_id).values(
                last_run_at=now, last_ok=report.ok, sampled=report.sampled, skipped=report.skipped,
                outcome=report.outcome[:MAX_OUTCOME], reconnect=report.reconnect))

    async def delete(self, owner_id: int) -> bool:
        async with writing(self._engine) as conn:
            gone = await conn.execute(delete(gmail_connections).where(gmail_connections.c.owner_id == owner_id))
            await conn.execute(delete(gmail_consents).where(gmail_consents.c.owner_id == owner_id))
        return bool(gone.rowcount)

    async def connected_owners(self) -> list[int]:
        async with self._engine.connect() as conn:
            rows = await conn.execute(select(gmail_connections.c.owner_id).order_by(gmail_connections.c.owner_id))
        return [int(r[0]) for r in rows]
