"""One set of port tests, three implementations: the in-memory fakes, SQLite and PostgreSQL.

Each contract test takes ``ports``: the fakes of ``tests/fakes/ports.py``, or the stores
``bot.wiring`` plugs in over a real SQLite file (in ``tmp_path``) or a fresh PostgreSQL
database (skipped, with its reason, when ``NOD_TEST_POSTGRES_URL`` is unset), each a
migrated copy of the session's template (``tests/templates.py``). A test that passes on all
three proves the fake keeps the promise the unit tests rely on; the rule tests in
``tests/unit`` then run on the fakes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine
from adapters.storage.database_keys import DatabaseKeys
from adapters.storage.keyword_matcher import KeywordMatcher
from adapters.storage.locks import DatabaseLocks
from adapters.storage.memory_store import MemoryStore
from adapters.storage.message_store import MessageStore
from adapters.storage.objects import ObjectStore
from adapters.storage.owner_store import OwnerStore
from adapters.storage.thread_reads import ThreadReads
from adapters.storage.unit_of_work import SqlUnitOfWork
from adapters.storage.usage_store import UsageStore
from core.clock import FixedClock
from core.ports import Conversation, Keys, Matcher, MemoryRepository, Messages, OwnerLocks, Owners, UnitOfWork, UsageLedger
from tests.conftest import _skip_or_fail_without_postgres, drop_postgres_database
from tests.fakes.messages import MemoryMessages, MemoryUnitOfWork
from tests.fakes.ports import FixedKeys, MemoryDocuments, MemoryLocks, MemoryOwners, MemoryUsage, NoConversation
from tests.templates import migrated_postgres_url, migrated_sqlite

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@dataclass
class Ports:
    """One implementation of each port, as a use case receives them, on one storage."""

    kind: str  # "fake", "sqlite" or "postgresql"
    messages: Messages
    memory: MemoryRepository
    owners: Owners
    usage: UsageLedger
    keys: Keys
    conversation: Conversation
    keywords: Matcher  # the database's own full-text index
    locks: OwnerLocks
    uow: UnitOfWork
    clock: FixedClock
    again: Callable[[], Ports]  # another worker's handles on the same storage (the fakes: the same objects)


def _fakes() -> Ports:
    clock = FixedClock(NOW)
    messages = MemoryMessages()
    fakes = Ports("fake", messages, MemoryDocuments(), MemoryOwners(), MemoryUsage(), FixedKeys(),
                  NoConversation(), NoConversation(), MemoryLocks(), MemoryUnitOfWork(messages), clock, lambda: fakes)
    return fakes


def _stores(kind: str, engine: AsyncEngine) -> Ports:
    clock = FixedClock(NOW)
    messages = MessageStore(engine, clock)
    return Ports(kind, messages, MemoryStore(ObjectStore(engine), clock), OwnerStore(engine),
                 UsageStore(engine), DatabaseKeys(engine), ThreadReads(engine), KeywordMatcher(engine),
                 DatabaseLocks(engine),
                 SqlUnitOfWork(engine, messages), clock, lambda: _stores(kind, engine))


@pytest.fixture(params=["fake", "sqlite", "postgresql"])
def storage(request: pytest.FixtureRequest) -> str:
    """Which implementation: the fakes, a real SQLite file, or PostgreSQL (a skip without it)."""
    if request.param == "postgresql":
        _skip_or_fail_without_postgres()
    return str(request.param)


@pytest.fixture
async def storage_url(storage: str, tmp_path: Path) -> AsyncIterator[str | None]:
    """None for the fakes; else a newly migrated database (a copy of the template, tests/templates.py)."""
    if storage == "fake":
        yield None
    elif storage == "sqlite":
        yield await migrated_sqlite(tmp_path / "nod.db")
    else:
        url = await migrated_postgres_url()
        try:
            yield url
        finally:
            await drop_postgres_database(url)


@pytest.fixture
async def ports(storage_url: str | None) -> AsyncIterator[Ports]:
    if storage_url is None:
        yield _fakes()
        return
    engine = create_engine(storage_url, pool_size=10)
    try:
        yield _stores(engine.dialect.name, engine)
    finally:
        await engine.dispose()
