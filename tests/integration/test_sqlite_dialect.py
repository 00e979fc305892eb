"""The SQLite dialect: one trip to aiosqlite's thread a statement, a rollback only when one is open.

The trips are counted at aiosqlite's queue (the library's, not Nod's code); what a statement
returns, counts and refuses is checked through SQLAlchemy as Nod uses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine, writing


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What each trip to a connection's thread ran: rollbacks by name, statements as 'statement'."""
    seen: list[str] = []
    queue = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(fn, "__name__", "call"))
        return await queue(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    yield seen


async def _engine(tmp_path: Path) -> AsyncEngine:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}")
    async with writing(engine) as conn:
        await conn.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT UNIQUE)"))
        await conn.execute(text("INSERT INTO notes (body) VALUES ('first'), ('second')"))
    return engine


async def test_a_read_is_one_trip_and_rolls_nothing_back(tmp_path: Path, trips: list[str]) -> None:
    engine = await _engine(tmp_path)
    async with engine.connect() as conn:  # the pool has a connection: no trip spent opening one
        await conn.execute(text("SELECT 1"))
    trips.clear()
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT id, body FROM notes ORDER BY id"))).all()
    assert [tuple(r) for r in rows] == [(1, "first"), (2, "second")]
    assert len(trips) == 1 and "rollback" not in trips  # SQLAlchemy's adapter made five
    await engine.dispose()


async def test_counts_ids_and_columns_are_the_statement_s(tmp_path: Path) -> None:
    engine = await _engine(tmp_path)
    async with writing(engine) as conn:
        updated = await conn.execute(text("UPDATE notes SET body = body || '!' WHERE id <= 2"))
        added = await conn.execute(text("INSERT INTO notes (body) VALUES ('third')"))
        many = await conn.execute(text("INSERT INTO notes (body) VALUES (:b)"), [{"b": "x"}, {"b": "y"}])
        returned = await conn.execute(text("UPDATE notes SET body = upper(body) WHERE id > 3 RETURNING id, body"))
        assert updated.rowcount == 2 and added.lastrowid == 3 and many.rowcount == 2
        assert sorted(tuple(r) for r in returned) == [(4, "X"), (5, "Y")] and returned.rowcount == 2
        assert list(returned.keys()) == ["id", "body"]
    async with engine.connect() as conn:
        empty = await conn.execute(text("SELECT id FROM notes WHERE id > 99"))
        assert empty.all() == [] and list(empty.keys()) == ["id"]
    await engine.dispose()


async def test_a_failed_write_is_rolled_back_and_its_connection_reused_clean(tmp_path: Path, trips: list[str]) -> None:
    engine = await _engine(tmp_path)
    with pytest.raises(IntegrityError):
        async with writing(engine) as conn:
            await conn.execute(text("INSERT INTO notes (body) VALUES ('kept only if committed')"))
            await conn.execute(text("INSERT INTO notes (body) VALUES ('first')"))  # UNIQUE: refused
    assert "rollback" in trips  # SQLite held the transaction open: it was rolled back
    async with engine.connect() as conn:  # the same pooled connection, in autocommit again
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None and not driver.in_transaction
        bodies = (await conn.execute(text("SELECT body FROM notes ORDER BY id"))).scalars().all()
    assert bodies == ["first", "second"]
    async with writing(engine) as conn:  # and the next write begins and commits as usual
        await conn.execute(text("INSERT INTO notes (body) VALUES ('third')"))
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM notes"))).scalar() == 3
    await engine.dispose()


async def test_a_streamed_result_reads_every_row(tmp_path: Path) -> None:
    engine = await _engine(tmp_path)
    async with engine.connect() as conn:
        streamed = await conn.stream(text("SELECT body FROM notes ORDER BY id"))
        assert [row.body async for row in streamed] == ["first", "second"]
    await engine.dispose()
