"""Storage that fails, and text no driver can take (issue 14: findings 5, 8 and 9), on both backends."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine
from adapters.storage.health import DatabaseHealth
from adapters.storage.message_store import MessageStore
from adapters.storage.migrations import migrate
from adapters.storage.owner_store import OwnerStore
from adapters.storage.unit_of_work import SqlUnitOfWork
from bot.logs import configure_logging
from core.clock import FixedClock
from core.errors import InvalidInput
from core.message import Message, Role
from tests.integration.faults import FAILURE, refusing

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
SECRET_TEXT = "my password is hunter2 and my card is 4111 1111 1111 1111"


async def _owner(engine: AsyncEngine) -> int:
    return (await OwnerStore(engine).add("ana", "UTC", (), NOW)).id


async def test_a_failing_statement_logs_and_raises_no_parameters(
        engine: AsyncEngine, database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    owner = await _owner(engine)
    store = MessageStore(engine, FixedClock(NOW))
    configure_logging("DEBUG")  # as `nod run` with NOD_LOG_LEVEL=DEBUG logs, drivers included
    for name in ("aiosqlite", "sqlalchemy.engine", "asyncpg"):
        logging.getLogger(name).setLevel(logging.DEBUG)  # even a driver's own debug lines
    try:
        async with refusing(database_url, "messages"):
            with pytest.raises(SQLAlchemyError) as failure:
                await store.append(Message(owner, Role.OWNER, SECRET_TEXT, "telegram", NOW, "u1"))
            logging.getLogger("nod.test").exception("store failed")  # as an edge would log it
    finally:
        configure_logging("WARNING")
    logged = capsys.readouterr().err
    assert FAILURE in str(failure.value) and "store failed" in logged and "INSERT INTO messages" in logged
    for shown in (str(failure.value), logged):
        assert "hunter2" not in shown and "4111" not in shown


@pytest.mark.parametrize(("sent", "kept"), [
    ("a\x00b", "ab"), ("lone \ud800 surrogate", "lone \ufffd surrogate"), ("ok 😀", "ok 😀"),
])
async def test_text_no_driver_can_take_is_stored_the_same_on_both_backends(
        engine: AsyncEngine, sent: str, kept: str) -> None:
    owner = await _owner(engine)
    store = MessageStore(engine, FixedClock(NOW))
    stored = await store.append(Message(owner, Role.OWNER, sent, "telegram", NOW, "u1"))
    assert stored.message.text == kept and (await store.get(stored.message.id)).text == kept  # type: ignore[union-attr]


@pytest.mark.parametrize("moment", [datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)])
async def test_a_sent_time_outside_1900_to_2199_is_refused_with_a_sentence(engine: AsyncEngine, moment: datetime) -> None:
    owner = await _owner(engine)
    with pytest.raises(InvalidInput, match="between the years 1900 and 2199"):
        await MessageStore(engine, FixedClock(NOW)).append(Message(owner, Role.OWNER, "hi", "t", moment))


async def test_health_reports_a_database_that_refuses_writes(engine: AsyncEngine, database_url: str) -> None:
    health = DatabaseHealth(engine, database_url, FixedClock(NOW))
    assert await health.problem() is None
    async with refusing(database_url, "nod_meta", "UPDATE"):
        problem = await health.problem()
    assert problem is not None and FAILURE in problem and problem.startswith("The ")
    assert await health.problem() is None


async def test_health_reports_a_sqlite_file_deleted_or_replaced_under_nod(tmp_path: Path) -> None:
    db = tmp_path / "nod.db"
    url = f"sqlite+aiosqlite:///{db}"
    engine = create_engine(url)
    await migrate(engine)
    health = DatabaseHealth(engine, url, FixedClock(NOW))
    try:
        assert await health.problem() is None
        db.rename(tmp_path / "moved.db")
        assert await health.problem() == f"The SQLite file {db} is gone; restore it and restart Nod."
        db.write_bytes(b"")
        assert await health.problem() == f"The SQLite file {db} was replaced while Nod ran; restart Nod."
    finally:
        await engine.dispose()


async def test_a_unit_of_work_the_database_fails_half_way_leaves_nothing(engine: AsyncEngine, database_url: str) -> None:
    """The outbox row refused (a full disk, a lost connection): the reply and the settlement go with it."""
    owner = await _owner(engine)
    store = MessageStore(engine, FixedClock(NOW))
    request = (await store.append(Message(owner, Role.OWNER, "hi", "telegram", NOW, "u1", awaiting=True))).message
    async with refusing(database_url, "outbox"):
        with pytest.raises(SQLAlchemyError):
            async with SqlUnitOfWork(engine, store)() as tx:
                assert await tx.requests.claim(request.id, owner)
                await tx.outbox.owe((await tx.messages.append(Message(owner, Role.ASSISTANT, "hello", "telegram", NOW))).message)
    assert await store.newest_awaiting(owner) == request and [m.text for m in await store.recent(owner, 5)] == ["hi"]


async def test_a_write_beside_a_unit_of_work_on_sqlite_is_refused_not_left_waiting(tmp_path: Path) -> None:
    """SQLite's one write lock is the unit of work's: a store writing on its own inside it would wait forever."""
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}")
    try:
        await migrate(engine)
        owner = await _owner(engine)
        store = MessageStore(engine, FixedClock(NOW))
        with pytest.raises(RuntimeError, match="unit of work"):
            async with SqlUnitOfWork(engine, store)():
                await store.settle(owner)
        await store.settle(owner)  # the lock was let go
    finally:
        await engine.dispose()
