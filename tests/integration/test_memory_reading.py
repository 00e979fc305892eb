"""memory_read, memory_find, the owner-context index and related older messages, on real stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from core.clock import SystemClock
from core.errors import InvalidInput, NotFound
from core.memory import document as ops
from core.memory.model import Evidence, MemoryDocument, Origin
from core.memory.reading import memory_find, memory_read
from core.memory.render import render_index
from core.message import NewMessage, Role
from core.storage.fulltext import FullText
from core.storage.message_store import MessageStore
from core.storage.owner_store import OwnerStore
from core.storage.schema import messages

NOW = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)


async def _setup(engine: AsyncEngine) -> tuple[int, MessageStore]:
    owner = await OwnerStore(engine).add("ana", "Europe/Lisbon", (), NOW)
    return owner.id, MessageStore(engine, SystemClock())


async def _say(store: MessageStore, owner_id: int, text: str, role: Role = Role.OWNER, n: int = 0) -> int:
    appended = await store.append(
        NewMessage(owner_id, role, text, "test", NOW + timedelta(minutes=n), f"x{n}-{text[:20]}")
    )
    return appended.message.id


async def test_an_entry_shows_status_sources_and_only_a_quote_that_still_matches(engine: AsyncEngine) -> None:
    owner_id, store = await _setup(engine)
    source = await _say(store, owner_id, "Remember: my sister Ana lives in  Porto now.")
    reply = await _say(store, owner_id, "my sister Ana lives in Porto", Role.ASSISTANT, 1)
    entry = ops.make_entry(
        "people/sister", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=NOW,
        evidence=(Evidence(reply, "my sister Ana lives in Porto"), Evidence(source, "my sister Ana lives in Porto")),
    )
    doc = ops.add_entry(MemoryDocument(), entry)
    zone = (await OwnerStore(engine).by_id(owner_id)).zone
    shown = await memory_read(doc, "people/sister", owner_id, zone, store)
    assert shown["quote"] == "my sister Ana lives in Porto"  # whitespace folded, from the owner's message
    assert shown["status"] == "stated" and shown["label"] == "Confirmed" and shown["origin"] == "stated"
    assert shown["evidence_count"] == 2 and [s["id"] for s in shown["sources"]] == [reply, source]
    assert "Remember:" not in str(shown)  # never the whole source message

    async with engine.begin() as conn:  # the owner edits the source: the quote no longer holds
        await conn.execute(update(messages).where(messages.c.id == source).values(text="my brother lives in Faro"))
    edited = await memory_read(doc, "people/sister", owner_id, zone, store)
    assert edited["quote"] is None and edited["evidence_count"] == 2


async def test_an_older_note_without_a_quote_keeps_its_source(engine: AsyncEngine) -> None:
    owner_id, store = await _setup(engine)
    source = await _say(store, owner_id, "I am vegetarian")
    doc = ops.add_entry(MemoryDocument(), ops.make_entry(
        "preferences/food", "Vegetarian", origin=Origin.INFERRED, now=NOW, evidence=(Evidence(source),)))
    zone = (await OwnerStore(engine).by_id(owner_id)).zone
    shown = await memory_read(doc, "preferences/food", owner_id, zone, store)
    assert shown["quote"] is None and shown["sources"][0]["id"] == source
    assert shown["status"] == "tentative" and shown["label"] == "Mentioned once"


async def test_an_area_lists_its_entries_and_a_bad_path_names_the_areas(engine: AsyncEngine) -> None:
    owner_id, store = await _setup(engine)
    doc = MemoryDocument()
    for path, text, abstract in [("people/sister", "Sister: Ana\nLives in Porto", None),
                                 ("people/boss", "Boss: Rui, strict about deadlines", "Boss Rui")]:
        doc = ops.add_entry(doc, ops.make_entry(path, text, origin=Origin.STATED, now=NOW, abstract=abstract))
    zone = (await OwnerStore(engine).by_id(owner_id)).zone
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


async def test_related_older_messages_share_the_most_words_and_skip_recent_cards_and_secrets(engine: AsyncEngine) -> None:
    owner_id, store = await _setup(engine)
    best = await _say(store, owner_id, "Book the Casa Ramos restaurant in Porto for dinner", n=1)
    some = await _say(store, owner_id, "Porto was rainy", n=2)
    await _say(store, owner_id, "Casa Ramos restaurant Porto dinner", Role.ASSISTANT, n=3)
    await store.append(NewMessage(owner_id, Role.OWNER, "Restaurant Porto dinner booking", "test",
                                  NOW + timedelta(minutes=4), "card", card_title=True))
    await _say(store, owner_id, "restaurant porto password is hunter2hunter2", n=5)
    for i in range(6, 14):
        await _say(store, owner_id, f"unrelated chatter {i}", n=i)
    recent_start = await _say(store, owner_id, "dinner restaurant Porto tonight?", n=20)
    thread = await store.active_thread(owner_id)
    found = await FullText(engine).related(thread, "Book dinner at the Porto restaurant again", recent_start, 6)
    assert [m.id for m in found] == [best, some]
