"""Per-owner locks for work that must not overlap even with several workers.

On PostgreSQL a session-level advisory lock every worker sees, released when the work ends or
its connection dies; on SQLite, one process, an asyncio lock per owner. ``hold`` is a *try*
lock (maintenance skips a busy owner); ``turn`` *waits* by polling, and a worker's turn locks
share one connection. Why polling and one connection, measured: docs/architecture.md (Storage).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

log = logging.getLogger("nod.storage")
_NAMESPACE = 0x4E0D  # the advisory-lock key space for per-owner maintenance
_TURNS = 0x4E0E  # ... and for per-owner agent turns
TURN_POLL_S = 0.1
_TRY_LOCK = "SELECT pg_try_advisory_lock(:ns, :owner)"
_UNLOCK = "SELECT pg_advisory_unlock(:ns, :owner)"


class _Held:
    def __init__(self, locks: DatabaseLocks, owner_id: int) -> None:
        self._locks = locks
        self._owner_id = owner_id
        self._conn: AsyncConnection | None = None
        self._local: asyncio.Lock | None = None
        self._got = False

    async def __aenter__(self) -> bool:
        engine = self._locks.engine
        if engine.dialect.name != "postgresql":
            self._local = self._locks.local.setdefault(self._owner_id, asyncio.Lock())
            if self._local.locked():
                return False
            await self._local.acquire()
            self._got = True
            return True
        self._conn = await engine.connect()
        query = text(_TRY_LOCK)
        self._got = bool((await self._conn.execute(query, {"ns": _NAMESPACE, "owner": self._owner_id})).scalar())
        await self._conn.commit()
        if not self._got:
            await self._conn.close()
            self._conn = None
        return self._got

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._local is not None and self._got:
            self._local.release()
        if self._conn is not None:
            try:
                await self._conn.execute(text(_UNLOCK),
                                         {"ns": _NAMESPACE, "owner": self._owner_id})
                await self._conn.commit()
            finally:
                await self._conn.close()


class DatabaseLocks:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.local: dict[int, asyncio.Lock] = {}
        self._turn_conn: AsyncConnection | None = None
        self._turn_guard = asyncio.Lock()
        self._releasing: set[asyncio.Future[bool]] = set()

    def hold(self, owner_id: int) -> _Held:
        return _Held(self, owner_id)

    @asynccontextmanager
    async def turn(self, owner_id: int) -> AsyncIterator[None]:
        if self.engine.dialect.name != "postgresql":
            yield
            return
        key = {"ns": _TURNS, "owner": owner_id}
        while not await self._try_turn_lock(key):
            await asyncio.sleep(TURN_POLL_S)
        try:
            yield
        finally:
            await asyncio.shield(self._on_turn_conn(_UNLOCK, key))

    async def _try_turn_lock(self, key: dict[str, int]) -> bool:
        """One try; a turn cancelled meanwhile lets the statement finish (a statement cut
        off mid-flight would break the shared connection) and gives back a lock it took."""
        attempt = asyncio.ensure_future(self._on_turn_conn(_TRY_LOCK, key))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            attempt.add_done_callback(lambda done: self._give_back_if_taken(done, key))
            raise

    def _give_back_if_taken(self, attempt: asyncio.Future[bool], key: dict[str, int]) -> None:
        if attempt.cancelled() or attempt.exception() is not None or not attempt.result():
            return
        release = asyncio.ensure_future(self._on_turn_conn(_UNLOCK, key))
        self._releasing.add(release)
        release.add_done_callback(self._releasing.discard)

    async def _on_turn_conn(self, statement: str, key: dict[str, int]) -> bool:
        """``statement`` on the shared connection. A connection the server dropped (a restart)
        is replaced once: a try-lock runs again on the new one; an unlock has nothing left to
        release, since a session's advisory locks end with it."""
        async with self._turn_guard:
            for attempt in (1, 2):
                try:
                    if self._turn_conn is None:
                        self._turn_conn = await self.engine.connect()
                    result = bool((await self._turn_conn.execute(text(statement), key)).scalar())
                    await self._turn_conn.commit()
                    return result
                except Exception as exc:
                    await self._drop_turn_conn()  # its locks are gone with it
                    if attempt == 2 or not getattr(exc, "connection_invalidated", False):
                        raise
                    log.warning("turn_lock_connection_lost; reconnecting")
                    if statement == _UNLOCK:
                        return False
            raise AssertionError("unreachable")

    async def _drop_turn_conn(self) -> None:
        conn, self._turn_conn = self._turn_conn, None
        if conn is not None:
            try:
                await conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone either way
                pass

    async def close(self) -> None:
        if self._releasing:
            await asyncio.wait(set(self._releasing))
        async with self._turn_guard:
            await self._drop_turn_conn()
