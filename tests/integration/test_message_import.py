"""Storing a long history: batches in file order, every row as any other writer stores it, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.message_import import append_in_order
from adapters.storage.message_rows import row_values
from adapters.storage.message_store import MessageStore
from adapters.storage.owner_store import OwnerStore
from adapters.storage.schema import messages
from core.clock import FixedClock
from core.errors import InvalidInput
from core.message import Message, Role, VoiceNote

T0 = datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC)


def _message(owner: int, n: int, text_: str, **extra: object) -> Message:
    role = Role.OWNER if n % 2 == 0 else Role.ASSISTANT
    return Message(owner, role, text_, "import", T0 + timedelta(minutes=n), f"line-{n}", **extra)  # type: ignore[arg-type]


async def _batches(*batches: Sequence[Message], fail_after: bool = False) -> AsyncIterator[Sequence[Message]]:
    for batch in batches:
        yield batch
    if fail_after:
        raise InvalidInput("Line 9 is not a message.")


async def test_an_import_stores_every_column_as_a_single_append_does(engine: AsyncEngine) -> None:
    """The bulk statement binds its parameters itself: a row must read back exactly like one
    SQLAlchemy stored (times, flags, JSON, text no driver takes), on either backend."""
    owners = OwnerStore(engine)
    one, other = (await owners.add("ana", "UTC", (), T0)).id, (await owners.add("bo", "UTC", (), T0)).id
    store = MessageStore(engine, FixedClock(T0))
    variants = [
        {}, {"card_title": True, "attachment": True}, {"forwarded": True, "origin": "event"},
        {"voice": True, "voice_note": VoiceNote("file-1", "note.ogg", "audio/ogg", 1234, 7)},
        {"address": "+351 912 345 678", "awaiting": True},
    ] * 4  # a batch of over 16 rows: a column of few values is bound once per value (message_rows)
    texts = ["plain words", "my card is 4111 1111 1111 1111", "a\x00b and \ud800", "ok 😀", "Ünïcödé"] * 4
    def said(owner: int, n: int, words: str, extra: dict[str, object]) -> Message:
        message = _message(owner, n, words, **extra)  # every other one on a whole second: no microseconds to print
        return replace(message, sent_at=message.sent_at.replace(microsecond=0)) if n % 2 else message

    for n, (words, extra) in enumerate(zip(texts, variants, strict=True)):
        await store.append(said(one, n, words, extra))
    imported = [said(other, n, words, extra) for n, (words, extra) in enumerate(zip(texts, variants, strict=True))]
    assert await append_in_order(store, other, _batches(imported[:2], imported[2:])) == 20
    columns = [c for c in messages.c if c.name not in ("id", "owner_id", "thread_id")]
    async with engine.connect() as conn:
        def stored(owner: int) -> object:
            return select(*columns).where(messages.c.owner_id == owner).order_by(messages.c.id)
        appended, bulk = (await conn.execute(stored(one))).all(), (await conn.execute(stored(other))).all()
        assert [tuple(r) for r in bulk] == [tuple(r) for r in appended]
        if engine.dialect.name == "sqlite":  # and as SQLite keeps them: the same storage classes
            raw = "SELECT " + ", ".join(f"typeof({c.name}), quote({c.name})" for c in columns) + \
                  " FROM messages WHERE owner_id = :o ORDER BY id"
            assert (await conn.execute(text(raw), {"o": other})).all() == (await conn.execute(text(raw), {"o": one})).all()
    found = await store.recent(other, 10)
    assert [m.secret for m in found] == [False, True, False, False, False] * 2 and found[3].text == "ok 😀"


async def test_batches_land_in_file_order_and_a_redelivered_line_is_skipped(engine: AsyncEngine) -> None:
    owner = (await OwnerStore(engine).add("ana", "UTC", (), T0)).id
    store = MessageStore(engine, FixedClock(T0))
    lines = [_message(owner, n, f"line {n}") for n in range(2_500)]
    batches = [lines[i:i + 1_000] for i in range(0, 2_500, 1_000)]
    assert await append_in_order(store, owner, _batches(*batches)) == 2_500
    assert await append_in_order(store, owner, _batches(lines[990:1_010], [_message(owner, 2_500, "new")])) == 1
    stored = await store.recent(owner, 3_000)
    assert [m.text for m in stored] == [f"line {n}" for n in range(2_500)] + ["new"]
    assert [m.id for m in stored] == sorted(m.id for m in stored)


async def test_a_failed_read_keeps_the_batches_before_it_whole(engine: AsyncEngine) -> None:
    owner = (await OwnerStore(engine).add("ana", "UTC", (), T0)).id
    store = MessageStore(engine, FixedClock(T0))
    first, second = [_message(owner, n, f"a {n}") for n in range(3)], [_message(owner, n, f"b {n}") for n in range(3, 5)]
    with pytest.raises(InvalidInput):
        await append_in_order(store, owner, _batches(first, second, fail_after=True))
    assert [m.text for m in await store.recent(owner, 10)] == ["a 0", "a 1", "a 2", "b 3", "b 4"]


async def test_a_batch_larger_than_one_statement_is_still_all_or_nothing(engine: AsyncEngine) -> None:
    owner = (await OwnerStore(engine).add("ana", "UTC", (), T0)).id
    store = MessageStore(engine, FixedClock(T0))
    rows = [row_values(_message(owner, n, f"row {n}"), await store.active_thread(owner)) for n in range(2_600)]
    assert await store.insert_rows(owner, rows) == 2_600  # over SQLAlchemy's page: several statements, one transaction
    rows[-1] = {**rows[-1], "role": None}  # NOT NULL: the last statement fails, so nothing of this batch stays
    fresh = [{**r, "external_id": f"again-{n}"} for n, r in enumerate(rows)]
    with pytest.raises(Exception):  # noqa: B017, PT011 - the driver's own IntegrityError, per backend
        await store.insert_rows(owner, fresh)
    assert await store.count(owner) == 2_600


async def test_a_reset_during_an_import_sends_the_rest_to_the_new_conversation(engine: AsyncEngine) -> None:
    owner = (await OwnerStore(engine).add("ana", "UTC", (), T0)).id
    store = MessageStore(engine, FixedClock(T0))

    async def resetting() -> AsyncIterator[Sequence[Message]]:
        yield [_message(owner, 0, "before the reset")]
        await store.reset_thread(owner)  # the owner sends /reset while the file is read
        yield [_message(owner, 1, "after the reset")]

    assert await append_in_order(store, owner, resetting()) == 2
    assert [m.text for m in await store.recent(owner, 10)] == ["after the reset"]  # the active thread's only



async def test_two_instants_of_a_repeated_hour_stay_two_in_one_batch(engine: AsyncEngine) -> None:
    """02:30 on the night clocks go back happens twice (``fold``); Python calls the two equal,
    so a batch must not bind them as one value."""
    from zoneinfo import ZoneInfo

    owner = (await OwnerStore(engine).add("ana", "UTC", (), T0)).id
    store = MessageStore(engine, FixedClock(T0))
    first = datetime(2024, 10, 27, 2, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    batch = [replace(_message(owner, n, f"m {n}"), sent_at=first.replace(fold=n % 2)) for n in range(20)]
    assert await append_in_order(store, owner, _batches(batch)) == 20
    stored = await store.recent(owner, 20)
    assert {m.sent_at for m in stored} == {datetime(2024, 10, 27, 0, 30, tzinfo=UTC), datetime(2024, 10, 27, 1, 30, tzinfo=UTC)}


async def test_keys_of_the_earlier_form_are_found_by_prefix_and_looked_up_exactly(engine: AsyncEngine) -> None:
    owners = OwnerStore(engine)
    one, other = (await owners.add("ana", "UTC", (), T0)).id, (await owners.add("bo", "UTC", (), T0)).id
    store = MessageStore(engine, FixedClock(T0))
    old = "sha1:" + "ab" * 20
    await store.append(replace(_message(one, 0, "old"), external_id=old))
    await store.append(replace(_message(other, 0, "near"), external_id="sha1;" + "ab" * 20))  # sorts after the prefix
    await store.append(replace(_message(other, 1, "nearer"), external_id="sha1" + "ab" * 20))
    assert await store.holds_keys_from(one, "import", "sha1:")
    assert not await store.holds_keys_from(other, "import", "sha1:")
    assert not await store.holds_keys_from(one, "telegram", "sha1:")
    assert await store.stored_keys(one, "import", [old, "sha1:" + "cd" * 20]) == {old}
    assert await store.stored_keys(other, "import", [old]) == set()
