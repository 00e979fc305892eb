"""The Gmail connections store on both backends: a consent is taken once, a run is counts, disconnect deletes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.gmail_store import GmailStore
from adapters.storage.owner_store import OwnerStore
from core.gmail.values import PendingConsent, RunReport

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


async def test_a_consent_is_taken_once_within_its_time_and_keeps_its_binding(engine: AsyncEngine) -> None:
    owner = await OwnerStore(engine).add("Maya", "UTC", (), NOW)
    store = GmailStore(engine)
    await store.add_consent("a" * 64, PendingConsent(owner.id, "session-hash", "sealed-verifier"), NOW,
                            NOW + timedelta(minutes=15))
    await store.add_consent("b" * 64, PendingConsent(owner.id, None, None), NOW, NOW + timedelta(minutes=15))
    assert await store.take_consent("a" * 64, NOW, "another-session") is None  # refused, and not used up
    taken = await asyncio.gather(*(store.take_consent("a" * 64, NOW, "session-hash") for _ in range(5)))  # racing
    assert [t for t in taken if t is not None] == [PendingConsent(owner.id, "session-hash", "sealed-verifier")]
    assert await store.take_consent("b" * 64, NOW + timedelta(minutes=16), None) is None  # expired
    assert await store.take_consent("c" * 64, NOW, None) is None


async def test_a_connection_keeps_the_sealed_token_and_the_last_runs_counts_until_deleted(engine: AsyncEngine) -> None:
    owner = await OwnerStore(engine).add("Maya", "UTC", (), NOW)
    store = GmailStore(engine)
    assert await store.get(owner.id) is None
    await store.connect(owner.id, "sealed-1", NOW)
    await store.record_run(owner.id, NOW + timedelta(hours=1), RunReport(False, "Gmail could not be read.", 3, 2,
                                                                         reconnect=True))
    found = await store.get(owner.id)
    assert found is not None and (found.sealed_token, found.sampled, found.skipped, found.reconnect, found.last_ok) == \
        ("sealed-1", 3, 2, True, False)
    assert found.last_run_at == NOW + timedelta(hours=1)
    await store.connect(owner.id, "sealed-2", NOW + timedelta(days=1))  # connecting again starts afresh
    again = await store.get(owner.id)
    assert again is not None and (again.sealed_token, again.last_run_at, again.reconnect) == ("sealed-2", None, False)
    assert await store.connected_owners() == [owner.id]
    assert await store.delete(owner.id) and await store.get(owner.id) is None and not await store.delete(owner.id)
