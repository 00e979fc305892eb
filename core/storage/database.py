"""The async engine: SQLite (WAL, busy timeout) by default, PostgreSQL with the same code.

SQLite's Python driver begins transactions lazily and in its own way; following
SQLAlchemy's advice for aiosqlite we switch that off and emit ``BEGIN`` ourselves, so a
transaction means the same thing on both backends.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from core.errors import ConfigError

DEFAULT_URL = "sqlite+aiosqlite:///nod.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    _set_wal(cursor)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _set_wal(cursor: Any, attempts: int = 100) -> None:
    """Switch to WAL; on a brand-new file several first connections race for that switch.

    The switch needs an exclusive lock and SQLite may answer "locked" without waiting for
    the busy timeout, so retry briefly. It happens once per database file: WAL persists.
    """
    for attempt in range(attempts):
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:  # the adapted driver's OperationalError
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.02)


def _sqlite_begin(connection: Any) -> None:
    connection.exec_driver_sql("BEGIN")


def create_engine(url: str = DEFAULT_URL, *, pool_size: int = 5) -> AsyncEngine:
    """An engine for ``url``; only the two supported async drivers are accepted."""
    try:
        parsed = make_url(url)
    except Exception as exc:  # SQLAlchemy raises ArgumentError with a long message
        raise ConfigError(f"NOD_DATABASE_URL is not a database URL: {url!r}.") from exc
    driver = parsed.drivername
    if driver == "sqlite+aiosqlite":
        engine = create_async_engine(parsed)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        return engine
    if driver == "postgresql+asyncpg":
        return create_async_engine(parsed, pool_size=pool_size, max_overflow=pool_size * 2)
    raise ConfigError(
        "NOD_DATABASE_URL must start with sqlite+aiosqlite:// or postgresql+asyncpg://, "
        f"not {driver}://."
    )
