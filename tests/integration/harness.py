"""A Nod wired like production over a real SQLite file and the scripted model server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from adapters.storage.schema import usage as usage_table
from bot.settings import Settings
from bot.wiring import Services, services
from core.agent.conductor import Conductor
from core.agent.turn_context import TurnContext, TurnOrigin, begin
from core.clock import FixedClock
from core.errors import AlreadyExists
from core.message import Inbound, StoredMessage
from core.owner import Identity, Owner
from core.replies import Reply
from tests.fakes.model_server import FakeModelServer
from tests.templates import migrated_sqlite

AGENT = "gpt-4o-mini"
MEMORY = "memory-small"
START = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


@dataclass
class Sink:
    sent: list[str] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        self.sent.append(reply.text_form())
        self.replies.append(reply)


@dataclass
class Harness:
    svc: Services
    server: FakeModelServer
    sink: Sink
    owner: Owner
    conductor: Conductor

    async def say(self, words: str) -> None:
        await self.conductor.receive(self.owner, Inbound(Identity("local", self.owner.name), words))
        await asyncio.wait_for(self.conductor.wait(self.owner.id), 30)

    async def context(self, request: StoredMessage, origin: TurnOrigin = TurnOrigin.OWNER_MESSAGE) -> TurnContext:
        """A turn's context for ``request`` as the conductor makes one: the owner and memory as stored now."""
        owner = await self.svc.owners.by_id(self.owner.id)
        return await begin(owner, origin, request.thread_id, request.id, self.svc.memory, self.svc.spending)

    async def usage_rows(self, purpose: str | None = None) -> list[Any]:
        query = select(usage_table).order_by(usage_table.c.id)
        if purpose is not None:
            query = query.where(usage_table.c.purpose == purpose)
        async with self.svc.engine.connect() as conn:
            return list((await conn.execute(query)).all())


async def make_harness(tmp_path: Path, server: FakeModelServer, **overrides: Any) -> AsyncIterator[Harness]:
    """Nod over ``tmp_path/nod.db`` (made from the migrated template when new: ``services`` then finds
    nothing to upgrade), or over the ``database_url`` in ``overrides``."""
    database = tmp_path / "nod.db"
    if "database_url" not in overrides and database.parent.is_dir() and not database.exists():
        await migrated_sqlite(database)
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{database}",
        "openai_base_url": server.base_url, "openai_api_key": "test",
        "agent_model": AGENT, "memory_model": MEMORY,
    }
    settings = Settings(**{**values, **overrides})
    async with services(settings, FixedClock(START)) as svc:
        try:
            owner = await svc.owners.add("Maya", "Europe/Lisbon", (), START)
        except AlreadyExists:  # a second worker on the same database, or a restart
            owner = await svc.owners.by_name("Maya")
        sink = Sink()
        conductor = svc.conductor(sink)
        try:
            yield Harness(svc, server, sink, owner, conductor)
        finally:
            await conductor.close()
