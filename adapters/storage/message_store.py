"""Messages and threads: the conversation as stored, owner's words and Nod's alike.

Appending is idempotent on (owner, channel, external id): a redelivered webhook or a
re-run import returns the message already stored instead of a second copy. What is
stored is the message as it was made (``core.message.Message``: storable text, its secret
flag detected), so both backends store the same thing. ``/reset`` ends the active thread
and opens a new one; the old one stays stored but is no longer the conversation.

An owner's request is stored ``awaiting`` its answer; what answers it is stored and settles
it in one unit of work (``append_within``, adapters.storage.requests and unit_of_work), so
after a crash ``awaiting_requests`` names exactly the requests no turn finished.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage import id_horizon, outbox
from adapters.storage.database import writing
from adapters.storage.message_edits import MessageEdits
from adapters.storage.message_rows import Prepared, insert_rows, insert_statement, prepare, row_values
from adapters.storage.requests import settling
from adapters.storage.schema import messages, owners, threads
from core.attachments.media import MediaRef
from core.clock import Clock
from core.message import Appended, Message, Owed, Role, StoredMessage, VoiceNote

IMPORT_BATCH = 2_000
log = logging.getLogger("nod.messages")


_COLUMNS = tuple(messages.c.keys())
_ROLES = {role.value: role for role in Role}


def stored_messages(result: Any) -> list[StoredMessage]:
    """Every row of ``result`` (a ``select(messages)``, maybe with columns after them).

    By position when the columns are the table's, in its order: a Row's attribute access
    costs half a microsecond a column, so a page of search results spent more building
    its thirty messages than SQLite spent finding them.
    """
    if tuple(result.keys())[:len(_COLUMNS)] != _COLUMNS:
        return [stored_message(row) for row in result]
    return [_from_values(*row[:len(_COLUMNS)]) for row in result]


def _from_values(
    id_: int, owner_id: int, thread_id: int, role: str, text: str, sent_at: datetime, channel: str,
    external_id: str | None, card_title: Any, attachment: Any, forwarded: Any, secret: Any, origin: str | None,
    address: str | None, awaiting: Any, voice: Any, voice_note: str | None, media: str | None, platform_id: str | None,
) -> StoredMessage:
    return StoredMessage(
        owner_id, _ROLES.get(role) or Role(role), text, channel, sent_at, external_id, bool(card_title),
        bool(attachment), bool(forwarded), origin, address, bool(awaiting), bool(voice),
        VoiceNote.from_json(voice_note), MediaRef.from_json(media), platform_id,
        id=id_, thread_id=thread_id, secret=bool(secret),
    )


def _opening_thread(dialect_name: str) -> Any:
    """INSERT into threads that leaves the owner's active thread alone when there is one already."""
    insert_for = pg_insert if dialect_name == "postgresql" else sqlite_insert
    return insert_for(threads).on_conflict_do_nothing(index_elements=[threads.c.owner_id],
                                                      index_where=threads.c.ended_at.is_(None))


def stored_message(row: Any) -> StoredMessage:
    """One row read by name (a select holding the messages columns, in any order)."""
    return _from_values(*(getattr(row, name) for name in _COLUMNS))


class MessageStore(MessageEdits):
    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock
        self._statements: dict[tuple[str, bool], Any] = {}
        self._threaded: set[int] = set()  # owners seen with an active thread (a reset opens the next at once)

    @staticmethod
    def _active_thread_query(owner_id: Any) -> Any:  # an id, or a bind parameter for a built-once statement
        return select(threads.c.id).where(and_(threads.c.owner_id == owner_id, threads.c.ended_at.is_(None)))

    async def active_thread(self, owner_id: int) -> int:
        """The owner's current thread, opened on first use."""
        query = self._active_thread_query(owner_id)
        async with self._engine.connect() as conn:
            found = (await conn.execute(query)).scalar()
        if found is not None:
            return int(found)
        try:
            async with writing(self._engine) as conn:
                result = await conn.execute(
                    insert(threads)
                    .values(owner_id=owner_id, created_at=self._clock.now())
                    .returning(threads.c.id)
                )
                return int(result.scalar_one())
        except IntegrityError:  # another writer opened it first: use theirs
            async with self._engine.connect() as conn:
                return int((await conn.execute(query)).scalar_one())

    async def reset_thread(self, owner_id: int) -> int:
        """End the active thread and open a new one; return the new thread's id."""
        now = self._clock.now()
        async with writing(self._engine) as conn:
            if conn.dialect.name == "postgresql":  # two resets at once: the second waits, then ends the first's thread
                await conn.execute(select(owners.c.id).where(owners.c.id == owner_id).with_for_update())
            await conn.execute(settling(owner_id, None))  # what awaited in the ended thread needs no answer
            await conn.execute(
                update(threads)
                .where(and_(threads.c.owner_id == owner_id, threads.c.ended_at.is_(None)))
                .values(ended_at=now)
            )
            result = await conn.execute(
                insert(threads).values(owner_id=owner_id, created_at=now).returning(threads.c.id)
            )
            return int(result.scalar_one())

    async def append(self, message: Message) -> Appended:
        """Store one message in the active thread, or return the copy already stored.

        One statement in the usual case — the thread found by a subquery, the row returned
        by the insert — because this is what every webhook waits for before it is answered.
        """
        values = row_values(message, 0)
        if message.owner_id not in self._threaded:  # an owner who has a thread always has one
            await self.active_thread(message.owner_id)
            self._threaded.add(message.owner_id)
        try:
            return await self._append(message, self._statement(by_subquery=True), {**values, "thread_owner": message.owner_id})
        except IntegrityError:  # no active thread yet (thread_id NULL): open one, then store
            values["thread_id"] = await self.active_thread(message.owner_id)
            return await self._append(message, self._statement(by_subquery=False), values)

    def _statement(self, by_subquery: bool) -> Any:
        """The insert, built once: building a statement costs more than running it."""
        key = (self._engine.dialect.name, by_subquery)
        statement = self._statements.get(key)
        if statement is None:
            statement = insert_statement(key[0])
            if by_subquery:
                thread = self._active_thread_query(bindparam("thread_owner")).scalar_subquery()
                statement = statement.values(thread_id=thread)
            statement = statement.returning(*messages.c)
            self._statements[key] = statement
        return statement

    async def _append(self, message: Message, statement: Any, values: dict[str, Any]) -> Appended:
        async with writing(self._engine, single_statement=True) as conn:
            await id_horizon.enter(conn)
            appended = await self._insert(conn, message, statement, values)
        if appended.created:
            stored = appended.message
            log.info("message_stored owner=%s message=%s role=%s channel=%s secret=%s",
                     stored.owner_id, stored.id, stored.role.value, stored.channel, stored.secret)
        return appended

    async def _insert(self, conn: AsyncConnection, message: Message, statement: Any, values: dict[str, Any]) -> Appended:
        row = (await conn.execute(statement, values)).first()
        if row is not None:
            return Appended(stored_message(row), created=True)
        existing = await conn.execute(select(messages).where(
            messages.c.owner_id == message.owner_id, messages.c.channel == message.channel,
            messages.c.external_id == message.external_id))
        stored = stored_message(existing.one())
        log.info("message_redelivered owner=%s message=%s", stored.owner_id, stored.id)
        return Appended(stored, created=False)

    async def append_within(self, conn: AsyncConnection, message: Message) -> Appended:
        """``append`` inside a unit of work's transaction (adapters.storage.unit_of_work): the thread
        found, or opened, on its connection, so it commits or rolls back with the rest."""
        await id_horizon.enter(conn)
        thread_id = (await conn.execute(self._active_thread_query(message.owner_id))).scalar()
        if thread_id is None:  # a reminder to an owner who never wrote: another writer may open it first
            await conn.execute(_opening_thread(conn.dialect.name).values(owner_id=message.owner_id,
                                                                        created_at=self._clock.now()))
            thread_id = (await conn.execute(self._active_thread_query(message.owner_id))).scalar_one()
        return await self._insert(conn, message, self._statement(by_subquery=False), row_values(message, int(thread_id)))

    async def delivered(self, reply_id: int) -> bool:
        """The channel took the reply (or gave up on it): no longer owed; False when it was not."""
        return await outbox.remove(self._engine, reply_id)

    async def undelivered(self, stored_before: datetime, channels: Collection[str], limit: int = 100) -> list[Owed]:
        """Replies on ``channels`` stored before ``stored_before`` that no channel has taken yet, oldest first."""
        rows = await outbox.stored_before(self._engine, stored_before, channels, limit)
        return [Owed(stored_message(row), bool(row.unprompted)) for row in rows]

    async def newest_awaiting(self, owner_id: int) -> StoredMessage | None:
        """The owner's newest request still awaiting its answer: the one a turn answers now."""
        query = (select(messages).where(messages.c.owner_id == owner_id, messages.c.awaiting)
                 .order_by(messages.c.id.desc()).limit(1))
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return stored_message(row) if row is not None else None

    async def settle(self, owner_id: int, up_to: int | None = None) -> None:
        """The owner's requests up to ``up_to`` (all when None) need no answer any more."""
        async with writing(self._engine) as conn:
            await conn.execute(settling(owner_id, up_to))

    async def pending_voice(self, owner_id: int, up_to: int) -> list[StoredMessage]:
        """The owner's voice notes up to ``up_to`` still awaiting transcription, oldest first."""
        query = (select(messages).where(messages.c.owner_id == owner_id, messages.c.awaiting, messages.c.id <= up_to,
                                        messages.c.voice_note.is_not(None)).order_by(messages.c.id))
        async with self._engine.connect() as conn:
            return [stored_message(r) for r in (await conn.execute(query)).all()]

    async def drop_voice(self, note_id: int) -> None:
        """Give up on transcribing a note (refused, failed): it stays the flagged attachment it is."""
        async with writing(self._engine) as conn:
            await conn.execute(update(messages).where(messages.c.id == note_id).values(voice_note=None))

    async def is_awaiting(self, message_id: int) -> bool:
        async with self._engine.connect() as conn:
            found = (await conn.execute(select(messages.c.awaiting).where(messages.c.id == message_id))).scalar()
        return bool(found)

    async def awaiting_requests(self) -> list[StoredMessage]:
        """Each owner's newest request that no turn has answered, oldest owner first."""
        query = select(messages).where(messages.c.awaiting).order_by(messages.c.owner_id, messages.c.id)
        async with self._engine.connect() as conn:
            rows = [stored_message(r) for r in (await conn.execute(query)).all()]
        newest: dict[int, StoredMessage] = {}
        for message in rows:
            newest[message.owner_id] = message
        return list(newest.values())

    async def append_many(self, owner_id: int, batch: Sequence[Message]) -> int:
        """Store a batch in the active thread in one transaction; return how many were new."""
        if not batch:
            return 0
        thread_id = await self.active_thread(owner_id)
        return await self.insert_rows(owner_id, [row_values(m, thread_id) for m in batch])

    def prepare_rows(self, rows: list[dict[str, Any]]) -> Prepared:
        """The Python part of inserting ``rows`` (adapters.storage.message_rows), done ahead."""
        return prepare(self._engine.dialect, rows)

    async def insert_rows(self, owner_id: int, rows: list[dict[str, Any]] | Prepared) -> int:
        """Store rows made by ``row_values`` (or prepared) all or none; how many were new."""
        added = await insert_rows(self._engine, rows)
        log.info("messages_imported owner=%s new=%s lines=%s", owner_id, added, len(rows.rows if isinstance(rows, Prepared) else rows))
        return added

    async def holds_keys_from(self, owner_id: int, channel: str, prefix: str) -> bool:
        """Whether any of the owner's messages on ``channel`` has an external id starting with
        ``prefix``. Compared as a prefix, not as a range of text: under PostgreSQL's linguistic
        collations ``'sha1:ab' < 'sha1;'`` is false (punctuation weighs last), so a range
        would miss every key. Reads the owner's keys on the channel from the index, once an
        import (SQLite, a million: 0.12-0.16 s cached, 1.3 s from a cold disk)."""
        query = select(messages.c.id).where(
            messages.c.owner_id == owner_id, messages.c.channel == channel,
            func.substr(messages.c.external_id, 1, len(prefix)) == prefix).limit(1)
        async with self._engine.connect() as conn:
            return (await conn.execute(query)).first() is not None

    async def stored_keys(self, owner_id: int, channel: str, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the owner's messages on ``channel`` are stored under."""
        if not keys:
            return set()
        query = select(messages.c.external_id).where(
            messages.c.owner_id == owner_id, messages.c.channel == channel, messages.c.external_id.in_(list(keys)))
        async with self._engine.connect() as conn:
            found: list[Any] = list((await conn.execute(query)).scalars())
        return {str(k) for k in found}

    async def get(self, message_id: int) -> StoredMessage | None:
        async with self._engine.connect() as conn:
            row = (await conn.execute(select(messages).where(messages.c.id == message_id))).first()
        return stored_message(row) if row else None

    async def get_many(self, ids: Iterable[int]) -> dict[int, StoredMessage]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        async with self._engine.connect() as conn:
            found = stored_messages(await conn.execute(select(messages).where(messages.c.id.in_(wanted))))
        return {message.id: message for message in found}

    async def recent(
        self, owner_id: int, limit: int, role: Role | None = None
    ) -> list[StoredMessage]:
        """The last ``limit`` messages of the active thread, oldest first."""
        thread_id = await self.active_thread(owner_id)
        query = select(messages).where(messages.c.thread_id == thread_id)
        if role is not None:
            query = query.where(messages.c.role == role.value)
        query = query.order_by(messages.c.id.desc()).limit(limit)
        async with self._engine.connect() as conn:
            rows = stored_messages(await conn.execute(query))
        return rows[::-1]

    async def thread_tail(self, thread_id: int, limit: int) -> list[StoredMessage]:
        """The thread's last ``limit`` messages, oldest first."""
        if limit <= 0:
            return []
        query = (
            select(messages)
            .where(messages.c.thread_id == thread_id)
            .order_by(messages.c.id.desc())
            .limit(limit)
        )
        async with self._engine.connect() as conn:
            rows = stored_messages(await conn.execute(query))
        return rows[::-1]

    async def owner_messages_after(
        self, owner_id: int, after_id: int, limit: int, sent_before: datetime
    ) -> list[StoredMessage]:
        """The owner's own messages (every thread) with id above ``after_id``, in id order,
        stopping at the first one sent at or after ``sent_before``: reflection's next batch."""
        query = (
            select(messages)
            .where(messages.c.owner_id == owner_id, messages.c.role == Role.OWNER.value, messages.c.id > after_id)
            .order_by(messages.c.id)
            .limit(limit)
        )
        async with self._engine.connect() as conn:
            rows = [stored_message(r) for r in (await conn.execute(query)).all()]
        young = next((n for n, m in enumerate(rows) if m.sent_at >= sent_before), len(rows))
        return rows[:young]

    async def count(self, owner_id: int) -> int:
        async with self._engine.connect() as conn:
            query = select(func.count()).select_from(messages).where(messages.c.owner_id == owner_id)
            return int((await conn.execute(query)).scalar_one())
