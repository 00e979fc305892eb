"""Photos and documents end to end: python-telegram-bot and twilio against the fake platforms, the model's image parts.

The bytes go through the real clients — python-telegram-bot downloading from the fake Bot
API, aiohttp following the fake Twilio's redirect, the openai client posting the image as
a data URL to the scripted server — and never land in the database or on disk: every file
the test's Nod wrote, and every text column, is searched for them.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import select
from sqlalchemy import text as sql_text

from adapters.storage.message_edits import previous_versions
from adapters.storage.schema import messages as messages_table
from core.attachments.media import (
    IMAGE_TOO_BIG,
    MAX_DOCUMENT_CHARS,
    NO_VISION,
    NO_VISION_ALONE,
    UNSEEN,
)
from core.history.scope import Scope
from core.memory import document as ops
from core.memory.values import Evidence, Origin
from core.saving.learn import FILE_NOT_WORDS
from tests.fakes.files import jpeg, pdf, png_header
from tests.fakes.loopback import serve
from tests.fakes.model_server import FakeModelServer, structured, text, tool
from tests.fakes.telegram_server import FakeTelegramServer, document_update, edited_update, message_update, photo_update
from tests.fakes.twilio_server import FakeTwilioServer, inbound_form
from tests.integration.harness import AGENT, MEMORY
from tests.integration.live import MAYA_TELEGRAM, MAYA_WHATSAPP, Live, make_live

PHOTO = jpeg(seed=11)
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response />'


@pytest.fixture
async def seeing(tmp_path: Path, database_url: str, server: FakeModelServer, telegram: FakeTelegramServer,
                 twilio: FakeTwilioServer) -> AsyncIterator[Live]:
    """Nod with both channels, on SQLite and PostgreSQL (each with its derived search index), its agent model
    shown images (auto)."""
    index = {"search_index_dir": str(tmp_path / "search")} if database_url.startswith("postgresql") else {}
    async for running in make_live(tmp_path, server, telegram, twilio, database_url=database_url, **index):
        yield running


async def _settle(live: Live) -> None:
    await asyncio.wait_for(live.running.front.wait(live.nod.owner.id), 15)


async def _rows(live: Live) -> list[Any]:
    async with live.nod.svc.engine.connect() as conn:
        return list((await conn.execute(select(messages_table).order_by(messages_table.c.id))).all())


async def _nowhere(live: Live, root: Path, *secrets: bytes) -> None:
    """None of ``secrets`` (and not their base64) in any file under ``root`` nor any stored message's columns."""
    needles = [n for s in secrets for n in (s[200:264], base64.b64encode(s)[300:380])]
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert not any(n in data for n in needles), path
    stored = " ".join(str(tuple(r)) for r in await _rows(live)).encode()
    assert not any(n in stored for n in needles)


def _images(request: dict[str, Any]) -> list[str]:
    content = request["messages"][-1]["content"]
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


def _final_text(request: dict[str, Any]) -> str:
    content = request["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n\n".join(p["text"] for p in content if p.get("type") == "text")


async def test_a_photo_with_a_caption_is_shown_to_a_vision_model_as_an_image_part_and_never_stored(
        tmp_path: Path, seeing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.add_file("P1", PHOTO, folder="photos", ending="jpg")
    server.enqueue(AGENT, text("A harbour at dusk."))
    assert await seeing.post_update(photo_update(1, MAYA_TELEGRAM, "P1", caption="what is this place?")) == 200
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == ["A harbour at dusk."]
    await _settle(seeing)
    request = server.calls()[0]
    assert _images(request) == ["data:image/jpeg;base64," + base64.b64encode(PHOTO).decode()]
    assert _final_text(request).endswith("[sent a photo] what is this place?")
    found = await seeing.nod.svc.tools.read_for_operator(seeing.nod.owner, "history_search", {"query": "place"})
    assert found["results"][0]["text"] == "what is this place?" and found["results"][0]["file"] == "[sent a photo]"
    rows = await _rows(seeing)
    assert [(r.text, r.attachment, r.platform_id) for r in rows] == [
        ("what is this place?", False, f"{MAYA_TELEGRAM}:1"), ("A harbour at dusk.", False, None)]
    assert '"source": "P1"' in rows[0].media and not rows[0].awaiting  # the reference, never the bytes
    assert {p["action"] for p in telegram.of("sendChatAction")} == {"typing"}  # never "upload_photo"
    await _nowhere(seeing, tmp_path, PHOTO)


async def test_without_vision_one_sentence_and_the_caption_is_answered(
        tmp_path: Path, server: FakeModelServer, telegram: FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    async for live in make_live(tmp_path, server, telegram, twilio, agent_vision="off"):
        telegram.add_file("P1", PHOTO)
        server.enqueue(AGENT, text("Lisbon is lovely in May."))
        await live.post_update(photo_update(1, MAYA_TELEGRAM, "P1", caption="should I go to Lisbon in May?"))
        assert [p["text"] for p in await telegram.wait_for("sendMessage")] == [f"{NO_VISION}\n\nLisbon is lovely in May."]
        await live.post_update(photo_update(2, MAYA_TELEGRAM, "P1"))  # no caption: the sentence alone, no turn
        assert [p["text"] for p in await telegram.wait_for("sendMessage", 2)][1] == NO_VISION_ALONE
        await _settle(live)
        assert len(server.calls()) == 1 and isinstance(server.calls()[0]["messages"][-1]["content"], str)
        assert telegram.downloads == [] and not telegram.of("getFile")  # nothing fetched that nobody looks at
        assert [(r.text, r.role) for r in await _rows(live)] == [  # the sentence is not stored as Nod's words
            ("should I go to Lisbon in May?", "owner"), ("Lisbon is lovely in May.", "assistant"), ("[sent a photo]", "owner")]


async def test_a_server_that_refuses_images_is_learnt_once_then_the_words_alone_are_sent(
        seeing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.rejects_images = True
    telegram.add_file("P1", PHOTO)
    server.enqueue(AGENT, text("Pasta, probably."), text("Yes, Tuesday."))
    await seeing.post_update(photo_update(1, MAYA_TELEGRAM, "P1", caption="what should I cook tonight?"))
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == [f"{NO_VISION}\n\nPasta, probably."]
    await _settle(seeing)
    assert server.refused == ["Invalid content type. image_url is only supported by certain models."]
    assert _images(server.calls()[0]) and not _images(server.calls()[1])  # refused once, asked again in words
    assert _final_text(server.calls()[1]).endswith("[sent a photo] what should I cook tonight?")
    await seeing.post_update(photo_update(2, MAYA_TELEGRAM, "P1", caption="and is Tuesday free?"))
    assert [p["text"] for p in await telegram.wait_for("sendMessage", 2)][1] == f"{NO_VISION}\n\nYes, Tuesday."
    await _settle(seeing)
    assert len(server.refused) == 1 and len(telegram.downloads) == 1  # remembered: not fetched, not sent again


async def test_an_oversize_image_is_refused_with_a_sentence_and_nothing_is_stored_but_the_message(
        tmp_path: Path, seeing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.add_file("BIG", PHOTO, declared_size=11 * 1024 * 1024)
    await seeing.post_update(photo_update(1, MAYA_TELEGRAM, "BIG", file_size=11 * 1024 * 1024))
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == [IMAGE_TOO_BIG]
    bomb = png_header(10_000, 6_000)  # 60 megapixels declared inside a file of a few bytes
    telegram.add_file("BOMB", bomb)
    server.enqueue(AGENT, text("Tell me what it shows and I'll help."))
    await seeing.post_update(document_update(2, MAYA_TELEGRAM, "BOMB", "plan.png", "image/png", caption="is this plan ok?"))
    sent = [p["text"] for p in await telegram.wait_for("sendMessage", 2)]
    assert sent[1] == f"{IMAGE_TOO_BIG}\n\nTell me what it shows and I'll help."
    await _settle(seeing)
    assert not _images(server.calls()[0]) and len(server.calls()) == 1  # no turn for the first, no image in the second
    rows = await _rows(seeing)
    assert [(r.text, r.attachment, r.media is None) for r in rows] == [
        ("[sent a photo]", True, True), ("is this plan ok?", False, False), ("Tell me what it shows and I'll help.", False, True)]
    assert telegram.downloads == ["voice/file_1.oga"]  # the declared one never fetched


async def test_a_30_page_pdf_and_a_2_mb_text_file_are_read_as_untrusted_attachments_within_bounds(
        tmp_path: Path, seeing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    lease = pdf([f"Page {n} of the lease: clause {n} says the rent is due on day {n}." for n in range(1, 31)])
    notes = ("FIRST-LINE of the notes\n" + "a line of field notes, nothing more\n" * 58_000 + "LAST-LINE\n").encode()
    assert len(notes) > 2_000_000
    telegram.add_file("D1", lease)
    telegram.add_file("D2", notes)
    server.enqueue(AGENT, text("Clause 30: day 30."), text("They start with FIRST-LINE."))
    await seeing.post_update(document_update(1, MAYA_TELEGRAM, "D1", "lease.pdf", "application/pdf",
                                             file_size=len(lease), caption="when is the rent due by clause 30?"))
    await telegram.wait_for("sendMessage")
    await _settle(seeing)
    await seeing.post_update(document_update(2, MAYA_TELEGRAM, "D2", "notes.txt", "text/plain", file_size=len(notes)))
    assert [p["text"] for p in await telegram.wait_for("sendMessage", 2)] == ["Clause 30: day 30.", "They start with FIRST-LINE."]
    await _settle(seeing)
    first, second = (_final_text(c) for c in server.calls())
    assert '<untrusted_attachment file="lease.pdf (application/pdf, ' in first and 'pages="30"' in first
    assert "[page 30]\nPage 30 of the lease: clause 30 says the rent is due on day 30." in first
    assert first.index("when is the rent due by clause 30?") < first.index("<untrusted_attachment")
    assert "FIRST-LINE" in second and "LAST-LINE" not in second and len(second) < MAX_DOCUMENT_CHARS + 4_000
    assert f"of {len(notes):,} characters; the rest is not shown" in second
    rows = await _rows(seeing)
    assert [(r.text, r.attachment) for r in rows if r.role == "owner"] == [
        ("when is the rent due by clause 30?", False), ("[sent a document: notes.txt (text/plain, 2.0 MB)]", True)]
    assert not any("clause 30 says" in r.text or "field notes" in r.text for r in rows)  # the text is never stored
    await _nowhere(seeing, tmp_path, lease, notes[1000:2000])


async def test_whatsapp_images_come_from_twilio_with_its_credentials_and_a_forged_url_is_never_fetched(
        tmp_path: Path, seeing: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    asked: list[str] = []

    async def elsewhere(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(body=PHOTO, content_type="image/jpeg")

    app = web.Application()
    app.router.add_get("/{any:.*}", elsewhere)
    runner, port = await serve(app)
    try:
        url = twilio.add_media("ME1", PHOTO, "image/jpeg")
        server.enqueue(AGENT, text("A receipt for 12 euros."), text("Send it as a photo and I'll look."))
        form = inbound_form("SM1", MAYA_WHATSAPP, "what is this?", NumMedia="1", MediaContentType0="image/jpeg",
                            MediaUrl0=url)
        assert await seeing.post_whatsapp(form) == (200, EMPTY_TWIML)
        assert await twilio.wait_for(1) == ["A receipt for 12 euros."]
        await _settle(seeing)
        assert twilio.media_fetches == ["ME1"] and _images(server.calls()[0])
        for n, forged in enumerate((f"http://127.0.0.1:{port}/x.jpg", f"https://api.twilio.com.127.0.0.1.nip.io:{port}/x"), 2):
            form = inbound_form(f"SM{n}", MAYA_WHATSAPP, "and this?", NumMedia="1", MediaContentType0="image/jpeg",
                                MediaUrl0=forged)
            assert (await seeing.post_whatsapp(form))[0] == 200
            await _settle(seeing)
        assert (await twilio.wait_for(2))[1] == f"{UNSEEN}\n\nSend it as a photo and I'll look."
        assert asked == [] and twilio.media_fetches == ["ME1"]  # neither forged address was ever asked
    finally:
        await runner.cleanup()
    await _nowhere(seeing, tmp_path, PHOTO)


async def test_remember_whats_in_this_photo_saves_only_what_the_caption_or_a_later_owner_message_says(
        seeing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.add_file("C1", jpeg(seed=3))
    learn = tool("manage_personal_context", {"action": "memory_learn"})
    server.enqueue(AGENT, learn, text("Got it."), learn, text("Saved."))
    card = {"path": "people/ana", "text": "Ana's phone: +351 912 345 678", "message_ids": [1],
            "quote": "remember what's in this photo"}  # what the photo showed, passed off as the caption's
    said = {"path": "people/ana", "text": "Ana's phone: +351 912 345 678", "message_ids": [3], "quote": "+351 912 345 678"}
    server.enqueue(MEMORY, structured({"notes": [card]}), structured({"notes": [said]}), purpose="memory_learn")
    await seeing.post_update(photo_update(1, MAYA_TELEGRAM, "C1", caption="remember what's in this photo"))
    await telegram.wait_for("sendMessage")
    await _settle(seeing)
    assert (await seeing.nod.svc.memory.load(seeing.nod.owner.id)).document.entries == ()
    asked = json.dumps(server.calls("memory_learn")[0]["messages"])
    assert "remember what's in this photo" in asked and "data:image" not in asked and "image_url" not in asked
    result = json.loads(server.calls()[1]["messages"][-1]["content"])  # what the agent was told
    assert result["attachment"] == FILE_NOT_WORDS and result["refused"][0]["reason"].startswith("ungrounded")
    await seeing.post_update(message_update(3, MAYA_TELEGRAM, "Ana's number is +351 912 345 678, remember it"))
    await telegram.wait_for("sendMessage", 2)
    await _settle(seeing)
    entries = (await seeing.nod.svc.memory.load(seeing.nod.owner.id)).document.entries
    assert [(e.text, [ev.message_id for ev in e.evidence]) for e in entries] == [("Ana's phone: +351 912 345 678", [3])]


async def test_an_edit_before_the_answer_restarts_its_turn_and_one_after_it_changes_the_words_without_an_answer(
        seeing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, text("too slow", delay_s=60), text("At 10:00 on Tuesday."))
    await seeing.post_update(message_update(1, MAYA_TELEGRAM, "when is the dentist on Tusday?"))
    await server.wait_for_calls(1)
    assert await seeing.post_update(edited_update(2, MAYA_TELEGRAM, 1, "when is the dentist on Tuesday?")) == 200
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == ["At 10:00 on Tuesday."]
    await _settle(seeing)
    assert _final_text(server.calls()[1]).endswith("when is the dentist on Tuesday?")
    assert "Tusday" not in json.dumps(server.calls()[1]["messages"])
    owner, tools = seeing.nod.owner, seeing.nod.svc.tools
    note = ops.make_entry("routines/dentist", "Dentist on Tuesday", origin=Origin.STATED, now=seeing.nod.svc.clock.now(),
                          evidence=(Evidence(1, "dentist on Tuesday"),))
    await seeing.nod.svc.memory.update(owner.id, lambda doc: ops.add_entry(doc, note))
    assert (await tools.read_for_operator(owner, "memory_read", {"path": "routines/dentist"}))["quote"] == "dentist on Tuesday"
    index = seeing.nod.svc.search_index
    if index is not None:  # SQLite: the derived index holds both messages before the later edit
        assert await index.ready_for(2)
    for update_id in (3, 3):  # the later edit, and Telegram delivering it again
        await seeing.post_update(edited_update(update_id, MAYA_TELEGRAM, 1, "when is the orthodontist on Wednesday?"))
    await _settle(seeing)
    assert len(server.calls()) == 2 and len(telegram.of("sendMessage")) == 1  # not answered again
    rows = await _rows(seeing)
    assert rows[0].text == "when is the orthodontist on Wednesday?" and not rows[0].awaiting
    assert await previous_versions(seeing.nod.svc.engine, rows[0].id) == [
        "when is the dentist on Tusday?", "when is the dentist on Tuesday?"]
    assert (await tools.read_for_operator(owner, "memory_read", {"path": "routines/dentist"}))["quote"] is None  # no longer said

    async def found(words: str) -> list[int]:
        return [r["id"] for r in (await tools.read_for_operator(owner, "history_search", {"query": words}))["results"]]

    assert await found("orthodontist") == [rows[0].id, rows[1].id]  # the reply matches by its context, lower
    assert await found("Tusday") == [] and await found("dentist") == []  # the old words are never searched
    if index is not None:  # the index answered, with the message's document and its successor's context remade
        scope = Scope(thread_id=rows[0].thread_id, snapshot=rows[1].id)
        assert index.reader.count(("orthodontist",), scope) == 2 and index.reader.count(("dentist",), scope) == 0
    assert await _database_matches(seeing, "orthodontist") == [rows[0].id, rows[1].id]  # its own index too
    assert await _database_matches(seeing, "dentist") == [] and await _database_matches(seeing, "Tusday") == []


async def _database_matches(live: Live, word: str) -> list[int]:
    """The messages the database's own full-text index (FTS5, tsvector) finds ``word`` in, as text or context."""
    sqlite = "SELECT rowid FROM search_fts WHERE search_fts MATCH :w ORDER BY rowid"
    postgresql = "SELECT id FROM messages WHERE search_tsv @@ plainto_tsquery('nod_search', :w) ORDER BY id"
    async with live.nod.svc.engine.connect() as conn:
        query = sqlite if conn.dialect.name == "sqlite" else postgresql
        return [int(i) for i in (await conn.execute(sql_text(query), {"w": word})).scalars()]


async def test_a_photo_whose_fetch_a_stopped_process_cut_off_is_fetched_again_and_answered_once_on_both_databases(
        tmp_path: Path, database_url: str, server: FakeModelServer, telegram: FakeTelegramServer,
        twilio: FakeTwilioServer) -> None:
    telegram.add_file("P1", PHOTO)
    telegram.held = asyncio.Event()  # the first process's download never ends
    on = {"database_url": database_url}  # SQLite, and PostgreSQL when configured (kill -9: tests/e2e)
    async for live in make_live(tmp_path, server, telegram, twilio, **on):
        assert await live.post_update(photo_update(1, MAYA_TELEGRAM, "P1", caption="which bird is this?")) == 200
        await telegram.wait_for_download(1)  # the process stops while the photo is being fetched
    telegram.held.set()
    telegram.held = None
    server.enqueue(AGENT, text("A European robin."))
    async for live in make_live(tmp_path, server, telegram, twilio, **on):
        [row] = await _rows(live)
        assert row.awaiting and '"source": "P1"' in row.media  # stored awaiting, with its reference
        assert await live.running.front.recover(live.running.names) == 1
        assert [p["text"] for p in await telegram.wait_for("sendMessage")] == ["A European robin."]
        await _settle(live)
        assert len(server.calls()) == 1 and _images(server.calls()[0]) and len(telegram.downloads) == 2
        assert await live.nod.svc.messages.awaiting_requests() == []
        await _nowhere(live, tmp_path, PHOTO)
