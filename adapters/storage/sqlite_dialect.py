"""SQLAlchemy's aiosqlite dialect, with one trip to SQLite's thread per statement.

Every aiosqlite call is a hop to the connection's thread and back, and the stock adapter
makes four per statement plus a rollback at the end of each connection's use. Here a
statement runs, is fetched and closed in one trip, and the rollback happens only when SQLite
holds an open transaction. Measurements and edge cases: docs/architecture.md (Storage).
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Sequence
from typing import Any

import aiosqlite
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)
from sqlalchemy.util import EMPTY_DICT

DRIVER = "sqlite+nod_aiosqlite"
_Outcome = tuple[list[Any], Any, int, int | None]  # rows, description, rowcount, lastrowid


def _run(connection: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> _Outcome:
    """In the connection's thread: what the adapter did in four trips, in one."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        rows = cursor.fetchall() if cursor.description else []
        return rows, cursor.description, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


class _OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    """A buffered cursor whose statement runs, is fetched and closed in one trip."""

    __slots__ = ("_description", "_rowcount", "_lastrowid", "_size")

    def __init__(self, adapt_connection: Any) -> None:  # no trip: the cursor opens in the thread
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]  # none held between statements
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self._size = 1

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> int:
        return self._lastrowid  # type: ignore[return-value]  # None before a statement, as sqlite3's

    @property
    def arraysize(self) -> int:
        return self._size

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._size = value

    async def _async_soft_close(self) -> None:  # the rows are read and the sqlite3 cursor closed already
        return

    def close(self) -> None:
        self._rows.clear()

    async def _execute_async(self, operation: Any, parameters: Any) -> Any:
        return await self._trip(operation, parameters, many=False)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        return await self._trip(operation, seq_of_parameters, many=True)

    async def _trip(self, operation: Any, parameters: Any, many: bool) -> None:
        driver = self._connection
        async with self._adapt_connection._execute_mutex:
            rows, self._description, self._rowcount, self._lastrowid = await driver._execute(
                lambda: _run(driver._conn, operation, parameters, many))
        self._rows = collections.deque(rows)


class _Connection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = _OneTripCursor if hasattr(aiosqlite.Connection, "_execute") else AsyncAdapt_aiosqlite_cursor


class _Driver(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> _Connection:
        stock = super().connect(*arg, **kw)
        return _Connection(self, stock._connection)


class NodSQLiteDialect(SQLiteDialect_aiosqlite):
    """aiosqlite in one trip a statement, rolling back only an open transaction."""

    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> _Driver:
        return _Driver(aiosqlite, sqlite3)

    def do_rollback(self, dbapi_connection: Any) -> None:
        try:
            open_transaction = bool(dbapi_connection.driver_connection.in_transaction)
        except Exception:  # noqa: BLE001 - closed or unknown: roll back as SQLAlchemy would
            open_transaction = True
        if open_transaction:
            super().do_rollback(dbapi_connection)  # type: ignore[no-untyped-call]


def register() -> None:
    """Make ``sqlite+nod_aiosqlite`` known to SQLAlchemy (idempotent)."""
    registry.register(DRIVER.replace("+", "."), __name__, NodSQLiteDialect.__name__)
