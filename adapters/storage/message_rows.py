"""A message as a row of the messages table, and many of them inserted at once.

``row_values`` is the one place a message becomes a row; ``insert_rows`` skips a redelivered
external id. Why SQLite's batches bypass SQLAlchemy's general path, measured: docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from itertools import chain
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import id_horizon
from adapters.storage.database import writing
from adapters.storage.schema import messages
from core.message import Message

KEY = ("owner_id", "channel", "external_id")  # a message seen again under these is skipped
SQLITE_MAX_PARAMETERS = 32_766  # SQLite's limit on a statement's parameters since 3.32


def row_values(message: Message, thread_id: int) -> dict[str, Any]:
    """The message as a row of ``thread_id``: made under core.message's rules, so written as it is."""
    return {
        "owner_id": message.owner_id,
        "thread_id": thread_id,
        "role": message.role.value,
        "text": message.text,
        "sent_at": message.sent_at,
        "channel": message.channel,
        "external_id": message.external_id,
        "card_title": message.card_title,
        "attachment": message.attachment,
        "forwarded": message.forwarded,
        "secret": message.secret,
        "origin": message.origin,
        "address": message.address,
        "awaiting": message.awaiting,
        "voice": message.voice,
        "voice_note": message.voice_note.to_json() if message.voice_note is not None else None,
        "media": message.media.to_json() if message.media is not None else None,
        "platform_id": message.platform_id,
    }


def insert_statement(dialect_name: str) -> Any:
    """INSERT into messages that skips a message already stored under the same KEY."""
    insert_for = pg_insert if dialect_name == "postgresql" else sqlite_insert
    return insert_for(messages).on_conflict_do_nothing(index_elements=list(KEY))


@dataclass(frozen=True)
class Prepared:
    """A batch ready to insert: SQLite's one statement and its bound values, or else the rows."""

    rows: Sequence[dict[str, Any]]
    sql: str | None = None
    values: tuple[Any, ...] = ()


def prepare(dialect: Dialect, rows: Sequence[dict[str, Any]]) -> Prepared:
    """The batch's statement and parameters, when SQLite takes it as one statement."""
    fits = bool(rows) and len(rows) * len(rows[0]) <= SQLITE_MAX_PARAMETERS
    if dialect.name != "sqlite" or not fits:
        return Prepared(rows)
    columns = tuple(rows[0])
    return Prepared(rows, _sqlite_sql(columns, len(rows)), _parameters(dialect, columns, rows))


async def insert_rows(engine: AsyncEngine, batch: Sequence[dict[str, Any]] | Prepared) -> int:
    """Store rows made by ``row_values`` (or ``prepare``d), all or none; how many were new."""
    prepared = batch if isinstance(batch, Prepared) else prepare(engine.dialect, batch)
    if not prepared.rows:
        return 0
    async with writing(engine, single_statement=prepared.sql is not None) as conn:
        if prepared.sql is not None:
            return int((await conn.exec_driver_sql(prepared.sql, prepared.values)).rowcount)
        await id_horizon.enter(conn)
        result = await conn.execute(insert_statement(conn.dialect.name).returning(messages.c.id), list(prepared.rows))
        return len(result.all())


def _parameters(dialect: Dialect, columns: tuple[str, ...], rows: Sequence[dict[str, Any]]) -> tuple[Any, ...]:
    """The rows' values, row after row, each bound by its column's processor.

    Column by column: most of an import's columns hold one value or two (flags, the owner,
    the thread), processed once each; the others in one pass. Value by value, the same
    took a fifth of an import's Python time.
    """
    bound = []
    for name, processor in zip(columns, _bound(dialect, columns), strict=True):
        column = [row[name] for row in rows]
        if processor is not None:
            distinct = set(column) if len(column) > 16 else set()
            # not times: two equal ones can be different instants (a repeated hour's ``fold``)
            if 0 < len(distinct) <= 16 and not any(isinstance(v, datetime) for v in distinct):
                processed = {v: _value(v, processor) for v in distinct}
                column = [processed[v] for v in column]
            else:
                column = [_value(v, processor) for v in column]
        bound.append(column)
    return tuple(chain.from_iterable(zip(*bound, strict=True)))


def _value(value: Any, processor: Callable[[Any], Any]) -> Any:
    return None if value is None else processor(value)


@lru_cache(maxsize=4)
def _bound(dialect: Dialect, columns: tuple[str, ...]) -> tuple[Callable[[Any], Any] | None, ...]:
    """Each column's bind processor for ``dialect``: its dialect's own type, as SQLAlchemy
    applies it (the generic DateTime's would leave a datetime for sqlite3 to format)."""
    return tuple(messages.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns)


@lru_cache(maxsize=8)
def _sqlite_sql(columns: tuple[str, ...], count: int) -> str:
    one = "(" + ", ".join("?" * len(columns)) + ")"
    return (f"INSERT INTO messages ({', '.join(columns)}) VALUES {', '.join([one] * count)} "
            f"ON CONFLICT ({', '.join(KEY)}) DO NOTHING")
