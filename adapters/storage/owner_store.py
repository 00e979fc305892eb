"""Owners, their settings and the channel identities that lead to them.

An identity (channel, external id) belongs to at most one owner; an unknown sender is
not an owner and leaves nothing here. One owner may have identities on several channels
and still has one memory and one conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import (
    gmail_connections,
    gmail_consents,
    identities,
    message_versions,
    messages,
    objects,
    outbox,
    owners,
    page_links,
    page_sessions,
    receipts,
    schedule_runs,
    schedules,
    threads,
    usage,
)
from core.errors import AlreadyExists, InvalidInput, NotFound, StaleWrite
from core.owner import Identity, Owner, OwnerSettings, check_time_zone

# what belongs to an owner, children before parents (foreign keys are on in SQLite)
_OWNED = (schedule_runs, schedules, outbox, receipts, page_links, page_sessions, gmail_consents, gmail_connections, objects, usage,
          identities, message_versions, messages, threads)
# search_fts holds no text of its own (content=''): a row leaves it only by the 'delete' command
# with the very words it was indexed with, the message's and the previous one's in its thread
# (migration 3's trigger), so they are recomputed the way that trigger computed them
_FTS_FORGET = text(
    "INSERT INTO search_fts (search_fts, rowid, text, context) "
    "SELECT 'delete', id, text, coalesce(lag(text) OVER (PARTITION BY thread_id ORDER BY id), '') "
    "FROM messages WHERE owner_id = :owner AND role != 'tool'")


def _owner(row: object) -> Owner:
    return Owner(
        id=row.id,  # type: ignore[attr-defined]
        name=row.name,  # type: ignore[attr-defined]
        time_zone=row.time_zone,  # type: ignore[attr-defined]
        settings=OwnerSettings.from_json(row.settings),  # type: ignore[attr-defined]
        created_at=row.created_at,  # type: ignore[attr-defined]
    )


MAX_ATTEMPTS = 50


class OwnerStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def add(
        self, name: str, time_zone: str, links: tuple[Identity, ...], now: datetime
    ) -> Owner:
        name = name.strip()
        if not name:
            raise InvalidInput("An owner needs a name.")
        check_time_zone(time_zone)
        try:
            async with writing(self._engine) as conn:
                result = await conn.execute(
                    insert(owners)
                    .values(
                        name=name,
                        time_zone=time_zone,
                        settings=OwnerSettings().to_json(),
                        created_at=now,
                    )
                    .returning(owners.c.id)
                )
                owner_id = result.scalar_one()
                for link in links:
                    await conn.execute(
                        insert(identities).values(
                            channel=link.channel, external_id=link.external_id, owner_id=owner_id
                        )
                    )
        except IntegrityError as exc:
            raise AlreadyExists(
                f"The owner {name!r} or one of those identities is already registered."
            ) from exc
        return await self.by_name(name)

    async def link(self, owner_id: int, link: Identity) -> None:
        try:
            async with writing(self._engine) as conn:
                await conn.execute(
                    insert(identities).values(
                        channel=link.channel, external_id=link.external_id, owner_id=owner_id
                    )
                )
        except IntegrityError as exc:
            raise AlreadyExists(
                f"The {link.channel} identity {link.external_id} already belongs to an owner."
            ) from exc

    async def by_name(self, name: str) -> Owner:
        async with self._engine.connect() as conn:
            row = (await conn.execute(select(owners).where(owners.c.name == name))).first()
        if row is None:
            raise NotFound(f"No owner named {name!r}; add one with `nod owners add`.")
        return _owner(row)

    async def by_id(self, owner_id: int) -> Owner:
        async with self._engine.connect() as conn:
            row = (await conn.execute(select(owners).where(owners.c.id == owner_id))).first()
        if row is None:
            raise NotFound(f"No owner with id {owner_id}.")
        return _owner(row)

    async def by_identity(self, link: Identity) -> Owner | None:
        """The owner behind a channel identity, or None for a stranger."""
        query = (
            select(owners)
            .join(identities, identities.c.owner_id == owners.c.id)
            .where(identities.c.channel == link.channel)
            .where(identities.c.external_id == link.external_id)
        )
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return _owner(row) if row else None

    async def identities(self, owner_id: int) -> tuple[Identity, ...]:
        """The owner's channel identities in the order they were linked."""
        query = select(identities).where(identities.c.owner_id == owner_id).order_by(identities.c.id)
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return tuple(Identity(r.channel, r.external_id) for r in rows)

    async def all(self) -> list[tuple[Owner, tuple[Identity, ...]]]:
        async with self._engine.connect() as conn:
            rows = (await conn.execute(select(owners).order_by(owners.c.id))).all()
            links = (await conn.execute(select(identities).order_by(identities.c.id))).all()
        by_owner: dict[int, list[Identity]] = {}
        for link in links:
            by_owner.setdefault(link.owner_id, []).append(Identity(link.channel, link.external_id))
        return [(_owner(r), tuple(by_owner.get(r.id, ()))) for r in rows]

    async def set_time_zone(self, owner_id: int, time_zone: str) -> None:
        check_time_zone(time_zone)
        async with writing(self._engine) as conn:
            await conn.execute(update(owners).where(owners.c.id == owner_id).values(time_zone=time_zone))

    async def update_settings(self, owner_id: int, change: Callable[[OwnerSettings], OwnerSettings]) -> Owner:
        """Apply ``change`` to the settings as stored now and save them by compare-and-swap.

        Two writers (a page switch and a spending check-in, two workers) each re-read and
        re-apply when the other got there first, so neither silently undoes the other.
        """
        for _attempt in range(MAX_ATTEMPTS):
            async with self._engine.connect() as conn:
                row = (await conn.execute(select(owners).where(owners.c.id == owner_id))).first()
            if row is None:
                raise NotFound(f"No owner with id {owner_id}.")
            current = _owner(row)
            changed = change(current.settings)
            if changed == current.settings:
                return current
            async with writing(self._engine) as conn:
                result = await conn.execute(
                    update(owners).where(owners.c.id == owner_id, owners.c.settings_version == row.settings_version)
                    .values(settings=changed.to_json(), settings_version=row.settings_version + 1))
            if result.rowcount == 1:
                return replace(current, settings=changed)
        raise StaleWrite(f"The owner's settings kept changing; gave up after {MAX_ATTEMPTS} attempts.")

    async def rename(self, owner_id: int, new_name: str) -> None:
        new_name = new_name.strip()
        if not new_name:
            raise InvalidInput("An owner needs a name.")
        try:
            async with writing(self._engine) as conn:
                await conn.execute(update(owners).where(owners.c.id == owner_id).values(name=new_name))
        except IntegrityError as exc:
            raise AlreadyExists(f"There is already an owner named {new_name!r}.") from exc

    async def unlink(self, owner_id: int, link: Identity) -> None:
        """Remove one identity of the owner's; NotFound when it is not theirs."""
        async with writing(self._engine) as conn:
            result = await conn.execute(delete(identities).where(
                identities.c.owner_id == owner_id, identities.c.channel == link.channel,
                identities.c.external_id == link.external_id))
        if result.rowcount != 1:
            raise NotFound(f"The {link.channel} identity {link.external_id} is not linked to this owner.")

    async def remove(self, owner_id: int) -> dict[str, int]:
        """Delete the owner and every row of theirs in one transaction: all of it, or (on failure) none.

        Returns the rows deleted per table, for the operator to see what went.
        """
        counts: dict[str, int] = {}
        async with writing(self._engine) as conn:
            counts["messages"] = (await conn.execute(
                select(func.count()).select_from(messages).where(messages.c.owner_id == owner_id))).scalar_one()
            if conn.dialect.name == "sqlite":
                await conn.execute(_FTS_FORGET, {"owner": owner_id})
            for table in _OWNED:
                result = await conn.execute(delete(table).where(table.c.owner_id == owner_id))
                counts[table.name] = result.rowcount
            if (await conn.execute(delete(owners).where(owners.c.id == owner_id))).rowcount != 1:
                raise NotFound(f"No owner with id {owner_id}.")
        return counts
