"""Real faults in a real database, made from outside Nod: a write that the database refuses.

``refusing(url, table, event)`` installs a trigger that aborts every INSERT (or UPDATE) on
``table`` — what a full disk, a lost connection or a read-only file look like to Nod —
through a connection of its own (sqlite3 on the file, asyncpg on PostgreSQL), and removes it
on the way out. Nod's code is not touched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy.engine import make_url

from adapters.storage.database import sqlite_file

FAILURE = "simulated storage failure"


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def refusing(url: str, table: str, event: str = "INSERT") -> AsyncIterator[None]:
    path = sqlite_file(url)
    if path is not None:
        with sqlite3.connect(path) as db:
            db.execute(f"CREATE TRIGGER nod_test_refuse BEFORE {event} ON {table} "
                       f"BEGIN SELECT RAISE(ABORT, '{FAILURE}'); END")
        try:
            yield
        finally:
            with sqlite3.connect(path) as db:
                db.execute("DROP TRIGGER nod_test_refuse")
        return
    conn = await asyncpg.connect(_plain(url))
    try:
        await conn.execute(f"CREATE FUNCTION nod_test_refuse() RETURNS trigger LANGUAGE plpgsql AS "
                           f"$$ BEGIN RAISE EXCEPTION '{FAILURE}'; END $$")
        await conn.execute(f"CREATE TRIGGER nod_test_refuse BEFORE {event} ON {table} "
                           "FOR EACH ROW EXECUTE FUNCTION nod_test_refuse()")
        try:
            yield
        finally:
            await conn.execute(f"DROP TRIGGER nod_test_refuse ON {table}")
            await conn.execute("DROP FUNCTION nod_test_refuse()")
    finally:
        await conn.close()
