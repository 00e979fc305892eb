"""The async engine: SQLite (WAL, busy timeout) by default, PostgreSQL with the same code.

SQLite has one writer at a time, so every write goes through ``writing``: on SQLite it
queues behind a lock per engine and takes the write lock up front (``BEGIN IMMEDIATE``);
reads begin no transaction. Both engines hide statement parameters, so a failing statement
never puts a message's text in a log. Why, measured: docs/architecture.md (Storage).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from adapters.storage import sqlite_dialect
from core.errors import ConfigError, StorageError

DEFAULT_URL = "sqlite+aiosqlite:///nod.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    _set_wal(cursor)
    cursor.execute("PRAGMA synchronous = FULL")  # a commit is on disk before a webhook is acknowledged
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


class _OpenedFile:
    """The SQLite file an engine opened: a write into a deleted or replaced file is refused.

    SQLite keeps writing to a file unlinked under it; a message stored there is lost at the
    next start while its webhook got 200. Checked (one ``stat`` and three ``access``) before every write
    and whenever a connection is handed out.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.identity: tuple[int, int] | None = None

    def opened(self) -> None:
        if self.identity is None:
            found = self.path.stat()
            self.identity = (found.st_dev, found.st_ino)

    def check(self) -> None:
        if self.identity is None:
            return
        try:
            found = self.path.stat()
        except OSError:
            raise StorageError(f"The SQLite file {self.path} is gone; restore it and restart Nod.") from None
        if (found.st_dev, found.st_ino) != self.identity:
            raise StorageError(f"The SQLite file {self.path} was replaced while Nod ran; restart Nod.")
        for path in (self.path, *(self.path.with_name(self.path.name + end) for end in ("-wal", "-shm"))):
            # a file made read-only or immutable under Nod: SQLite's write into the mapped -shm
            # would end the process with SIGBUS, so no write is begun
            if not os.access(path, os.W_OK) and path.exists():
                raise StorageError(f"The SQLite file {path} cannot be written (read-only or immutable); "
                                   "make it writable again.")


_FILES: weakref.WeakKeyDictionary[Any, _OpenedFile] = weakref.WeakKeyDictionary()


def check_opened_file(engine: AsyncEngine) -> None:
    """StorageError when the SQLite file this engine opened is no longer the one at its path."""
    opened = _FILES.get(engine.sync_engine)
    if opened is not None:
        opened.check()
_IMMEDIATE = "nod_begin_immediate"
# one lock per engine, forgotten with it (keyed by the sync engine, which the engine owns)
_WRITE_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()
_WRITERS: weakref.WeakKeyDictionary[Any, asyncio.Task[Any] | None] = weakref.WeakKeyDictionary()  # who holds it


def _sqlite_begin(connection: Any) -> None:
    """Only writes get a transaction; a read runs in autocommit, one statement at a time.

    Every aiosqlite call is a hop to its thread and back (about 0.2 ms), and a
    ``BEGIN`` plus the rollback at check-in tripled the hops of a one-row read. Nothing
    in Nod needs two reads to share a snapshot: searches bound every statement by a
    snapshot id, and writes re-check versions themselves.
    """
    if connection.info.pop(_IMMEDIATE, False):
        connection.exec_driver_sql("BEGIN IMMEDIATE")


@asynccontextmanager
async def writing(engine: AsyncEngine, single_statement: bool = False) -> AsyncIterator[AsyncConnection]:
    """A write transaction: committed on success, rolled back on error (docs/architecture.md, Storage).

    ``single_statement``: the body runs one write (plus reads), which SQLite applies
    atomically on its own, so no BEGIN and COMMIT round trips are spent on it.
    """
    if engine.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
        raise TypeError("writing() needs a transactional engine, not for_reads(engine): each statement would commit alone")
    if not is_sqlite(engine):
        async with engine.begin() as conn:
            yield conn
        return
    check_opened_file(engine)
    lock = _WRITE_LOCKS.setdefault(engine.sync_engine, asyncio.Lock())
    task = asyncio.current_task()
    if lock.locked() and _WRITERS.get(engine.sync_engine) is task:
        raise RuntimeError("A write inside a unit of work would wait for the unit of work itself: "
                           "write through its transaction's stores.")
    async with lock, engine.connect() as conn:
        _WRITERS[engine.sync_engine] = task
        try:
            if single_statement:
                yield conn
                return
            conn.sync_connection.info[_IMMEDIATE] = True  # type: ignore[union-attr]
            async with conn.begin():
                yield conn
        finally:
            _WRITERS.pop(engine.sync_engine, None)


def for_reads(engine: AsyncEngine) -> AsyncEngine:
    """``engine`` for connections that only read, a statement at a time.

    On PostgreSQL such a connection runs in autocommit: otherwise asyncpg's adapter opens
    each with ``BEGIN`` and the pool closes it with ``ROLLBACK``, three round trips for one
    read (a first search page paid six extra, ~1 ms with three workers on two cores). Under
    READ COMMITTED each statement sees its own snapshot either way, so nothing read in one
    connection loses a consistency it had. Never for writes, locks or ``SET LOCAL``: those
    need ``writing`` or ``engine.begin()``. SQLite's reads already begin no transaction.
    """
    if is_sqlite(engine):
        return engine
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def sqlite_file(url: str) -> Path | None:
    """The database file behind a SQLite URL, or None (PostgreSQL, in-memory).

    Both the URL operators write and an engine's own (``engine.url`` names the dialect in
    use, adapters.storage.sqlite_dialect) are understood.
    """
    for prefix in ("sqlite+aiosqlite:///", f"{sqlite_dialect.DRIVER}:///"):
        if url.startswith(prefix):
            if url.endswith(":memory:") or len(url) == len(prefix):
                return None
            return Path(url[len(prefix):].split("?", 1)[0])
    return None


def describe(url: str, first: bool = False) -> str:
    """The database as an operator knows it: the SQLite file, or host and name, never a password.

    ``first``: the words start a sentence.
    """
    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - a malformed URL is reported elsewhere
        named = "the database"
    else:
        if parsed.drivername.startswith("sqlite"):
            named = f"the SQLite file {parsed.database}" if parsed.database else "the in-memory SQLite database"
        else:
            named = f"the PostgreSQL database {parsed.database} on {parsed.host or 'localhost'}"
    return "T" + named[1:] if first else named


def storage_error(exc: BaseException, url: str) -> StorageError:
    """A driver's failure as one sentence that names the database and the driver's reason.

    Only the driver's own message is kept (``orig``): SQLAlchemy's wrapper adds the SQL.
    """
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StorageError(f"{describe(url, first=True)} failed: {reason.rstrip('.')}.")


def create_engine(url: str = DEFAULT_URL, *, pool_size: int = 5) -> AsyncEngine:
    """An engine for ``url``; only the two supported async drivers are accepted."""
    try:
        parsed = make_url(url)
    except Exception as exc:  # SQLAlchemy raises ArgumentError with a long message
        raise ConfigError(f"NOD_DATABASE_URL is not a database URL: {url!r}.") from exc
    driver = parsed.drivername
    if driver == "sqlite+aiosqlite":
        sqlite_dialect.register()
        engine = create_async_engine(  # reads hold no transaction: nothing to reset or roll back
            parsed.set(drivername=sqlite_dialect.DRIVER), pool_reset_on_return=None, hide_parameters=True)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        path = sqlite_file(url)
        if path is not None:
            opened = _FILES[engine.sync_engine] = _OpenedFile(path)
            event.listen(engine.sync_engine, "connect", lambda _conn, _record: opened.opened())
            # reads too: a WAL reader writes its read mark into the mapped -shm, which SIGBUSes on an
            # immutable file just as a write does; checked as a connection is handed out (a few µs)
            event.listen(engine.sync_engine, "checkout", lambda _conn, _record, _proxy: opened.check())
        return engine
    if driver == "postgresql+asyncpg":
        if importlib.util.find_spec("asyncpg") is None:
            raise ConfigError("NOD_DATABASE_URL is PostgreSQL, but asyncpg is not installed: "
                              "pip install -e '.[postgres]'.")
        # pre-ping: a pooled connection a PostgreSQL restart killed is replaced before use,
        # not found dead by the first statement after the restart
        return create_async_engine(parsed, pool_size=pool_size, max_overflow=pool_size * 2, hide_parameters=True,
                                   pool_pre_ping=True)
    raise ConfigError(
        "NOD_DATABASE_URL must start with sqlite+aiosqlite:// or postgresql+asyncpg://, "
        f"not {driver}://."
    )
