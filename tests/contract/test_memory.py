"""The MemoryRepository port: one document per owner, changed only by compare-and-swap, at most 256 KiB."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta

import pytest

from core.errors import AlreadyExists, MemoryFull
from core.memory import document as ops
from core.memory.codec import encode
from core.memory.limits import MAX_DOCUMENT_BYTES
from core.memory.values import ArchivedRecord, ArchiveReason, Evidence, Maintenance, MemoryDocument, Origin, Skill
from core.ports import Changed
from tests.contract.conftest import NOW, Ports


def _add(path: str, text: str | None = None) -> Callable[[MemoryDocument], MemoryDocument]:
    def change(doc: MemoryDocument) -> MemoryDocument:
        return ops.add_entry(doc, ops.make_entry(path, text or f"note {path}", origin=Origin.STATED, now=NOW))
    return change


def _everything() -> MemoryDocument:
    """A document using every field the codec writes: what is loaded must be what was saved."""
    rich = ops.make_entry(
        "people/sister", "Sister: Ana, lives in Porto", origin=Origin.INFERRED, now=NOW, abstract="Ana in Porto",
        evidence=(Evidence(7, "my sister Ana lives in Porto", NOW), Evidence(9)), kind="fact", entities=("Ana", "Porto"),
        event_date=date(2026, 2, 1), valid_from=date(2026, 1, 1), valid_to=date(2027, 1, 1), expires=date(2027, 6, 1),
        sensitive=True, label="from a chat")
    old = ops.make_entry("about/car", "Car: a red Fiat", origin=Origin.EMAIL, now=NOW - timedelta(days=3))
    skill = Skill("book-train", "Book a train on CP", "1. open cp.pt", NOW, NOW, NOW, True, "travel")
    return MemoryDocument((replace(rich, replaces=("people/sister-old",)),),
                          (ArchivedRecord(old, ArchiveReason.REPLACED, NOW, "about/car-2"),), (skill,), Maintenance(41, 2))


async def test_an_owner_with_no_document_reads_an_empty_one_at_version_zero(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    loaded = await ports.memory.load(ana.id)
    assert (loaded.document, loaded.version) == (MemoryDocument(), 0)


async def test_each_save_is_a_new_version_and_a_load_reads_back_exactly_what_was_saved(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    first = await ports.memory.update(ana.id, lambda _doc: _everything())
    assert (first.document, first.version) == (_everything(), 1)
    assert await ports.memory.load(ana.id) == first
    second = await ports.memory.update(ana.id, _add("about/boat"))
    assert second.version == 2 and [e.path for e in second.document.entries] == ["people/sister", "about/boat"]
    assert await ports.memory.load(ana.id) == second
    assert await ports.again().memory.load(ana.id) == second  # another worker reads the same


async def test_apply_returns_the_operations_report_with_the_saved_document(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    saved = await ports.memory.apply(ana.id, lambda doc: Changed(_add("about/boat")(doc), "one added"))
    assert (saved.result, saved.version, [e.path for e in saved.document.entries]) == ("one added", 1, ["about/boat"])
    assert (await ports.memory.load(ana.id)).document == saved.document


async def test_an_operation_that_changes_nothing_writes_nothing(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    await ports.memory.update(ana.id, _add("about/boat"))
    unchanged = await ports.memory.apply(ana.id, lambda doc: Changed(doc, "nothing to do"))
    assert (unchanged.version, unchanged.result) == (1, "nothing to do")
    assert (await ports.memory.update(ana.id, lambda doc: doc)).version == 1
    assert (await ports.memory.load(ana.id)).version == 1


async def test_an_operation_that_fails_saves_nothing(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    await ports.memory.update(ana.id, _add("about/boat"))
    with pytest.raises(AlreadyExists):
        await ports.memory.update(ana.id, _add("about/boat", "another boat"))
    loaded = await ports.memory.load(ana.id)
    assert loaded.version == 1 and [e.text for e in loaded.document.entries] == ["note about/boat"]


async def test_one_owners_memory_is_never_anothers(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    bo = await ports.owners.add("bo", "UTC", (), NOW)
    await ports.memory.update(ana.id, _add("about/boat"))
    assert await ports.memory.load(bo.id) == (await ports.memory.load(bo.id + 1))
    assert (await ports.memory.load(bo.id)).document == MemoryDocument()
    assert (await ports.memory.update(bo.id, _add("about/bike"))).version == 1
    assert [e.path for e in (await ports.memory.load(ana.id)).document.entries] == ["about/boat"]


async def test_writers_at_once_in_two_workers_all_land_each_on_the_newest_version(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    other = ports.again()
    writes = [(ports if i % 2 else other).memory.update(ana.id, _add(f"about/n{i}")) for i in range(20)]
    versions = sorted(v.version for v in await asyncio.gather(*writes))
    assert versions == list(range(1, 21))  # each write saw the one before it: none was lost
    final = await ports.memory.load(ana.id)
    assert final.version == 20 and sorted(e.slug for e in final.document.entries) == sorted(f"n{i}" for i in range(20))


async def test_a_document_over_the_limit_loses_its_oldest_archive_first(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    records = tuple(ArchivedRecord(ops.make_entry(f"about/old-{i}", f"{i} " + "x" * 3_990, origin=Origin.STATED, now=NOW),
                                   ArchiveReason.STALE, NOW - timedelta(days=i)) for i in range(80))  # ~330 KB
    saved = await ports.memory.update(ana.id, lambda doc: replace(doc, archive=records))
    kept = [r.entry.slug for r in saved.document.archive]
    assert kept == [f"old-{i}" for i in range(len(kept))] and 40 < len(kept) < 80  # the newest stayed, in order
    assert len(encode(saved.document).encode()) <= MAX_DOCUMENT_BYTES
    assert await ports.memory.load(ana.id) == saved


async def test_notes_alone_over_the_limit_are_refused_and_nothing_is_saved(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    await ports.memory.update(ana.id, _add("about/boat"))
    notes = tuple(ops.make_entry(f"about/n{i}", "y" * 3_990, origin=Origin.STATED, now=NOW) for i in range(80))
    with pytest.raises(MemoryFull):
        await ports.memory.update(ana.id, lambda doc: replace(doc, entries=doc.entries + notes))
    loaded = await ports.memory.load(ana.id)
    assert loaded.version == 1 and [e.path for e in loaded.document.entries] == ["about/boat"]
