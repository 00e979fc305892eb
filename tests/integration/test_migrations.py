"""Alembic migrations on real databases, SQLite and PostgreSQL: a database made by the numbered
migrations of the code before Alembic is taken over in place, a new one is made by the
revisions, and either way the schema is schema.py's, to the last index and trigger."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import legacy
from adapters.storage.database import create_engine, writing
from adapters.storage.migrations import Upgrade, migrate, revisions, schema_differences, schema_state
from adapters.storage.schema import messages, metadata, nod_meta, owners, threads
from core.errors import StorageError
from tests.integration.schema_catalog import catalog, is_legacy_sqlite_nullable_key

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
HEAD = revisions()[-1].revision
CHAIN = tuple(r.revision for r in revisions())
AFTER_STAMP = CHAIN[CHAIN.index(legacy.STAMP) + 1:]  # what Alembic applies to a database once it is stamped
LAST_STEP = legacy.MIGRATIONS[-1].version  # 12: the numbered migrations end there


async def make_legacy(engine: AsyncEngine, upto: int) -> None:
    """A database as the code before Alembic left it at step ``upto``: its numbered steps, the
    same statements in the same order, recorded in schema_migrations (adapters.storage.legacy)."""
    async with writing(engine) as conn:
        assert await conn.run_sync(legacy.apply_steps, upto) == list(range(1, upto + 1))


async def _seed(engine: AsyncEngine, name: str = "ana") -> None:
    async with writing(engine) as conn:
        owner = (await conn.execute(insert(owners).values(name=name, time_zone="UTC", settings="{}", created_at=NOW)
                                    .returning(owners.c.id))).scalar_one()
        thread = (await conn.execute(insert(threads).values(owner_id=owner, created_at=NOW).returning(threads.c.id))).scalar_one()
        for n, words in enumerate(("where does my sister live?", "in Porto, since June")):
            await conn.execute(insert(messages).values(owner_id=owner, thread_id=thread, role="owner", text=words, sent_at=NOW,
                                                       channel="telegram", external_id=f"t-{n}", card_title=False,
                                                       attachment=False, forwarded=False, secret=False))


async def _found(engine: AsyncEngine, word: str) -> list[int]:
    """Message ids history_search's own index matches ``word`` with (by own words or context)."""
    sql = ("SELECT rowid FROM search_fts WHERE search_fts MATCH :w ORDER BY rowid" if engine.dialect.name == "sqlite" else
           "SELECT id FROM messages WHERE search_tsv @@ to_tsquery('nod_search', :w) ORDER BY id")
    async with engine.connect() as conn:
        return [int(row[0]) for row in await conn.execute(text(sql), {"w": word})]


async def _read(engine: AsyncEngine) -> tuple[list[Any], dict[str, Any]]:
    async with engine.connect() as conn:
        return await conn.run_sync(schema_differences), await conn.run_sync(catalog)


async def _made_by_metadata(url: str) -> dict[str, Any]:
    """The catalog of ``metadata.create_all`` (with schema.py's search DDL) on an empty database."""
    engine = create_engine(url)
    try:
        async with writing(engine) as conn:
            await conn.run_sync(metadata.create_all)
        async with engine.connect() as conn:
            return await conn.run_sync(catalog)
    finally:
        await engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
async def two_databases(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """Two fresh, empty databases on one backend: one to migrate, one for ``create_all``."""
    from tests.conftest import _skip_or_fail_without_postgres, drop_postgres_database, fresh_postgres_url

    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", f"sqlite+aiosqlite:///{tmp_path / 'made.db'}"
        return
    _skip_or_fail_without_postgres()
    urls = (await fresh_postgres_url(), await fresh_postgres_url())
    try:
        yield urls
    finally:
        for url in urls:
            await drop_postgres_database(url)


@pytest.mark.parametrize("upto", [12, 10])
async def test_a_database_of_the_numbered_migrations_is_taken_over_and_equals_the_metadata(two_databases: tuple[str, str],
                                                                                           upto: int) -> None:
    """Issue 40: a database made by main's numbered migrations (all of them, or stopped at 10) is
    completed, stamped at the baseline and left with the schema schema.py declares."""
    url, other = two_databases
    engine = create_engine(url)
    try:
        await make_legacy(engine, upto)
        await _seed(engine)
        before = await schema_state(engine)
        assert (before.current, before.legacy_version, before.legacy_missing) == (None, upto, tuple(range(upto + 1, LAST_STEP + 1)))
        async with engine.connect() as conn:
            instance = (await conn.execute(select(nod_meta.c.value).where(nod_meta.c.key == "instance"))).scalar()

        done = await migrate(engine)

        assert done == Upgrade(HEAD, applied=AFTER_STAMP,
                               legacy_steps=tuple(range(upto + 1, LAST_STEP + 1)), stamped=legacy.STAMP)
        assert (await schema_state(engine)).current == HEAD and await migrate(engine) == Upgrade(HEAD)
        found, facts = await _read(engine)
        if engine.dialect.name == "sqlite":  # the numbered migrations' nullable keys: see SQLITE_LEGACY_NULLABLE_KEYS
            found = [d for d in found if not is_legacy_sqlite_nullable_key(d)]
        assert found == []
        assert facts == await _made_by_metadata(other)
        async with engine.connect() as conn:
            assert not await conn.run_sync(legacy.has_ledger)  # one record of the schema: alembic_version
            assert (await conn.execute(select(nod_meta.c.value).where(nod_meta.c.key == "instance"))).scalar() == instance
        assert await _found(engine, "porto") == [2] and await _found(engine, "sister") == [1, 2]  # own words, and context
        await _seed(engine, "bob")  # the search trigger still fills the index after the takeover
        assert await _found(engine, "porto") == [2, 4]
    finally:
        await engine.dispose()


async def test_a_new_database_made_by_the_revisions_equals_the_metadata(two_databases: tuple[str, str]) -> None:
    url, other = two_databases
    engine = create_engine(url)
    try:
        assert await migrate(engine) == Upgrade(HEAD, applied=CHAIN)
        found, facts = await _read(engine)
        # no filter but schema.BACKEND_ONLY (the search DDL no Table declares), which env.py applies too
        assert found == []
        assert facts == await _made_by_metadata(other)
        async with engine.connect() as conn:
            keys = {row.key: row.value for row in await conn.execute(select(nod_meta.c.key, nod_meta.c.value))}
        assert sorted(keys) == ["health", "instance", "signing_key"] and len(keys["signing_key"]) == 64
        await _seed(engine)
        assert await _found(engine, "porto") == [2] and await _found(engine, "sister") == [1, 2]
    finally:
        await engine.dispose()


_UPGRADER = textwrap.dedent("""
    import asyncio, json, sys, time
    from adapters.storage.database import create_engine
    from adapters.storage.migrations import migrate

    async def main(url, start_at):
        engine = create_engine(url)
        time.sleep(max(0.0, start_at - time.time()))  # every process imported; now all at once
        try:
            done = await migrate(engine)
        finally:
            await engine.dispose()
        print(json.dumps({"applied": done.applied, "steps": done.legacy_steps, "stamped": done.stamped}))

    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
""")


@pytest.mark.parametrize("start", ["empty", "numbered migration 10"])
async def test_processes_starting_together_upgrade_once(two_databases: tuple[str, str], start: str) -> None:
    """Two processes start on one database at once: the lock lets one upgrade and the other
    find nothing to do, and the schema is whole. (Without the lock: a deadlock on PostgreSQL,
    "table ... already exists" on SQLite.)"""
    url, other = two_databases
    engine = create_engine(url)
    try:
        if start != "empty":
            await make_legacy(engine, 10)
        start_at = time.time() + 3  # after both have imported Nod: then at once
        procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", _UPGRADER, url, str(start_at),
                                                      stdout=subprocess.PIPE) for _ in range(2)]
        outputs = [await asyncio.wait_for(p.communicate(), 120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0]
        said = sorted((json.loads(out) for out, _ in outputs), key=lambda d: -len(d["applied"] + d["steps"]))
        nothing = {"applied": [], "steps": [], "stamped": None}
        if start == "empty":
            assert said == [{"applied": list(CHAIN), "steps": [], "stamped": None}, nothing]
        else:
            assert said == [{"applied": list(AFTER_STAMP), "steps": list(range(11, LAST_STEP + 1)), "stamped": legacy.STAMP},
                            nothing]
        found, facts = await _read(engine)
        if start != "empty" and engine.dialect.name == "sqlite":  # see SQLITE_LEGACY_NULLABLE_KEYS
            found = [d for d in found if not is_legacy_sqlite_nullable_key(d)]
        assert found == [] and facts == await _made_by_metadata(other)
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars().all() == [HEAD]
    finally:
        await engine.dispose()


async def test_a_database_newer_than_this_code_is_refused_with_a_sentence(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        await migrate(engine)
        async with writing(engine) as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
        sentence = ("The database's schema is at revision 0099_from_the_future, which this version of Nod does not "
                    "know: a newer Nod upgraded it. Run that version, or restore a backup taken before the upgrade.")
        with pytest.raises(StorageError) as refused:
            await migrate(engine)
        assert str(refused.value) == sentence
        assert (await schema_state(engine)).problem == sentence
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar() == "0099_from_the_future"
    finally:
        await engine.dispose()


async def test_a_ledger_an_older_nod_made_again_after_the_takeover_is_dropped(database_url: str) -> None:
    """An older Nod started on an upgraded database makes an empty schema_migrations and fails
    at its first step; the next upgrade drops that stray ledger and leaves the rest alone."""
    engine = create_engine(database_url)
    try:
        await migrate(engine)
        async with writing(engine) as conn:
            await conn.execute(text("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                                    "applied_at TEXT NOT NULL)"))
        assert await migrate(engine) == Upgrade(HEAD)
        async with engine.connect() as conn:
            assert not await conn.run_sync(legacy.has_ledger)
    finally:
        await engine.dispose()
