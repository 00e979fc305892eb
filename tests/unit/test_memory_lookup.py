"""memory_read, memory_find and the owner-context index: the memory document's reading rules.

memory_read looks up an entry's sources through the Messages port; here that is the
in-memory fake, which ``tests/contract`` proves reads messages by id as the stores do.
(These ran on SQLite and PostgreSQL in tests/integration/test_memory_lookup.py, which
keeps related older messages: they are the database's full-text index.)
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.errors import InvalidInput, NotFound
from core.memory import document as ops
from core.memory.lookup import memory_find, memory_read
from core.memory.render import render_index
from core.memory.values import Evidence, MemoryDocument, Origin
from core.message import Message, Role
from tests.fakes.messages import MemoryMessages
from tests.fakes.ports import MemoryOwners

NOW = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)


async def _setup() -> tuple[int, MemoryMessages, MemoryOwners]:
    owners = MemoryOwners()
    owner = await owners.add("ana", "Europe/Lisbon", (), NOW)
    return owner.id, MemoryMessages(), owners


async def _say(store: MemoryMessages, owner_id: int, text: str, role: Role = Role.OWNER, n: int = 0) -> int:
    appended = await store.append(
        Message(owner_id, role, text, "test", NOW + timedelta(minutes=n), f"x{n}-{text[:20]}")
    )
    return appended.message.id


async def test_an_entry_shows_status_sources_and_only_a_quote_that_still_matches() -> None:
    owner_id, store, owners = await _setup()
    source = await _say(store, owner_id, "Remember: my sister Ana lives in  Porto now.")
    reply = await _say(store, owner_id, "my sister Ana lives in Porto", Role.ASSISTANT, 1)
    entry = ops.make_entry(
        "people/sister", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=NOW,
        evidence=(Evidence(reply, "my sister Ana lives in Porto"), Evidence(source, "my sister Ana lives in Porto")),
    )
    doc = ops.add_entry(MemoryDocument(), entry)
    zone = (await owners.by_id(owner_id)).zone
    shown = await memory_read(doc, "people/sister", owner_id, zone, store)
    assert shown["quote"] == "my sister Ana lives in Porto"  # whitespace folded, from the owner's message
    assert shown["status"] == "stated" and shown["label"] == "Confirmed" and shown["origin"] == "stated"
    assert shown["evidence_count"] == 2 and [s["id"] for s in shown["sources"]] == [reply, source]
    assert "Remember:" not in str(shown)  # never the whole source message

    # the owner edits the source (a channel's edited message): the quote no longer holds
    store.rows[source] = replace(store.rows[source], text="my brother lives in Faro")
    edited = await memory_read(doc, "people/sister", owner_id, zone, store)
    assert edited["quote"] is None and edited["evidence_count"] == 2


async def test_an_older_note_without_a_quote_keeps_its_source() -> None:
    owner_id, store, owners = await _setup()
    source = await _say(store, owner_id, "I am vegetarian")
    doc = ops.add_entry(MemoryDocument(), ops.make_entry(
        "preferences/food", "Vegetarian", origin=Origin.INFERRED, now=NOW, evidence=(Evidence(source),)))
    zone = (await owners.by_id(owner_id)).zone
    shown = await memory_read(doc, "preferences/food", owner_id, zone, store)
    assert shown["quote"] is None and shown["sources"][0]["id"] == source
    assert shown["status"] == "tentative" and shown["label"] == "Mentioned once"


async def test_an_area_lists_its_entries_and_a_bad_path_names_the_areas() -> None:
    owner_id, store, owners = await _setup()
    doc = MemoryDocument()
    for path, text, abstract in [("people/sister", "Sister: Ana\nLives in Porto", None),
                                 ("people/boss", "Boss: Rui, strict about deadlines", "Boss Rui")]:
        doc = ops.add_entry(doc, ops.make_entry(path, text, origin=Origin.STATED, now=NOW, abstract=abstract))
    zone = (await owners.by_id(owner_id)).zone
    listed = await memory_read(doc, "people", owner_id, zone, store)
    assert [(e["path"], e["summary"]) for e in listed["entries"]] == [
        ("people/sister", "Sister: Ana"), ("people/boss", "Boss Rui")]
    with pytest.raises(InvalidInput, match="about, preferences, people, routines, lessons"):
        await memory_read(doc, "hobbies/chess", owner_id, zone, store)
    with pytest.raises(NotFound):
        await memory_read(doc, "people/nobody", owner_id, zone, store)


def test_memory_find_matches_any_word_form_in_slug_abstract_and_text() -> None:
    doc = MemoryDocument()
    for path, text, abstract in [
        ("about/home", "Owns two properties in Braga", None),
        ("people/dentist", "Dr. Sousa, appointments on Tuesdays", None),
        ("routines/running", "Runs every morning", "Morning run"),
        ("preferences/property-tax", "Pays by direct debit", None),
    ]:
        doc = ops.add_entry(doc, ops.make_entry(path, text, origin=Origin.STATED, now=NOW, abstract=abstract))
    found = [r["path"] for r in memory_find(doc, "property")["results"]]
    assert found[0] == "preferences/property-tax" and "about/home" in found  # slug weighs more
    assert [r["path"] for r in memory_find(doc, "running")["results"]] == ["routines/running"]
    assert memory_find(doc, "appointment")["results"][0]["path"] == "people/dentist"
    assert memory_find(doc, "zebra")["results"] == []
    with pytest.raises(InvalidInput):
        memory_find(doc, "")


def test_the_index_lists_everything_in_full_stated_then_observed_then_tentative() -> None:
    long_text = "Allergies: " + "penicillin and shellfish; " * 150
    doc = MemoryDocument()
    doc = ops.add_entry(doc, ops.make_entry("about/tentative", "Maybe likes jazz", origin=Origin.INFERRED,
                                            now=NOW, evidence=(Evidence(1),)))
    doc = ops.add_entry(doc, ops.make_entry("about/observed", "Drinks tea", origin=Origin.INFERRED,
                                            now=NOW, evidence=(Evidence(1), Evidence(2))))
    doc = ops.add_entry(doc, ops.make_entry("about/health", long_text, origin=Origin.STATED, now=NOW))
    lines = render_index(doc).splitlines()
    body = [line for line in lines if line.startswith("about/")]
    assert body == [f"about/health: {long_text.strip()}", "about/observed: Drinks tea",
                    "about/tentative: Maybe likes jazz (tentative)"]
    assert "Learned skills:" in lines
