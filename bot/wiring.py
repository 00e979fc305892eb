"""One place that builds the stores from the settings (the cosmicpython bootstrap)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.settings import Settings
from core.clock import Clock, SystemClock
from core.history.search import HistorySearch
from core.storage.database import create_engine
from core.storage.memory_store import MemoryStore
from core.storage.messages import MessageStore
from core.storage.migrations import migrate
from core.storage.objects import ObjectStore
from core.storage.owners import OwnerStore
from core.tools.reading import ReadTools


@dataclass(frozen=True)
class Services:
    engine: AsyncEngine
    clock: Clock
    owners: OwnerStore
    messages: MessageStore
    memory: MemoryStore
    tools: ReadTools


@asynccontextmanager
async def services(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Services]:
    """Open the database, run pending migrations, and close everything on the way out."""
    engine = create_engine(settings.database_url)
    clock = clock or SystemClock()
    try:
        await migrate(engine)
        messages = MessageStore(engine, clock)
        memory = MemoryStore(ObjectStore(engine), clock)
        yield Services(
            engine=engine,
            clock=clock,
            owners=OwnerStore(engine),
            messages=messages,
            memory=memory,
            tools=ReadTools(memory, messages, HistorySearch(engine, messages)),
        )
    finally:
        await engine.dispose()
