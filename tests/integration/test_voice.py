"""Voice notes end to end: Telegram's getFile and Twilio's media, the transcription endpoint, the turn.

The audio goes through the real clients — python-telegram-bot downloading from the fake
Bot API, aiohttp following the fake Twilio's redirect, the openai client uploading to the
scripted server's ``/v1/audio/transcriptions`` — and never lands in the database or on
disk: every file the test's Nod wrote is searched for its bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from adapters.storage.schema import messages as messages_table
from core.message import Inbound, VoiceNote
from core.owner import Identity
from core.voice import CANNOT_LISTEN, MAX_AUDIO_BYTES, MAX_TRANSCRIPT_CHARS, TOO_BIG, TOO_LONG, UNHEARD
from tests.fakes.model_server import FakeModelServer, Heard, text
from tests.fakes.telegram_server import FakeTelegramServer, message_update, voice_update
from tests.fakes.twilio_server import FakeTwilioServer, inbound_form
from tests.integration.harness import AGENT, make_harness
from tests.integration.live import MAYA_TELEGRAM, MAYA_WHATSAPP, Live, make_live

TRANSCRIBE = "whisper-1"
MARK = b"\x00voice-bytes-7f3a\x01"
AUDIO = b"OggS" + MARK * 64  # what no file of Nod's may ever hold
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response />'


@pytest.fixture
async def hearing(tmp_path: Path, server: FakeModelServer, telegram: FakeTelegramServer,
                  twilio: FakeTwilioServer) -> AsyncIterator[Live]:
    """Nod with both channels and a transcription model."""
    async for running in make_live(tmp_path, server, telegram, twilio, transcribe_model=TRANSCRIBE):
        yield running


async def _stored(live: Live) -> list[tuple[Any, ...]]:
    async with live.nod.svc.engine.connect() as conn:
        rows = (await conn.execute(select(messages_table).order_by(messages_table.c.id))).all()
    return [(r.role, r.text, r.attachment, r.voice, r.voice_note, r.awaiting) for r in rows]


async def _settle(live: Live) -> None:
    await asyncio.wait_for(live.running.front.wait(live.nod.owner.id), 15)


def _audio_on_disk(root: Path) -> list[Path]:
    """Every file under ``root`` (the database, its WAL, the search index) holding the audio's bytes."""
    return [p for p in root.rglob("*") if p.is_file() and MARK in p.read_bytes()]


def _whatsapp_audio(sid: str, url: str, **extra: str) -> dict[str, str]:
    return inbound_form(sid, MAYA_WHATSAPP, NumMedia="1", MediaContentType0="audio/ogg", MediaUrl0=url, **extra)


async def test_a_telegram_voice_note_is_transcribed_stored_flagged_voice_answered_and_counted(
        tmp_path: Path, hearing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.add_file("F1", AUDIO)
    server.enqueue_transcript(TRANSCRIBE, Heard("remind me to call Ana tomorrow"))
    server.enqueue(AGENT, text("I will."))
    assert await hearing.post_update(voice_update(1, MAYA_TELEGRAM, "F1", duration=30, file_size=len(AUDIO))) == 200
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == ["I will."]
    await _settle(hearing)
    assert telegram.of("getFile")[0]["file_id"] == "F1" and telegram.downloads == ["voice/file_0.oga"]
    upload = server.calls("transcribe")[0]
    assert (upload["model"], upload["filename"], upload["data"]) == (TRANSCRIBE, "voice.ogg", AUDIO)  # not .oga
    assert await _stored(hearing) == [
        ("owner", "[sent a voice message]", True, False, None, False),  # the note, heard: its reference is gone
        ("owner", "remind me to call Ana tomorrow", False, True, None, False),
        ("assistant", "I will.", False, False, None, False),
    ]
    request = server.calls()[-1]["messages"][-1]["content"]
    assert request.endswith("\n\n[voice note, transcribed] remind me to call Ana tomorrow")  # no [id] prefix (issue 38)
    rows = await hearing.nod.usage_rows("transcribe")
    assert [(r.model, r.outcome, r.estimated, r.owner_id) for r in rows] == [
        (TRANSCRIBE, "ok", False, hearing.nod.owner.id)]
    assert rows[0].cost_usd == pytest.approx(0.006 * 30 / 60) and rows[0].duration_ms >= 0
    assert _audio_on_disk(tmp_path) == []


async def test_a_whatsapp_voice_note_is_fetched_with_twilios_credentials_transcribed_and_answered(
        tmp_path: Path, hearing: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    url = twilio.add_media("ME1", AUDIO)  # api.twilio.com: fetched through TWILIO_API_BASE_URL, the fake
    server.enqueue_transcript(TRANSCRIBE, Heard("what is on tomorrow?", seconds=12.5))
    server.enqueue(AGENT, text("Nothing yet."))
    assert await hearing.post_whatsapp(_whatsapp_audio("SM1", url)) == (200, EMPTY_TWIML)
    assert await twilio.wait_for(1) == ["Nothing yet."]
    await _settle(hearing)
    assert twilio.media_fetches == ["ME1"]  # past the basic-auth redirect, without the credentials
    assert server.calls("transcribe")[0]["data"] == AUDIO
    assert [r[1:4] for r in await _stored(hearing)][:2] == [
        ("[sent a voice message]", True, False), ("what is on tomorrow?", False, True)]
    rows = await hearing.nod.usage_rows("transcribe")
    assert [(r.outcome, r.estimated) for r in rows] == [("ok", False)]  # the server said how long it was
    assert rows[0].cost_usd == pytest.approx(0.006 * 12.5 / 60)
    assert _audio_on_disk(tmp_path) == []


async def test_a_note_of_unknown_length_is_priced_by_an_estimate_marked_as_one(
        hearing: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    url = twilio.add_media("ME1", AUDIO)
    server.enqueue_transcript(TRANSCRIBE, Heard("hello"))  # no usage in the answer, and Twilio declares nothing
    server.enqueue(AGENT, text("Hi."))
    await hearing.post_whatsapp(_whatsapp_audio("SM1", url))
    await twilio.wait_for(1)
    await _settle(hearing)
    row = (await hearing.nod.usage_rows("transcribe"))[0]
    assert row.estimated and row.cost_usd == pytest.approx(0.006 * len(AUDIO) / 2_000 / 60)


async def test_without_a_transcription_model_one_sentence_and_only_the_flagged_attachment(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    telegram.add_file("F1", AUDIO)
    update = voice_update(1, MAYA_TELEGRAM, "F1")
    assert await live.post_update(update) == 200
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == [CANNOT_LISTEN]
    assert await live.post_update(update) == 200  # redelivered: stored once, answered once
    url = twilio.add_media("ME1", AUDIO)
    assert (await live.post_whatsapp(_whatsapp_audio("SM1", url)))[0] == 200
    assert await twilio.wait_for(1) == [CANNOT_LISTEN]
    server.enqueue(AGENT, text("Typed, answered."))
    await live.post_update(message_update(2, MAYA_TELEGRAM, "and this?"))
    assert [p["text"] for p in await telegram.wait_for("sendMessage", 2)] == [CANNOT_LISTEN, "Typed, answered."]
    await _settle(live)
    assert (await _stored(live))[:2] == [("owner", "[sent a voice message]", True, False, None, False)] * 2
    assert len(server.calls()) == 1 and server.calls("transcribe") == []  # no turn for either note
    assert not telegram.of("getFile") and twilio.media_fetches == []


async def test_a_note_declared_too_large_or_too_long_is_refused_before_anything_is_downloaded(
        hearing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.add_file("F1", AUDIO)
    await hearing.post_update(voice_update(1, MAYA_TELEGRAM, "F1", file_size=MAX_AUDIO_BYTES + 1))
    await hearing.post_update(voice_update(2, MAYA_TELEGRAM, "F1", duration=601))
    assert [p["text"] for p in await telegram.wait_for("sendMessage", 2)] == [TOO_BIG, TOO_LONG]
    assert not telegram.of("getFile") and server.requests == [] and server.calls("transcribe") == []
    assert [r[2:] for r in await _stored(hearing)] == [(True, False, None, False)] * 2


async def test_a_note_found_too_large_when_fetched_is_refused_with_a_sentence(
        tmp_path: Path, hearing: Live, server: FakeModelServer, telegram: FakeTelegramServer,
        twilio: FakeTwilioServer) -> None:
    telegram.add_file("F1", AUDIO, declared_size=MAX_AUDIO_BYTES + 1)  # the update declared nothing; getFile does
    await hearing.post_update(voice_update(1, MAYA_TELEGRAM, "F1"))
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == [TOO_BIG]
    url = twilio.add_media("ME1", MARK * (MAX_AUDIO_BYTES // len(MARK) + 1))  # Twilio declares nothing at all
    await hearing.post_whatsapp(_whatsapp_audio("SM1", url))
    assert await twilio.wait_for(1) == [TOO_BIG]
    await _settle(hearing)
    assert server.calls("transcribe") == [] and server.requests == []
    assert [r[1:] for r in await _stored(hearing)] == [("[sent a voice message]", True, False, None, False)] * 2
    assert _audio_on_disk(tmp_path) == []


async def test_a_failed_transcription_is_one_sentence_and_the_note_stays_an_attachment(
        hearing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.add_file("F1", AUDIO)
    server.enqueue_transcript(TRANSCRIBE, *[Heard("", status=500)] * 3)  # the SDK's two retries too
    await hearing.post_update(voice_update(1, MAYA_TELEGRAM, "F1"))
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == [UNHEARD]
    await _settle(hearing)
    assert server.requests == [] and [r[2:] for r in await _stored(hearing)] == [(True, False, None, False)]
    assert [r.outcome for r in await hearing.nod.usage_rows("transcribe")] == ["unavailable"]


async def test_a_page_or_an_endless_text_instead_of_a_transcript_is_never_taken_for_the_owners_words(
        hearing: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.add_file("F1", AUDIO)
    telegram.add_file("F2", AUDIO)
    server.enqueue_transcript(TRANSCRIBE, Heard("", raw_body="<!doctype html><h1>Welcome to nginx!</h1>"),
                              Heard("words " * (MAX_TRANSCRIPT_CHARS // 6 + 1)))
    await hearing.post_update(voice_update(1, MAYA_TELEGRAM, "F1"))
    assert [p["text"] for p in await telegram.wait_for("sendMessage")] == [UNHEARD]
    await hearing.post_update(voice_update(2, MAYA_TELEGRAM, "F2"))
    assert [p["text"] for p in await telegram.wait_for("sendMessage", 2)][1:] == [UNHEARD]
    await _settle(hearing)
    assert server.requests == []  # no turn answered either as if the owner had said it
    assert all(not row[3] for row in await _stored(hearing))  # nothing stored flagged voice


async def test_a_voice_note_whose_transcription_a_crash_cut_off_is_heard_and_answered_after_the_restart(
        tmp_path: Path, database_url: str, server: FakeModelServer, telegram: FakeTelegramServer,
        twilio: FakeTwilioServer) -> None:
    telegram.add_file("F1", AUDIO)
    server.enqueue_transcript(TRANSCRIBE, Heard("too late", delay_s=60))
    on = {"transcribe_model": TRANSCRIBE, "database_url": database_url}  # SQLite, and PostgreSQL when configured
    async for live in make_live(tmp_path, server, telegram, twilio, **on):
        assert await live.post_update(voice_update(1, MAYA_TELEGRAM, "F1", duration=5)) == 200
        await server.wait_for_calls(1, "transcribe")  # the process dies while the note is being heard
    server.enqueue_transcript(TRANSCRIBE, Heard("book the dentist for Tuesday"))
    server.enqueue(AGENT, text("Which time suits you?"))
    async for live in make_live(tmp_path, server, telegram, twilio, **on):
        note = (await _stored(live))[0]
        assert note[4] is not None and note[5]  # stored awaiting, with its reference (never its audio)
        assert await live.running.front.recover(live.running.names) == 1
        assert [p["text"] for p in await telegram.wait_for("sendMessage")] == ["Which time suits you?"]
        await _settle(live)
        assert [r[1:4] for r in await _stored(live)] == [
            ("[sent a voice message]", True, False), ("book the dentist for Tuesday", False, True),
            ("Which time suits you?", False, False)]
        assert await live.nod.svc.messages.awaiting_requests() == []
        assert len(server.calls("transcribe")) == 2
        assert [r.outcome for r in await live.nod.usage_rows("transcribe")] == ["stopped", "ok"]
    assert _audio_on_disk(tmp_path) == []


@dataclass
class Clips:
    """A channel's audio as a dictionary: the AudioSource port with nothing behind it."""

    clips: dict[str, bytes]

    async def fetch(self, note: VoiceNote, max_bytes: int) -> bytes:
        return self.clips[note.source]


async def test_a_message_typed_while_a_note_is_heard_restarts_the_turn_and_both_are_answered_once(
        tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue_transcript(TRANSCRIBE, Heard("first words", delay_s=60), Heard("call the plumber"))
    server.enqueue(AGENT, text("Calling the plumber is on your list, and Tuesday works."))
    async for nod in make_harness(tmp_path, server, transcribe_model=TRANSCRIBE):
        conductor = nod.svc.conductor(nod.sink, {"telegram": Clips({"F1": AUDIO})})
        maya = Identity("telegram", str(MAYA_TELEGRAM))
        note = Inbound(maya, "[sent a voice message]", "u1", attachment=True, voice=VoiceNote("F1", "voice.ogg"))
        await conductor.receive(nod.owner, note)
        await server.wait_for_calls(1, "transcribe")
        await conductor.receive(nod.owner, Inbound(maya, "and Tuesday is fine", "u2"))
        await asyncio.wait_for(conductor.wait(nod.owner.id), 15)
        assert nod.sink.sent == ["Calling the plumber is on your list, and Tuesday works."]
        stored = await nod.svc.messages.recent(nod.owner.id, 10)
        assert [(m.text, m.voice) for m in stored] == [
            ("[sent a voice message]", False), ("and Tuesday is fine", False), ("call the plumber", True),
            ("Calling the plumber is on your list, and Tuesday works.", False)]
        prompt = str(server.calls()[0]["messages"])
        assert "and Tuesday is fine" in prompt and "[voice note, transcribed] call the plumber" in prompt
        assert await nod.svc.messages.awaiting_requests() == []  # nothing left to answer a second time
        await conductor.close()
