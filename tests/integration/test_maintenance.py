"""The hourly maintenance with a fixed clock and the scripted memory model."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import services
from core.agent.usage import UsageRecord
from core.clock import FixedClock
from core.maintenance.reflect import Reflector
from core.maintenance.tick import next_tick
from core.memory import document as ops
from core.memory.codec import encoded_size
from core.memory.limits import MAX_DOCUMENT_BYTES
from core.memory.model import ArchiveReason, Evidence, MemoryDocument, Origin, Status
from core.message import NewMessage, Role
from tests.conftest import POSTGRES_URL, drop_postgres_database, fresh_postgres_url
from tests.fakes.model_server import Answer, FakeModelServer, structured, text
from tests.integration.harness import MEMORY, START, Harness, make_harness


def add(path: str, words: str, ids: list[int], quote: str, sensitive: Any = False) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "add", "path": path, "text": words, "message_ids": ids, "quote": quote}
    if sensitive is not None:
        op["sensitive"] = sensitive
    return op


def reflected(*ops_: dict[str, Any], **kw: Any) -> Answer:
    return structured({"operations": list(ops_)}, **kw)


async def _say(nod: Harness, words: str, ago: timedelta = timedelta(hours=1), role: Role = Role.OWNER, **flags: bool) -> int:
    stored = await nod.svc.messages.append(NewMessage(nod.owner.id, role, words, "local", START - ago, **flags))
    return stored.message.id


async def _doc(nod: Harness) -> MemoryDocument:
    return (await nod.svc.memory.load(nod.owner.id)).document


def _inputs(server: FakeModelServer) -> list[dict[str, Any]]:
    return [json.loads(call["messages"][-1]["content"]) for call in server.calls("reflect")]


async def test_reflection_reads_only_what_it_may_and_waits_for_young_messages(nod: Harness) -> None:
    ok = await _say(nod, "I adopted a cat called Miso")
    await _say(nod, "Nod's view of it", role=Role.ASSISTANT)
    await _say(nod, "photo caption", attachment=True)
    await _say(nod, "Book the Porto hotel", card_title=True)
    await _say(nod, "Forwarded: Ana is a surgeon", forwarded=True)
    await _say(nod, "x" * 4_100)
    await _say(nod, "my card 4111 1111 1111 1111")
    young = await _say(nod, "I also have a dog", ago=timedelta(minutes=5))
    nod.server.enqueue(MEMORY, reflected(add("about/cat", "Has a cat called Miso", [ok], "adopted a cat called Miso")),
                       reflected(add("about/dog", "Has a dog", [young], "I also have a dog")), purpose="reflect")
    await nod.svc.maintenance.run()
    first = _inputs(nod.server)
    assert [m["text"] for m in first[0]["messages"]] == ["I adopted a cat called Miso"]
    assert first[0]["messages"][0]["sent_at"].startswith("Thursday 2026-12-03")
    doc = await _doc(nod)
    assert [(e.path, e.status) for e in doc.entries] == [("about/cat", Status.TENTATIVE)]
    assert doc.maintenance.watermark == young - 1
    nod.svc.clock.set(START + timedelta(minutes=6))  # type: ignore[attr-defined]
    await nod.svc.maintenance.run()
    assert [e.path for e in (await _doc(nod)).entries] == ["about/cat", "about/dog"]
    assert nod.sink.sent == []  # maintenance posts nothing


async def test_quotes_sensitivity_and_stated_entries(nod: Harness) -> None:
    note = ops.make_entry("about/name", "Name: Maya", origin=Origin.STATED, now=START, evidence=(Evidence(1),))
    await nod.svc.memory.update(nod.owner.id, lambda d: ops.add_entry(d, note))
    nod_said = await _say(nod, "You told me you run marathons", role=Role.ASSISTANT)
    health = await _say(nod, "My asthma got worse this week")
    name = await _say(nod, "Call me Maya, my name is Maya")
    nod.server.enqueue(MEMORY, reflected(
        add("about/runs", "Runs marathons", [nod_said], "you run marathons"),
        add("about/runs-2", "Runs marathons", [health], "I run marathons"),
        add("about/asthma", "Has asthma", [health], "My asthma got worse", sensitive=True),
        add("about/asthma-2", "Has asthma", [health], "My asthma got worse", sensitive=None),
        add("about/maya", "Name: Maya", [name], "my name is Maya"),
        {"op": "archive", "path": "about/name", "message_ids": [name], "quote": "my name is Maya", "reason": "wrong"},
    ), purpose="reflect")
    await nod.svc.maintenance.run()
    doc = await _doc(nod)
    assert [(e.path, e.origin, e.source_ids) for e in doc.entries] == [("about/name", Origin.STATED, (1,))]
    await nod.svc.owners.update_settings(nod.owner.id, lambda now: replace(now, remember_sensitive=True))
    later = await _say(nod, "My asthma is fine now", ago=timedelta(minutes=30))
    nod.server.enqueue(MEMORY, reflected(add("about/asthma", "Has asthma", [later], "My asthma", sensitive=True)),
                       purpose="reflect")
    await nod.svc.maintenance.run()
    assert [(e.path, e.sensitive) for e in (await _doc(nod)).entries][1:] == [("about/asthma", True)]


async def test_an_add_naming_what_its_cited_messages_never_say_is_refused_and_counted(nod: Harness) -> None:
    """The quote is the owner's, the text is not (issue 39: 7): an invented address, a renamed cat."""
    yes = await _say(nod, "yes save it")
    cat = await _say(nod, "I adopted a cat called Miso yesterday")
    nod.server.enqueue(MEMORY, reflected(
        add("about/home", "Owner's home address is 221B Baker Street, London", [yes], "yes"),
        add("about/cat", "Has a cat called Mochi", [cat], "a cat called Miso"),
        add("about/cat-2", "2026-12-02: Adopted a cat called Miso", [cat], "adopted a cat called Miso"),
    ), purpose="reflect")
    lines = [t.line() for t in await nod.svc.maintenance.run()]
    assert [e.text for e in (await _doc(nod)).entries] == ["2026-12-02: Adopted a cat called Miso"]
    assert lines == ["Maya: repair archived 0; reflected 2 messages: 1 added, 0 confirmed by evidence, 0 archived, "
                     "0 dropped, 2 not in the owner's words"]


async def test_the_status_ladder_and_archiving_an_inferred_entry(nod: Harness) -> None:
    first = await _say(nod, "We moved to Braga", ago=timedelta(hours=3))
    nod.server.enqueue(MEMORY, reflected(add("about/home", "Lives in Braga", [first], "moved to Braga")), purpose="reflect")
    await nod.svc.maintenance.run()
    assert (await _doc(nod)).entries[0].status is Status.TENTATIVE
    again = await _say(nod, "Braga is home now", ago=timedelta(hours=2))
    nod.server.enqueue(MEMORY, reflected(add("about/home-2", "lives in Braga.", [again], "Braga is home")), purpose="reflect")
    await nod.svc.maintenance.run()
    entry = (await _doc(nod)).entries[0]
    assert (entry.path, entry.status, entry.source_ids) == ("about/home", Status.OBSERVED, (first, again))
    wrong = await _say(nod, "Actually we live in Porto, not Braga", ago=timedelta(hours=1))
    nod.server.enqueue(MEMORY, reflected(
        {"op": "archive", "path": "about/home", "message_ids": [wrong], "quote": "not Braga", "reason": "wrong"},
        add("about/home", "Lives in Porto", [wrong], "we live in Porto")), purpose="reflect")
    await nod.svc.maintenance.run()
    doc = await _doc(nod)
    assert [e.text for e in doc.entries] == ["Lives in Porto"]
    assert [(r.entry.text, r.reason) for r in doc.archive] == [("Lives in Braga", ArchiveReason.WRONG)]


async def test_a_failing_model_is_retried_on_two_more_ticks_then_the_batch_is_skipped(nod: Harness) -> None:
    message = await _say(nod, "I collect vinyl records")
    nod.server.enqueue(MEMORY, text("garbage"), Answer(status=400), text("[1]"), purpose="reflect")
    for failures in (1, 2):
        await nod.svc.maintenance.run()
        assert (await _doc(nod)).maintenance == replace((await _doc(nod)).maintenance, watermark=0, failures=failures)
    await nod.svc.maintenance.run()
    doc = await _doc(nod)
    assert (doc.maintenance.watermark, doc.maintenance.failures, doc.entries) == (message, 0, ())


async def test_saving_off_skips_the_owner_entirely(nod: Harness) -> None:
    await _say(nod, "I collect vinyl records")
    await nod.svc.owners.update_settings(nod.owner.id, lambda now: replace(now, saving_enabled=False))
    assert [t.line() for t in await nod.svc.maintenance.run()] == ["Maya: skipped (saving is off)"]
    assert nod.server.requests == [] and (await _doc(nod)).maintenance.watermark == 0


async def test_an_add_that_would_overflow_the_document_is_skipped(nod: Harness) -> None:
    doc, i = MemoryDocument(), 0
    while encoded_size(doc) < MAX_DOCUMENT_BYTES - 3_000:
        doc = ops.add_entry(doc, ops.make_entry(f"about/fact-{i}", f"Fact {i}: " + "x" * 3_000, origin=Origin.STATED, now=START))
        i += 1
    await nod.svc.memory.update(nod.owner.id, lambda _: doc)
    message = await _say(nod, "Long story: " + "y" * 3_500)
    nod.server.enqueue(MEMORY, reflected(add("about/story", "Story " + "y" * 3_500, [message], "Long story")), purpose="reflect")
    await nod.svc.maintenance.run()
    after = await _doc(nod)
    assert len(after.entries) == i and after.maintenance.watermark == message


async def test_repair_runs_without_a_model(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, memory_model=None):
        gone = ops.make_entry("about/pass", "Gym pass", origin=Origin.STATED, now=START, expires=date(2026, 12, 1))
        await nod.svc.memory.update(nod.owner.id, lambda d: ops.add_entry(d, gone))
        lines = [t.line() for t in await nod.svc.maintenance.run()]
        assert lines == ["Maya: repair archived 1; no memory model, reflection skipped"]
        assert [r.reason for r in (await _doc(nod)).archive] == [ArchiveReason.EXPIRED]


async def test_a_batch_applies_once_when_two_reflections_race(nod: Harness) -> None:
    message = await _say(nod, "I play the cello")
    op = add("about/cello", "Plays the cello", [message], "I play the cello")
    nod.server.enqueue(MEMORY, reflected(op, delay_s=0.3), reflected(op, delay_s=0.3), purpose="reflect")
    reflector = Reflector(nod.svc.gateway, nod.svc.messages, nod.svc.memory, nod.svc.clock)  # past the lock: race the reflections
    reports = await asyncio.gather(reflector.reflect(nod.owner), reflector.reflect(nod.owner))
    doc = await _doc(nod)
    assert [(e.path, e.source_ids) for e in doc.entries] == [("about/cello", (message,))]
    assert sorted(r.added for r in reports) == [0, 1] and doc.maintenance.watermark == message


def test_ticks_fall_at_minute_seven_utc() -> None:
    at = datetime(2026, 12, 3, 9, 6, 59, tzinfo=UTC)
    assert next_tick(at) == datetime(2026, 12, 3, 9, 7, tzinfo=UTC)
    assert next_tick(at.replace(minute=7)) == datetime(2026, 12, 3, 10, 7, tzinfo=UTC)
    assert next_tick(at.replace(hour=23, minute=30)) == datetime(2026, 12, 4, 0, 7, tzinfo=UTC)


@pytest.mark.skipif(not POSTGRES_URL, reason="PostgreSQL not configured: set NOD_TEST_POSTGRES_URL")
async def test_two_workers_on_postgresql_run_each_owner_once(server: FakeModelServer) -> None:
    url = await fresh_postgres_url()
    settings = Settings(database_url=url, openai_base_url=server.base_url, openai_api_key="t", memory_model=MEMORY)
    try:
        async with services(settings, FixedClock(START)) as one, services(settings, FixedClock(START)) as two:
            owner = await one.owners.add("Maya", "UTC", (), START)
            stored = await one.messages.append(NewMessage(owner.id, Role.OWNER, "I play the cello", "local", START - timedelta(hours=1)))
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


async def test_reflection_waits_while_the_spending_limit_is_reached(nod: Harness) -> None:
    await _say(nod, "I collect vinyl records")
    await nod.svc.owners.update_settings(nod.owner.id, lambda now: replace(now, spending_limit_usd=0.01))
    await nod.svc.usage.record(UsageRecord(nod.owner.id, "agent", "gpt-4o-mini", 0, 0, 0.02, 1, "ok", START))
    assert [t.line() for t in await nod.svc.maintenance.run()] == ["Maya: skipped (spending limit reached; repair only)"]
    assert nod.server.requests == []
