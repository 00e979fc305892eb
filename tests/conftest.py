"""Shared fixtures: a real database per test, SQLite always and PostgreSQL when configured.

PostgreSQL tests need ``NOD_TEST_POSTGRES_URL`` (``.ci/run`` starts a throwaway cluster
and sets it); each test gets a database of its own, dropped afterwards. With
``NOD_REQUIRE_POSTGRES=1`` (CI) a missing server fails instead of skipping. A test that
takes ``engine`` gets its database already migrated, a copy of the session's template
(``tests/templates.py``); one that takes only ``database_url`` gets it empty.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine
from tests.fakes.model_server import FakeModelServer
from tests.templates import drop_templates, migrated_postgres_url, migrated_sqlite
from tests.templates import plain_dsn as _plain_dsn

POSTGRES_URL = os.environ.get("NOD_TEST_POSTGRES_URL")


async def fresh_postgres_url() -> str:
    """A new empty database on the test server; returns its SQLAlchemy URL."""
    assert POSTGRES_URL
    name = f"nod_test_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(_plain_dsn(POSTGRES_URL, "postgres"))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)


async def drop_postgres_database(url: str) -> None:
    name = make_url(url).database
    admin = await asyncpg.connect(_plain_dsn(url, "postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def _skip_or_fail_without_postgres() -> None:
    if POSTGRES_URL:
        return
    if os.environ.get("NOD_REQUIRE_POSTGRES") == "1":
        pytest.fail("NOD_REQUIRE_POSTGRES=1 but NOD_TEST_POSTGRES_URL is not set.")
    pytest.skip("PostgreSQL not configured: set NOD_TEST_POSTGRES_URL (.ci/run does).")


@pytest.fixture(scope="session", autouse=True)
def _templates() -> Iterator[None]:
    """The migrated templates live for the session (tests/templates.py); PostgreSQL's is dropped at its end."""
    yield
    if POSTGRES_URL:
        asyncio.run(drop_templates())


@pytest.fixture(params=["sqlite", "postgresql"])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database URL on each backend: empty, or, when the test also takes ``engine``,
    migrated already (a copy of the template, which is what ``engine`` would make of it)."""
    migrated = "engine" in request.fixturenames
    if request.param == "sqlite":
        if migrated:
            yield await migrated_sqlite(tmp_path / "nod.db")
        else:
            yield f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}"
        return
    _skip_or_fail_without_postgres()
    url = await (migrated_postgres_url() if migrated else fresh_postgres_url())
    try:
        yield url
    finally:
        await drop_postgres_database(url)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A migrated engine on a fresh database (``database_url`` made it from the template)."""
    engine = create_engine(database_url, pool_size=10)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh PostgreSQL database for tests that need several workers on one server."""
    _skip_or_fail_without_postgres()
    url = await fresh_postgres_url()
    try:
        yield url
    finally:
        await drop_postgres_database(url)


@pytest.fixture
async def server() -> AsyncIterator[FakeModelServer]:
    """The scripted OpenAI-compatible model server on a loopback port."""
    fake = await FakeModelServer().start()
    try:
        yield fake
    finally:
        await fake.stop()
