"""Migrated test databases without running the migrations for each: one template per backend, copied.

Alembic's upgrade of an empty database (every table, index and trigger, about 40 ms of CPU)
ran for each of several hundred tests. Here it runs once per test process and backend:
SQLite's template is a file, copied per test; PostgreSQL's is a database, each test's made
from it by ``CREATE DATABASE … TEMPLATE``. A copy is the database ``migrate`` would have made,
down to the two values the baseline draws per database (the instance id the derived index
checks, the signing key), which each copy draws again. ``tests/integration/test_templates.py``
proves both; the migration tests themselves still migrate empty databases.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import sqlite3
import tempfile
import uuid
from contextlib import closing
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from adapters.storage.database import create_engine
from adapters.storage.migrations import migrate

POSTGRES_URL = os.environ.get("NOD_TEST_POSTGRES_URL")
_REDRAW_SQLITE = """UPDATE nod_meta SET value = lower(hex(randomblob(16))) WHERE key = 'instance';
UPDATE nod_meta SET value = lower(hex(randomblob(32))) WHERE key = 'signing_key';"""
_REDRAW_POSTGRES = """UPDATE nod_meta SET value = replace(gen_random_uuid()::text, '-', '') WHERE key = 'instance';
UPDATE nod_meta SET value = replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
    WHERE key = 'signing_key';"""
_made: dict[str, str] = {}  # backend -> the template's file or database name, once made in this process
_making: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = {}


def plain_dsn(url: str, database: str) -> str:
    """asyncpg's DSN for ``database`` on the server of SQLAlchemy URL ``url``."""
    return make_url(url).set(drivername="postgresql", database=database).render_as_string(hide_password=False)


async def _admin(statement: str) -> None:
    assert POSTGRES_URL
    admin = await asyncpg.connect(plain_dsn(POSTGRES_URL, "postgres"))
    try:
        await admin.execute(statement)
    finally:
        await admin.close()


async def _migrated(url: str) -> None:
    engine = create_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()  # SQLite: checkpoints the WAL into the file; PostgreSQL: a template has no sessions


def _lock(backend: str) -> asyncio.Lock:
    """One maker per backend at a time, on whichever event loop the first test to need it runs."""
    loop = asyncio.get_running_loop()
    held = _making.get(backend)
    if held is None or held[0] is not loop:
        held = _making[backend] = (loop, asyncio.Lock())
    return held[1]


async def _template(backend: str) -> str:
    async with _lock(backend):
        if backend not in _made:
            _made[backend] = await (_sqlite_template() if backend == "sqlite" else _postgres_template())
    return _made[backend]


async def _sqlite_template() -> str:
    folder = Path(tempfile.mkdtemp(prefix="nod-template-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    await _migrated(f"sqlite+aiosqlite:///{folder / 'nod.db'}")
    assert not (folder / "nod.db-wal").exists(), "the template's last writes are still in its WAL: copy them too"
    return str(folder / "nod.db")


async def _postgres_template() -> str:
    assert POSTGRES_URL
    name = f"nod_template_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}"')
    await _migrated(make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False))
    return name


async def migrated_sqlite(path: Path) -> str:
    """Make ``path`` a newly migrated SQLite database; its SQLAlchemy URL."""
    shutil.copyfile(await _template("sqlite"), path)
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(_REDRAW_SQLITE)
    return f"sqlite+aiosqlite:///{path}"


async def migrated_postgres_url() -> str:
    """A new migrated database on the test server (``NOD_TEST_POSTGRES_URL``); its SQLAlchemy URL."""
    assert POSTGRES_URL
    template = await _template("postgresql")
    name = f"nod_test_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    conn = await asyncpg.connect(plain_dsn(url, name))
    try:
        await conn.execute(_REDRAW_POSTGRES)
    finally:
        await conn.close()
    return url


async def drop_templates() -> None:
    """Drop the PostgreSQL template, if one was made (the SQLite one goes with its folder at exit)."""
    name = _made.pop("postgresql", None)
    if name is not None:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
