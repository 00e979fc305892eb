"""The hourly maintenance's rules on the port fakes: what reflection may read, what it may
save, the status ladder, and when an owner is skipped.

These ran on SQLite and the scripted HTTP server; ``tests/integration/test_maintenance.py``
keeps what needs them (a model error over HTTP, two reflections racing on a real
compare-and-swap, two workers on PostgreSQL). Reflection reads and writes through the
Messages, MemoryRepository and OwnerLocks ports, which ``tests/contract`` proves the fakes keep.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from core.agent.chat import ChatReply
from core.agent.usage import UsageRecord
from core.maintenance.reflect import Reflector
from core.maintenance.tick import MaintenanceJob, next_tick
from core.memory import document as ops
from core.memory.codec import encoded_size
from core.memory.limits import MAX_DOCUMENT_BYTES
from core.memory.values import ArchiveReason, Evidence, MemoryDocument, Origin, Status
from core.message import Message, Role
from tests.fakes.ports import MemoryLocks, QueueModel
from tests.unit.world import START, World, make_world


def add(path: str, words: str, ids: list[int], quote: str, sensitive: Any = False) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "add", "path": path, "text": words, "message_ids": ids, "quote": quote}
    if sensitive is not None:
        op["sensitive"] = sensitive
    return op


def reflected(*ops_: dict[str, Any]) -> ChatReply:
    return ChatReply(json.dumps({"operations": list(ops_)}))


def maintenance(world: World) -> MaintenanceJob:
    """The job as bot.wiring makes it: a reflector only when a memory model is configured."""
    gateway = world.deps.gateway
    reflector = Reflector(gateway, world.messages, world.docs, world.clock) if gateway.memory_configured else None
    return MaintenanceJob(world.owners, world.docs, reflector, MemoryLocks(), world.clock, world.deps.spending)


async def _say(world: World, words: str, ago: timedelta = timedelta(hours=1), role: Role = Role.OWNER, **flags: bool) -> int:
    stored = await world.messages.append(Message(world.owner.id, role, words, "local", START - ago, **flags))  # type: ignore[arg-type]
    return stored.message.id


async def _doc(world: World) -> MemoryDocument:
    return (await world.docs.load(world.owner.id)).document


def _model(world: World) -> QueueModel:
    assert world.memory_model is not None
    return world.memory_model


def _inputs(world: World) -> list[dict[str, Any]]:
    return [json.loads(call.messages[-1]["content"]) for call in _model(world).calls("reflect")]


async def test_reflection_reads_only_what_it_may_and_waits_for_young_messages() -> None:
    world = await make_world(memory=QueueModel())
    ok = await _say(world, "I adopted a cat called Miso")
    await _say(world, "Nod's view of it", role=Role.ASSISTANT)
    await _say(world, "photo caption", attachment=True)
    await _say(world, "Book the Porto hotel", card_title=True)
    await _say(world, "Forwarded: Ana is a surgeon", forwarded=True)
    await _say(world, "x" * 4_100)
    await _say(world, "my card 4111 1111 1111 1111")
    young = await _say(world, "I also have a dog", ago=timedelta(minutes=5))
    _model(world).enqueue(reflected(add("about/cat", "Has a cat called Miso", [ok], "adopted a cat called Miso")),
                          reflected(add("about/dog", "Has a dog", [young], "I also have a dog")), purpose="reflect")
    await maintenance(world).run()
    first = _inputs(world)
    assert [m["text"] for m in first[0]["messages"]] == ["I adopted a cat called Miso"]
    assert first[0]["messages"][0]["sent_at"].startswith("Thursday 2026-12-03")
    doc = await _doc(world)
    assert [(e.path, e.status) for e in doc.entries] == [("about/cat", Status.TENTATIVE)]
    assert doc.maintenance.watermark == young - 1
    world.clock.set(START + timedelta(minutes=6))
    await maintenance(world).run()
    assert [e.path for e in (await _doc(world)).entries] == ["about/cat", "about/dog"]
    assert world.sink.sent == []  # maintenance posts nothing


async def test_quotes_sensitivity_and_stated_entries() -> None:
    world = await make_world(memory=QueueModel())
    note = ops.make_entry("about/name", "Name: Maya", origin=Origin.STATED, now=START, evidence=(Evidence(1),))
    await world.docs.update(world.owner.id, lambda d: ops.add_entry(d, note))
    nod_said = await _say(world, "You told me you run marathons", role=Role.ASSISTANT)
    health = await _say(world, "My asthma got worse this week")
    name = await _say(world, "Call me Maya, my name is Maya")
    _model(world).enqueue(reflected(
        add("about/runs", "Runs marathons", [nod_said], "you run marathons"),
        add("about/runs-2", "Runs marathons", [health], "I run marathons"),
        add("about/asthma", "Has asthma", [health], "My asthma got worse", sensitive=True),
        add("about/asthma-2", "Has asthma", [health], "My asthma got worse", sensitive=None),
        add("about/maya", "Name: Maya", [name], "my name is Maya"),
        {"op": "archive", "path": "about/name", "message_ids": [name], "quote": "my name is Maya", "reason": "wrong"},
    ), purpose="reflect")
    await maintenance(world).run()
    doc = await _doc(world)
    assert [(e.path, e.origin, e.source_ids) for e in doc.entries] == [("about/name", Origin.STATED, (1,))]
    await world.owners.update_settings(world.owner.id, lambda now: replace(now, remember_sensitive=True))
    later = await _say(world, "My asthma is fine now", ago=timedelta(minutes=30))
    _model(world).enqueue(reflected(add("about/asthma", "Has asthma", [later], "My asthma", sensitive=True)), purpose="reflect")
    await maintenance(world).run()
    assert [(e.path, e.sensitive) for e in (await _doc(world)).entries][1:] == [("about/asthma", True)]


async def test_an_add_naming_what_its_cited_messages_never_say_is_refused_and_counted() -> None:
    """The quote is the owner's, the text is not (issue 39: 7): an invented address, a renamed cat."""
    world = await make_world(memory=QueueModel())
    yes = await _say(world, "yes save it")
    cat = await _say(world, "I adopted a cat called Miso yesterday")
    _model(world).enqueue(reflected(
        add("about/home", "Owner's home address is 221B Baker Street, London", [yes], "yes"),
        add("about/cat", "Has a cat called Mochi", [cat], "a cat called Miso"),
        add("about/cat-2", "2026-12-02: Adopted a cat called Miso", [cat], "adopted a cat called Miso"),
    ), purpose="reflect")
    lines = [t.line() for t in await maintenance(world).run()]
    assert [e.text for e in (await _doc(world)).entries] == ["2026-12-02: Adopted a cat called Miso"]
    assert lines == ["Maya: repair archived 0; reflected 2 messages: 1 added, 0 confirmed by evidence, 0 archived, "
                     "0 dropped, 2 not in the owner's words"]


async def test_the_status_ladder_and_archiving_an_inferred_entry() -> None:
    world = await make_world(memory=QueueModel())
    first = await _say(world, "We moved to Braga", ago=timedelta(hours=3))
    _model(world).enqueue(reflected(add("about/home", "Lives in Braga", [first], "moved to Braga")), purpose="reflect")
    await maintenance(world).run()
    assert (await _doc(world)).entries[0].status is Status.TENTATIVE
    again = await _say(world, "Braga is home now", ago=timedelta(hours=2))
    _model(world).enqueue(reflected(add("about/home-2", "lives in Braga.", [again], "Braga is home")), purpose="reflect")
    await maintenance(world).run()
    entry = (await _doc(world)).entries[0]
    assert (entry.path, entry.status, entry.source_ids) == ("about/home", Status.OBSERVED, (first, again))
    wrong = await _say(world, "Actually we live in Porto, not Braga", ago=timedelta(hours=1))
    _model(world).enqueue(reflected(
        {"op": "archive", "path": "about/home", "message_ids": [wrong], "quote": "not Braga", "reason": "wrong"},
        add("about/home", "Lives in Porto", [wrong], "we live in Porto")), purpose="reflect")
    await maintenance(world).run()
    doc = await _doc(world)
    assert [e.text for e in doc.entries] == ["Lives in Porto"]
    assert [(r.entry.text, r.reason) for r in doc.archive] == [("Lives in Braga", ArchiveReason.WRONG)]


async def test_saving_off_skips_the_owner_entirely() -> None:
    world = await make_world(memory=QueueModel())
    await _say(world, "I collect vinyl records")
    await world.owners.update_settings(world.owner.id, lambda now: replace(now, saving_enabled=False))
    assert [t.line() for t in await maintenance(world).run()] == ["Maya: skipped (saving is off)"]
    assert _model(world).requests == [] and (await _doc(world)).maintenance.watermark == 0


async def test_an_add_that_would_overflow_the_document_is_skipped() -> None:
    world = await make_world(memory=QueueModel())
    doc, i = MemoryDocument(), 0
    while encoded_size(doc) < MAX_DOCUMENT_BYTES - 3_000:
        doc = ops.add_entry(doc, ops.make_entry(f"about/fact-{i}", f"Fact {i}: " + "x" * 3_000, origin=Origin.STATED, now=START))
        i += 1
    await world.docs.update(world.owner.id, lambda _: doc)
    message = await _say(world, "Long story: " + "y" * 3_500)
    _model(world).enqueue(reflected(add("about/story", "Story " + "y" * 3_500, [message], "Long story")), purpose="reflect")
    await maintenance(world).run()
    after = await _doc(world)
    assert len(after.entries) == i and after.maintenance.watermark == message


async def test_repair_runs_without_a_model() -> None:
    world = await make_world()
    gone = ops.make_entry("about/pass", "Gym pass", origin=Origin.STATED, now=START, expires=date(2026, 12, 1))
    await world.docs.update(world.owner.id, lambda d: ops.add_entry(d, gone))
    lines = [t.line() for t in await maintenance(world).run()]
    assert lines == ["Maya: repair archived 1; no memory model, reflection skipped"]
    assert [r.reason for r in (await _doc(world)).archive] == [ArchiveReason.EXPIRED]


async def test_reflection_waits_while_the_spending_limit_is_reached() -> None:
    world = await make_world(memory=QueueModel())
    await _say(world, "I collect vinyl records")
    await world.owners.update_settings(world.owner.id, lambda now: replace(now, spending_limit_usd=0.01))
    await world.usage.record(UsageRecord(world.owner.id, "agent", "gpt-4o-mini", 0, 0, 0.02, 1, "ok", START))
    assert [t.line() for t in await maintenance(world).run()] == ["Maya: skipped (spending limit reached; repair only)"]
    assert _model(world).requests == [] and world.agent.requests == []


def test_ticks_fall_at_minute_seven_utc() -> None:
    at = datetime(2026, 12, 3, 9, 6, 59, tzinfo=UTC)
    assert next_tick(at) == datetime(2026, 12, 3, 9, 7, tzinfo=UTC)
    assert next_tick(at.replace(minute=7)) == datetime(2026, 12, 3, 10, 7, tzinfo=UTC)
    assert next_tick(at.replace(hour=23, minute=30)) == datetime(2026, 12, 4, 0, 7, tzinfo=UTC)
