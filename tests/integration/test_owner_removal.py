"""``nod owners remove`` on both backends: everything of the owner goes in one transaction, nobody
else's row is touched, and SQLite's contentless search index forgets their words (issue 43: 11)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.memory_store import MemoryStore
from adapters.storage.message_store import MessageStore
from adapters.storage.objects import ObjectStore
from adapters.storage.owner_store import OwnerStore
from core.clock import FixedClock
from core.errors import AlreadyExists, NotFound
from core.memory import document as ops
from core.memory.values import Origin
from core.message import Message, Role
from core.owner import Identity

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


async def _rows(engine: AsyncEngine, owner_id: int) -> dict[str, int]:
    counts = {}
    async with engine.connect() as conn:
        for table in ("identities", "threads", "messages", "objects", "schedules", "schedule_runs", "outbox"):
            counts[table] = (await conn.execute(text(f"SELECT count(*) FROM {table} WHERE owner_id = :o"),  # noqa: S608
                                                {"o": owner_id})).scalar_one()
    return counts


async def _reminded(engine: AsyncEngine, messages: MessageStore, owner_id: int) -> None:
    """A reminder that has fired once and whose message is still owed (its outbox row)."""
    from adapters.storage.schedule_store import ScheduleStore
    from adapters.storage.unit_of_work import SqlUnitOfWork
    from core.schedules.model import Kind
    from core.schedules.runner import advance, sent

    store = ScheduleStore(engine)
    await store.create(owner_id, Kind.REMINDER, "water the figs", NOW.replace(tzinfo=None), "FREQ=DAILY", NOW, NOW, None)
    [run] = await store.claim_due(NOW, NOW, NOW, advance)
    await sent(SqlUnitOfWork(engine, messages), run, Message(owner_id, Role.ASSISTANT, "Reminder: water the figs", "telegram", NOW))


async def test_removing_an_owner_deletes_all_of_theirs_and_nothing_else(engine: AsyncEngine) -> None:
    owners, messages = OwnerStore(engine), MessageStore(engine, FixedClock(NOW))
    memory = MemoryStore(ObjectStore(engine), FixedClock(NOW))
    ids = {}
    for name, telegram in (("ana", "42"), ("bo", "43")):
        owner = await owners.add(name, "UTC", (Identity("telegram", telegram),), NOW)
        ids[name] = owner.id
        for n in range(3):
            await messages.append(Message(owner.id, Role.OWNER, f"{name} says figs {n}", "telegram", NOW, f"{name}-{n}"))
        await memory.update(owner.id, lambda d, name=name: ops.add_entry(d, ops.make_entry(
            "about/figs", f"{name} likes figs", origin=Origin.STATED, now=NOW)))
        await _reminded(engine, messages, owner.id)
    removed = await owners.remove(ids["ana"])
    assert removed["messages"] == 4 and removed["identities"] == 1 and removed["objects"] == 1
    assert await _rows(engine, ids["ana"]) == {"identities": 0, "threads": 0, "messages": 0, "objects": 0,
                                               "schedules": 0, "schedule_runs": 0, "outbox": 0}
    assert await _rows(engine, ids["bo"]) == {"identities": 1, "threads": 1, "messages": 4, "objects": 1,
                                              "schedules": 1, "schedule_runs": 1, "outbox": 1}
    assert await owners.by_identity(Identity("telegram", "42")) is None
    if engine.dialect.name == "sqlite":  # the words are gone from the contentless index, bo's are intact
        async with engine.connect() as conn:
            found = (await conn.execute(text("SELECT rowid FROM search_fts WHERE search_fts MATCH 'figs'"))).all()
            await conn.execute(text("INSERT INTO search_fts (search_fts) VALUES ('integrity-check')"))  # raises if corrupt
        assert len(found) == 4  # bo's three messages and his reminder
    with pytest.raises(NotFound):
        await owners.remove(ids["ana"])


async def test_rename_and_unlink(engine: AsyncEngine) -> None:
    owners = OwnerStore(engine)
    ana = await owners.add("ana", "UTC", (Identity("telegram", "42"), Identity("whatsapp", "+351911")), NOW)
    await owners.add("bo", "UTC", (), NOW)
    await owners.rename(ana.id, "ana-maria")
    assert (await owners.by_name("ana-maria")).id == ana.id
    with pytest.raises(AlreadyExists):
        await owners.rename(ana.id, "bo")
    await owners.unlink(ana.id, Identity("whatsapp", "+351911"))
    assert await owners.identities(ana.id) == (Identity("telegram", "42"),)
    with pytest.raises(NotFound):
        await owners.unlink(ana.id, Identity("whatsapp", "+351911"))
