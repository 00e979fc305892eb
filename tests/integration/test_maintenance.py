"""The hourly maintenance with a fixed clock and the scripted memory model, where the real stack takes part:
a model error over HTTP, two reflections racing on a real compare-and-swap, two workers on PostgreSQL.

Its rules (what reflection may read and save, the status ladder, skips) run on the port fakes
in tests/unit/test_maintenance_rules.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import services
from core.clock import FixedClock
from core.maintenance.reflect import Reflector
from core.memory.values import MemoryDocument
from core.message import Message, Role
from tests.conftest import POSTGRES_URL, drop_postgres_database, fresh_postgres_url
from tests.fakes.model_server import Answer, FakeModelServer, structured, text
from tests.integration.harness import MEMORY, START, Harness


def add(path: str, words: str, ids: list[int], quote: str, sensitive: Any = False) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "add", "path": path, "text": words, "message_ids": ids, "quote": quote}
    if sensitive is not None:
        op["sensitive"] = sensitive
    return op


def reflected(*ops_: dict[str, Any], **kw: Any) -> Answer:
    return structured({"operations": list(ops_)}, **kw)


async def _say(nod: Harness, words: str, ago: timedelta = timedelta(hours=1), role: Role = Role.OWNER, **flags: bool) -> int:
    stored = await nod.svc.messages.append(Message(nod.owner.id, role, words, "local", START - ago, **flags))
    return stored.message.id


async def _doc(nod: Harness) -> MemoryDocument:
    return (await nod.svc.memory.load(nod.owner.id)).document










async def test_a_failing_model_is_retried_on_two_more_ticks_then_the_batch_is_skipped(nod: Harness) -> None:
    message = await _say(nod, "I collect vinyl records")
    nod.server.enqueue(MEMORY, text("garbage"), Answer(status=400), text("[1]"), purpose="reflect")
    for failures in (1, 2):
        await nod.svc.maintenance.run()
        assert (await _doc(nod)).maintenance == replace((await _doc(nod)).maintenance, watermark=0, failures=failures)
    await nod.svc.maintenance.run()
    doc = await _doc(nod)
    assert (doc.maintenance.watermark, doc.maintenance.failures, doc.entries) == (message, 0, ())








async def test_a_batch_applies_once_when_two_reflections_race(nod: Harness) -> None:
    message = await _say(nod, "I play the cello")
    op = add("about/cello", "Plays the cello", [message], "I play the cello")
    nod.server.enqueue(MEMORY, reflected(op, delay_s=0.3), reflected(op, delay_s=0.3), purpose="reflect")
    reflector = Reflector(nod.svc.gateway, nod.svc.messages, nod.svc.memory, nod.svc.clock)  # past the lock: race the reflections
    reports = await asyncio.gather(reflector.reflect(nod.owner), reflector.reflect(nod.owner))
    doc = await _doc(nod)
    assert [(e.path, e.source_ids) for e in doc.entries] == [("about/cello", (message,))]
    assert sorted(r.added for r in reports) == [0, 1] and doc.maintenance.watermark == message




@pytest.mark.skipif(not POSTGRES_URL, reason="PostgreSQL not configured: set NOD_TEST_POSTGRES_URL")
async def test_two_workers_on_postgresql_run_each_owner_once(server: FakeModelServer) -> None:
    url = await fresh_postgres_url()
    settings = Settings(database_url=url, openai_base_url=server.base_url, openai_api_key="t", memory_model=MEMORY)
    try:
        async with services(settings, FixedClock(START)) as one, services(settings, FixedClock(START)) as two:
            owner = await one.owners.add("Maya", "UTC", (), START)
            stored = await one.messages.append(Message(owner.id, Role.OWNER, "I play the cello", "local", START - timedelta(hours=1)))
            op = add("about/cello", "Plays the cello", [stored.message.id], "I play the cello")
            server.enqueue(MEMORY, reflected(op, delay_s=0.5), reflected(op, delay_s=0.5), purpose="reflect")
            lines = await asyncio.gather(one.maintenance.run(), two.maintenance.run())
            flat = sorted(t.line() for ticks in lines for t in ticks)
            assert flat[1] == "Maya: skipped (another worker is on it)", flat
            assert len(server.calls("reflect")) == 1
            doc = (await one.memory.load(owner.id)).document
            assert [e.path for e in doc.entries] == ["about/cello"]
    finally:
        await drop_postgres_database(url)
