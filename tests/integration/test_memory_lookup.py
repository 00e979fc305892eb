"""Related older messages on the database's own full-text index, on real stores.

memory_read, memory_find and the index, which need no database, are in tests/unit/test_memory_lookup.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.message_store import MessageStore
from adapters.storage.owner_store import OwnerStore
from adapters.storage.thread_reads import ThreadReads
from core.clock import SystemClock
from core.message import Message, Role

NOW = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)


async def _setup(engine: AsyncEngine) -> tuple[int, MessageStore]:
    owner = await OwnerStore(engine).add("ana", "Europe/Lisbon", (), NOW)
    return owner.id, MessageStore(engine, SystemClock())


async def _say(store: MessageStore, owner_id: int, text: str, role: Role = Role.OWNER, n: int = 0) -> int:
    appended = await store.append(
        Message(owner_id, role, text, "test", NOW + timedelta(minutes=n), f"x{n}-{text[:20]}")
    )
    return appended.message.id


async def test_related_older_messages_share_the_most_words_and_skip_recent_cards_and_secrets(engine: AsyncEngine) -> None:
    owner_id, store = await _setup(engine)
    best = await _say(store, owner_id, "Book the Casa Ramos restaurant in Porto for dinner", n=1)
    some = await _say(store, owner_id, "Porto was rainy", n=2)
    await _say(store, owner_id, "Casa Ramos restaurant Porto dinner", Role.ASSISTANT, n=3)
    await store.append(Message(owner_id, Role.OWNER, "Restaurant Porto dinner booking", "test",
                                  NOW + timedelta(minutes=4), "card", card_title=True))
    await _say(store, owner_id, "restaurant porto password is hunter2hunter2", n=5)
    for i in range(6, 14):
        await _say(store, owner_id, f"unrelated chatter {i}", n=i)
    recent_start = await _say(store, owner_id, "dinner restaurant Porto tonight?", n=20)
    thread = await store.active_thread(owner_id)
    found = await ThreadReads(engine).related(thread, "Book dinner at the Porto restaurant again", recent_start, 6)
    assert [m.id for m in found] == [best, some]
    found = await ThreadReads(engine).related(thread, "Book dinner at the Porto restaurant again", recent_start, 1)
    assert [m.id for m in found] == [best]  # more candidates than asked for: the best by BM25F (core.history.related)
