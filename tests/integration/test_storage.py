"""Storage on real databases: migrations, compare-and-swap, imports, owners, what SQL itself must do.

What a port promises (a redelivered message stored once, secrets flagged, threads and
resets, a failed operation saving nothing, …) is in tests/contract, on both backends and the fakes.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine, for_reads, writing
from adapters.storage.memory_store import MEMORY_PATH, MemoryStore
from adapters.storage.message_store import MessageStore
from adapters.storage.migrations import Upgrade, migrate, revisions
from adapters.storage.objects import ObjectStore
from adapters.storage.owner_store import OwnerStore
from core.clock import FixedClock, SystemClock
from core.errors import AlreadyExists, InvalidInput, NotFound, StaleWrite
from core.memory import document as ops
from core.memory.values import Origin
from core.message import Message, Role
from core.owner import Identity

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
CHAIN = tuple(r.revision for r in revisions())


async def _owner(engine: AsyncEngine, name: str = "ana") -> int:
    return (await OwnerStore(engine).add(name, "Europe/Lisbon", (), NOW)).id


def _add(path: str):
    def change(doc):
        return ops.add_entry(doc, ops.make_entry(path, f"note {path}", origin=Origin.STATED, now=NOW))
    return change


async def test_migrations_apply_once_on_empty_and_existing_databases(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        assert await migrate(engine) == Upgrade(CHAIN[-1], applied=CHAIN)
        owner = await _owner(engine)
        assert await migrate(engine) == Upgrade(CHAIN[-1])
        assert (await OwnerStore(engine).by_id(owner)).name == "ana"
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
        assert [r[0] for r in rows] == [CHAIN[-1]]
    finally:
        await engine.dispose()


async def test_concurrent_migrations_do_not_collide(database_url: str) -> None:
    engines = [create_engine(database_url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(e) for e in engines))
        assert sorted(r.applied for r in results) == [(), (), (), CHAIN]
    finally:
        for e in engines:
            await e.dispose()


async def test_fifty_concurrent_writers_all_land(engine: AsyncEngine) -> None:
    owner = await _owner(engine)
    # one store per writer, as in separate workers: only the compare-and-swap keeps order
    stores = [MemoryStore(ObjectStore(engine), SystemClock()) for _ in range(50)]
    start = (await stores[0].load(owner)).version
    await asyncio.gather(*(s.update(owner, _add(f"about/n{i}")) for i, s in enumerate(stores)))
    final = await stores[0].load(owner)
    assert sorted(e.slug for e in final.document.entries) == sorted(f"n{i}" for i in range(50))
    assert final.version == start + 50


async def test_reads_leave_no_transaction_open_and_writes_keep_theirs(engine: AsyncEngine) -> None:
    """A read connection runs in autocommit on PostgreSQL (no BEGIN before a read, no
    ROLLBACK after it); the engine itself still opens transactions, so writes stay atomic."""
    async with for_reads(engine).connect() as conn:
        await conn.execute(text("SELECT 1"))
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None and not raw.in_transaction if engine.dialect.name == "sqlite" else not raw.is_in_transaction()
    if engine.dialect.name == "postgresql":
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None and raw.is_in_transaction()
        with pytest.raises(TypeError, match="transactional"):  # a write on it would commit statement by statement
            async with writing(for_reads(engine)):
                pass


async def test_a_stale_write_never_overwrites_a_newer_version(engine: AsyncEngine) -> None:
    owner = await _owner(engine)
    objects = ObjectStore(engine)
    assert await objects.put(owner, MEMORY_PATH, "v1", 0, NOW) == 1
    assert await objects.put(owner, MEMORY_PATH, "v2", 1, NOW) == 2
    with pytest.raises(StaleWrite):
        await objects.put(owner, MEMORY_PATH, "stale", 1, NOW)
    with pytest.raises(StaleWrite):
        await objects.put(owner, MEMORY_PATH, "stale", 0, NOW)
    assert (await objects.get(owner, MEMORY_PATH)).body == "v2"




def test_writers_in_separate_processes_all_land(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    script = textwrap.dedent(f"""
        import asyncio, sys
        from datetime import datetime, timezone
        from core.clock import SystemClock
        from core.memory import document as ops
        from core.memory.values import Origin
        from adapters.storage.database import create_engine, for_reads, writing
        from adapters.storage.memory_store import MemoryStore
        from adapters.storage.migrations import migrate
        from adapters.storage.objects import ObjectStore
        async def main(worker):
            engine = create_engine({url!r})
            await migrate(engine)
            store = MemoryStore(ObjectStore(engine), SystemClock())
            now = datetime.now(timezone.utc)
            def add(i):
                return lambda d: ops.add_entry(d, ops.make_entry(
                    f"about/w{{worker}}-{{i}}", "x", origin=Origin.STATED, now=now))
            await asyncio.gather(*(store.update(1, add(i)) for i in range(10)))
            await engine.dispose()
        asyncio.run(main(sys.argv[1]))
    """)
    setup = create_engine(url)
    asyncio.run(_setup_owner(setup))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)]) for w in range(5)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 5
    final = asyncio.run(_load(url))
    assert len(final.document.entries) == 50 and final.version == 50


async def _setup_owner(engine: AsyncEngine) -> None:
    await migrate(engine)
    await _owner(engine)
    await engine.dispose()


async def _load(url: str):
    engine = create_engine(url)
    try:
        return await MemoryStore(ObjectStore(engine), SystemClock()).load(1)
    finally:
        await engine.dispose()










async def test_batch_import_is_idempotent(engine: AsyncEngine) -> None:
    owner = await _owner(engine)
    store = MessageStore(engine, FixedClock(NOW))
    batch = [Message(owner, Role.OWNER, f"m{i}", "import", NOW, f"id{i}") for i in range(30)]
    assert await store.append_many(owner, batch) == 30
    assert await store.append_many(owner, batch) == 0
    assert await store.count(owner) == 30


async def test_owners_and_identities(engine: AsyncEngine) -> None:
    owners = OwnerStore(engine)
    ana = await owners.add("ana", "Europe/Lisbon", (Identity("telegram", "42"),), NOW)
    await owners.link(ana.id, Identity("whatsapp", "+351900000000"))
    assert (await owners.by_identity(Identity("whatsapp", "+351900000000"))).id == ana.id
    assert await owners.by_identity(Identity("telegram", "43")) is None
    with pytest.raises(AlreadyExists):
        await owners.add("bob", "UTC", (Identity("telegram", "42"),), NOW)
    assert [o.name for o, _ in await owners.all()] == ["ana"]
    with pytest.raises(InvalidInput):
        await owners.add("carl", "Mars/Olympus", (), NOW)
    with pytest.raises(NotFound):
        await owners.by_name("nobody")


async def test_log_lines_carry_ids_but_never_text(engine: AsyncEngine, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    owner = await _owner(engine)
    stored = await MessageStore(engine, FixedClock(NOW)).append(
        Message(owner, Role.OWNER, "my sister Ana lives in Porto", "telegram", NOW, "x1"))
    await MemoryStore(ObjectStore(engine), SystemClock()).update(owner, _add("people/sister"))
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("nod."))
    assert f"message={stored.message.id}" in logged and f"owner={owner}" in logged
    assert "memory_saved" in logged
    assert "Ana" not in logged and "note people/sister" not in logged


async def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'wal.db'}")
    try:
        async with engine.connect() as conn:
            mode = (await conn.execute(text("PRAGMA journal_mode"))).scalar()
            timeout = (await conn.execute(text("PRAGMA busy_timeout"))).scalar()
        assert (mode, timeout) == ("wal", 30_000)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("flag", ["card_title", "attachment", "forwarded", "awaiting", "voice"])
async def test_every_read_of_a_message_gives_each_column_its_own_field(engine: AsyncEngine, flag: str) -> None:
    """Lists are built by column position (message_store.stored_messages), one read by name:
    a message with one flag set and every text distinct reads back the same through each."""
    from adapters.storage.thread_reads import ThreadReads
    from core.message import VoiceNote

    owner = (await OwnerStore(engine).add("ana", "UTC", (), NOW)).id
    store = MessageStore(engine, FixedClock(NOW))
    first = await store.append(Message(owner, Role.OWNER, "first", "telegram", NOW, "t-1"))
    note = VoiceNote("file-9", "n.ogg", "audio/ogg", 99, 3)
    extra = {flag: True, "origin": "an origin", "address": "+351 1", "voice_note": note}
    appended = await store.append(Message(owner, Role.ASSISTANT, "second", "whatsapp", NOW, "w-2", **extra))  # type: ignore[arg-type]
    message = appended.message
    assert [getattr(message, f) for f in ("card_title", "attachment", "forwarded", "awaiting", "voice")].count(True) == 1
    by_name = await store.get(message.id)
    assert by_name == message and by_name.voice_note == note and by_name.role is Role.ASSISTANT
    assert (await store.get_many([message.id]))[message.id] == by_name
    assert (await store.recent(owner, 5))[-1] == by_name
    shown, _ = await ThreadReads(engine).shown(message.thread_id, [first.message.id])
    assert shown[message.id] == by_name
