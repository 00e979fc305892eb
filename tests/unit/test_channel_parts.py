"""Channel pieces with no I/O: command names, WhatsApp forms, Telegram voice notes, work slots."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from telegram import Update

from adapters.telegram.inbound import incoming_message as telegram_incoming
from adapters.whatsapp.inbound import incoming_message
from core.agent.slots import WorkSlots, waiting_elsewhere
from core.inbox.commands import command_name
from core.message import VoiceNote
from core.owner import Identity
from core.voice import (
    CANNOT_LISTEN,
    MAX_AUDIO_BYTES,
    MAX_AUDIO_SECONDS,
    PLACEHOLDER,
    TOO_BIG,
    TOO_LONG,
    refusal,
    upload_name,
)


def test_only_the_known_commands_are_commands() -> None:
    assert command_name("/memory") == "memory" and command_name("/Memory@NodBot please") == "memory"
    assert command_name("/shrug that was odd") is None and command_name("memory") is None and command_name("/") is None
    assert command_name("/remind") == "unknown" and command_name("/usage@NodBot") == "unknown"
    assert command_name("/1/2 cup") is None and command_name("/etc/hosts") is None


def test_whatsapp_forms_become_incoming_messages() -> None:
    base = {"MessageSid": "SM1", "From": "whatsapp:+351910000001", "Body": "hello", "ProfileName": "Maya"}
    message = incoming_message(base)
    assert message is not None and (message.sender.external_id, message.text, message.external_id) == (
        "+351910000001", "hello", "SM1")
    assert incoming_message({**base, "From": "+351910000001"}) is None  # SMS, not WhatsApp
    assert incoming_message({**base, "MessageSid": ""}) is None
    assert incoming_message({**base, "Body": ""}) is None  # nothing at all
    media = incoming_message({**base, "Body": "", "NumMedia": "2", "MediaContentType0": "image/png",
                              "MediaContentType1": "audio/ogg"})
    assert media is not None and media.attachment and media.text == "[sent a file: image/png]"
    assert [a.text for a in media.asides] == ["[sent a file: audio/ogg]"]
    assert incoming_message({**base, "NumMedia": "many"}).asides == ()  # type: ignore[union-attr]
    assert incoming_message({**base, "Forwarded": "true"}).forwarded  # type: ignore[union-attr]


async def test_a_turn_waiting_for_its_model_gives_its_slot_to_another() -> None:
    slots, order = WorkSlots(1), []
    model_answered = asyncio.Event()

    async def first() -> None:
        async with slots.held():
            order.append("first works")
            async with waiting_elsewhere():
                await model_answered.wait()
            order.append("first again")

    async def second() -> None:
        async with slots.held():
            order.append("second works")
            model_answered.set()

    await asyncio.wait_for(asyncio.gather(first(), second()), 2)
    assert order == ["first works", "second works", "first again"]


async def _until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until ``condition`` holds (a test wraps this in a timeout)."""
    while not condition():
        await asyncio.sleep(0)


async def test_storing_an_arriving_message_comes_before_any_turn_takes_a_slot() -> None:
    slots, order = WorkSlots(1), []

    async def arriving() -> None:
        async with slots.inbound():
            await _until(lambda: slots.waiting == 1)  # the turn is asking for the free slot now
            order.append("stored")

    async def turn() -> None:
        async with slots.held():
            order.append("turn")

    await asyncio.wait_for(asyncio.gather(arriving(), turn()), 2)
    assert order == ["stored", "turn"]


async def test_a_turn_back_from_its_model_goes_before_a_new_turn() -> None:
    slots, order = WorkSlots(1), []
    answered, newcomer_queued = asyncio.Event(), asyncio.Event()

    async def first() -> None:
        async with slots.held():
            async with waiting_elsewhere():
                await answered.wait()
            order.append("first finishes")

    async def blocker() -> None:
        async with slots.held():
            await newcomer_queued.wait()
            await _until(lambda: slots.waiting == 1)  # the newcomer is queued for a slot now...
            answered.set()  # ...then the first turn's model answers
            await _until(lambda: slots.waiting == 2)  # ...and the first turn queues to come back
            order.append("blocker done")

    async def newcomer() -> None:
        newcomer_queued.set()
        async with slots.held():
            order.append("newcomer works")

    one = asyncio.create_task(first())
    await _until(lambda: slots.free == 1)  # the first turn gave its slot back while its model thinks
    two = asyncio.create_task(blocker())
    await _until(lambda: slots.free == 0)
    three = asyncio.create_task(newcomer())
    await asyncio.wait_for(asyncio.gather(one, two, three), 2)
    assert order == ["blocker done", "first finishes", "newcomer works"]


def test_an_audio_medium_is_the_voice_note_itself_and_the_body_comes_first() -> None:
    base = {"MessageSid": "SM1", "From": "whatsapp:+351910000001", "Body": "", "NumMedia": "2",
            "MediaContentType0": "image/jpeg", "MediaUrl0": "https://api.twilio.com/m/ME0",
            "MediaContentType1": "audio/ogg", "MediaUrl1": "https://api.twilio.com/m/ME1"}
    note = incoming_message(base)
    assert note is not None and note.voice == VoiceNote("https://api.twilio.com/m/ME1", "voice.ogg", "audio/ogg")
    assert (note.text, note.attachment) == (PLACEHOLDER, True)
    assert [(a.text, a.attachment) for a in note.asides] == [("[sent a file: image/jpeg]", True)]
    captioned = incoming_message({**base, "Body": "listen to this"})
    assert captioned is not None and [a.text for a in captioned.asides][0] == "listen to this"


def test_telegram_voice_and_audio_carry_what_transcription_needs() -> None:
    def update(**extra: object) -> Update:
        message = {"message_id": 1, "date": 1_764_750_000, "chat": {"id": 42, "type": "private", "first_name": "M"},
                   "from": {"id": 42, "is_bot": False, "first_name": "M"}, **extra}
        return Update.de_json({"update_id": 9, "message": message}, None)

    sender = Identity("telegram", "42")
    voice = telegram_incoming(update(voice={"file_id": "F1", "file_unique_id": "u", "duration": 7,
                                            "mime_type": "audio/ogg", "file_size": 2048}), sender)
    assert voice is not None and voice.voice == VoiceNote("F1", "voice.ogg", "audio/ogg", 2048, 7)
    assert (voice.text, voice.attachment, voice.asides) == ("[sent a voice message]", True, ())
    song = telegram_incoming(update(caption="what does he say?", audio={
        "file_id": "F2", "file_unique_id": "v", "duration": 61, "file_name": "memo.m4a", "mime_type": "audio/mp4"}),
        sender)
    assert song is not None and song.voice == VoiceNote("F2", "memo.m4a", "audio/mp4", None, 61)
    assert [(a.text, a.attachment, a.forwarded) for a in song.asides] == [("what does he say?", False, False)]
    photo = telegram_incoming(update(photo=[{"file_id": "P", "file_unique_id": "p", "width": 1, "height": 1}]), sender)
    assert photo is not None and photo.voice is None


def test_voice_bounds_upload_names_and_the_stored_reference() -> None:
    assert refusal(VoiceNote("F", "voice.ogg"), can_listen=False) == CANNOT_LISTEN
    assert refusal(VoiceNote("F", "voice.ogg", duration_s=MAX_AUDIO_SECONDS + 1), True) == TOO_LONG
    assert refusal(VoiceNote("F", "voice.ogg", size_bytes=MAX_AUDIO_BYTES + 1), True) == TOO_BIG
    assert refusal(VoiceNote("F", "voice.ogg", size_bytes=MAX_AUDIO_BYTES, duration_s=MAX_AUDIO_SECONDS), True) is None
    assert upload_name("audio/ogg", "voice.oga") == "voice.ogg"  # OpenAI refuses .oga
    assert upload_name("audio/mpeg; codecs=mp3") == "voice.mp3" and upload_name(None) == "voice.ogg"
    note = VoiceNote("https://api.twilio.com/m/ME1", "voice.ogg", "audio/ogg", 10, 3)
    assert VoiceNote.from_json(note.to_json()) == note
    assert VoiceNote.from_json("{not json") is None and VoiceNote.from_json(None) is None
