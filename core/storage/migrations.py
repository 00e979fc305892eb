"""Numbered schema migrations, run on start; they only ever add.

Each migration is plain DDL per backend, applied once and recorded in
``schema_migrations``. Several processes may start at once: PostgreSQL serialises them
with an advisory lock, SQLite with a write lock taken before the version is read. A
migration never drops or rewrites data, so a database from any earlier version upgrades
in place.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.storage.database import writing
from core.storage.migration_steps import MIGRATIONS, Migration

__all__ = ["MIGRATIONS", "Migration", "applied_versions", "migrate"]

_ADVISORY_LOCK_KEY = 7_406_131  # any constant: "this is Nod migrating"


_LEDGER = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)


async def _lock(conn: AsyncConnection) -> None:
    if conn.dialect.name == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _ADVISORY_LOCK_KEY})
    else:  # any write takes SQLite's write lock now, before the version is read
        await conn.execute(text("UPDATE schema_migrations SET version = version WHERE 0 = 1"))


async def applied_versions(conn: AsyncConnection) -> set[int]:
    rows = await conn.execute(text("SELECT version FROM schema_migrations"))
    return {int(row[0]) for row in rows}


async def migrate(engine: AsyncEngine) -> list[int]:
    """Apply every migration not yet applied, in order; return the versions applied now."""
    async with writing(engine) as conn:
        if conn.dialect.name == "postgresql":
            await _lock(conn)
        await conn.execute(text(_LEDGER))
    applied_now: list[int] = []
    async with writing(engine) as conn:
        await _lock(conn)
        done = await applied_versions(conn)
        for migration in MIGRATIONS:
            if migration.version in done:
                continue
            statements = migration.sqlite if conn.dialect.name == "sqlite" else migration.postgresql
            for statement in statements:
                await conn.execute(text(statement))
            await conn.execute(
                text(
                    "INSERT INTO schema_migrations (version, name, applied_at) "
                    "VALUES (:v, :n, CURRENT_TIMESTAMP)"
                ),
                {"v": migration.version, "n": migration.name},
            )
            applied_now.append(migration.version)
    return applied_now
