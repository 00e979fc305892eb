"""Owners, their settings and the channel identities that lead to them.

An identity (channel, external id) belongs to at most one owner; an unknown sender is
not an owner and leaves nothing here. One owner may have identities on several channels
and still has one memory and one conversation.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from core.storage.database import writing
from core.errors import AlreadyExists, InvalidInput, NotFound
from core.storage.schema import identities, owners


@dataclass(frozen=True)
class OwnerSettings:
    saving_enabled: bool = True
    remember_sensitive: bool = False
    spending_limit_usd: float | None = None  # per month in the owner's zone; None: the default
    spending_raised_period: str | None = None  # "YYYY-MM" the owner said yes to spending more in
    spending_raised_usd: float = 0.0
    spending_checkin_period: str | None = None  # "YYYY-MM" Nod asked to check in about

    @classmethod
    def from_json(cls, body: str) -> OwnerSettings:
        data = json.loads(body or "{}")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


@dataclass(frozen=True)
class Identity:
    channel: str
    external_id: str


@dataclass(frozen=True)
class Owner:
    id: int
    name: str
    time_zone: str
    settings: OwnerSettings
    created_at: datetime

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


def check_time_zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInput(f"Unknown time zone {name!r}; use an IANA name such as Europe/Lisbon.") from exc
    return name


def _owner(row: object) -> Owner:
    return Owner(
        id=row.id,  # type: ignore[attr-defined]
        name=row.name,  # type: ignore[attr-defined]
        time_zone=row.time_zone,  # type: ignore[attr-defined]
        settings=OwnerSettings.from_json(row.settings),  # type: ignore[attr-defined]
        created_at=row.created_at,  # type: ignore[attr-defined]
    )


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

    async def set_settings(self, owner_id: int, settings: OwnerSettings) -> None:
        async with writing(self._engine) as conn:
            await conn.execute(
                update(owners).where(owners.c.id == owner_id).values(settings=settings.to_json())
            )
