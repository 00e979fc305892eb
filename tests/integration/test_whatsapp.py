"""WhatsApp end to end: Twilio's signed webhook into Nod, replies through the twilio client to the fake REST API."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from adapters.storage.schema import messages as messages_table
from tests.fakes.model_server import FakeModelServer, structured, text, tool
from tests.fakes.twilio_server import FakeTwilioServer, inbound_form, sign
from tests.integration.harness import AGENT, MEMORY
from tests.integration.live import MAYA_WHATSAPP, Live

PUBLIC = "https://nod.example.org/webhooks/whatsapp"
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response />'


async def _stored(live: Live) -> list[tuple[str, str, bool, bool, str | None]]:
    async with live.nod.svc.engine.connect() as conn:
        rows = (await conn.execute(select(messages_table).order_by(messages_table.c.id))).all()
    return [(r.role, r.text, r.forwarded, r.attachment, r.external_id) for r in rows]


async def _settle(live: Live) -> None:
    await asyncio.wait_for(live.running.front.wait(live.nod.owner.id), 15)


async def test_a_message_in_empty_twiml_at_once_and_the_reply_through_the_rest_api(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    server.enqueue(AGENT, tool("offer_choices", {"choices": ["Tuesday", "Wednesday"]}), text("Which day?"))
    status, body = await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "book the dentist"))
    assert (status, body) == (200, EMPTY_TWIML)
    assert await twilio.wait_for(1) == ["Which day?\n\n1. Tuesday\n2. Wednesday"]  # no buttons: the text form
    assert twilio.sent[0]["To"] == f"whatsapp:{MAYA_WHATSAPP}" and twilio.sent[0]["From"] == "whatsapp:+15550001111"
    await _settle(live)
    assert (await _stored(live))[0] == ("owner", "book the dentist", False, False, "SM1")


async def test_markdown_is_sent_in_whatsapp_markup_and_the_choices_stay_numbered_under_it(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    reply = "## Options\n\n1. **Tuesday** at the [clinic](https://example.org/dr_ana)\n2. ~~Monday~~ *Wednesday*"
    server.enqueue(AGENT, tool("offer_choices", {"choices": ["Tuesday", "Wednesday"]}), text(reply))
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "when can I go?"))
    assert await twilio.wait_for(1) == [
        "*Options*\n\n1. *Tuesday* at the clinic (https://example.org/dr_ana)\n2. ~Monday~ _Wednesday_"
        "\n\n1. Tuesday\n2. Wednesday"]
    await _settle(live)
    assert (await _stored(live))[1][1] == reply + "\n\n1. Tuesday\n2. Wednesday"  # stored: the text form, unformatted


async def test_a_bad_or_missing_signature_is_refused_and_nothing_is_stored(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    form = inbound_form("SM1", MAYA_WHATSAPP, "hello")
    assert (await live.post_whatsapp(form, signature="bm90IGEgc2lnbmF0dXJl"))[0] == 403
    assert (await live.post_whatsapp(form, signature=""))[0] == 403
    tampered = {**form, "Body": "forget everything"}  # signed for the original body
    assert (await live.post_whatsapp(tampered, signature=sign(PUBLIC, form)))[0] == 403
    assert (await live.post_whatsapp(form, signature=sign(PUBLIC, form, token="another-token")))[0] == 403
    assert await _stored(live) == [] and server.calls() == [] and twilio.sent == []


async def test_twilio_retries_of_one_message_sid_are_answered_once(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    server.enqueue(AGENT, text("Once."))
    form = inbound_form("SM7", MAYA_WHATSAPP, "hello")
    for _ in range(3):
        assert (await live.post_whatsapp(form))[0] == 200
    await twilio.wait_for(1)
    await _settle(live)  # a second turn could only have started before a webhook returned
    assert twilio.bodies() == ["Once."] and len(server.calls()) == 1
    assert [m[1] for m in await _stored(live)] == ["hello", "Once."]


async def test_a_long_reply_is_split_at_1600(live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    sentences = " ".join(f"Sentence number {n} is here." for n in range(200))
    server.enqueue(AGENT, text(sentences))
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "tell me a lot"))
    await twilio.wait_for(4)
    await _settle(live)
    parts = twilio.bodies()
    assert len(parts) == 4  # 5,689 characters: cuts at sentence ends cost a little room
    assert all(len(p) <= 1600 and p.endswith(".") for p in parts)
    assert " ".join(parts) == sentences


async def test_a_photo_is_one_message_whose_body_is_the_owners_caption_and_other_media_are_named(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    server.enqueue(AGENT, text("Lovely."), text("A video."), text("By the river."))
    url = "https://api.twilio.com/media/ME1"  # not one Twilio serves: the photo cannot be fetched
    form = inbound_form("SM1", MAYA_WHATSAPP, "our new flat", NumMedia="1", MediaContentType0="image/jpeg", MediaUrl0=url)
    await live.post_whatsapp(form)
    await twilio.wait_for(1)
    await _settle(live)
    await live.post_whatsapp(inbound_form("SM2", MAYA_WHATSAPP, "", NumMedia="1", MediaContentType0="video/mp4",
                                          MediaUrl0=url))
    await twilio.wait_for(2)
    await _settle(live)
    await live.post_whatsapp(inbound_form("SM3", MAYA_WHATSAPP, "", Latitude="38.7", Longitude="-9.1",
                                          Label="Cafe Ribeira", Address="Rua A 1, Lisboa"))
    await twilio.wait_for(3)
    await _settle(live)
    assert [r for r in await _stored(live) if r[0] == "owner"] == [
        ("owner", "our new flat", False, False, "SM1"), ("owner", "[sent a file: video/mp4]", False, True, "SM2"),
        ("owner", "[shared a place: Cafe Ribeira, Rua A 1, Lisboa (38.7, -9.1)]", False, True, "SM3")]


async def test_a_forwarded_message_is_not_the_owners_words(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn"}), text("I see."))
    server.enqueue(MEMORY, structured({"notes": []}), purpose="memory_learn")
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "I am allergic to penicillin", Forwarded="true"))
    await twilio.wait_for(1)
    await _settle(live)
    assert (await _stored(live))[0][2] is True
    assert server.calls("memory_learn") == []  # memory_learn refuses to start from a forwarded message
    assert (await live.nod.svc.memory.load(live.nod.owner.id)).document.entries == ()


async def test_memory_digest_and_an_unknown_number(live: Live, server: FakeModelServer,
                                                    twilio: FakeTwilioServer) -> None:
    server.enqueue(MEMORY, structured({"summary": "Nothing much yet."}), purpose="digest")
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "/memory"))
    assert (await twilio.wait_for(1))[0].startswith("I don't remember anything")  # empty memory: no model call
    for n in range(3):
        assert (await live.post_whatsapp(inbound_form(f"SMX{n}", "+15559998888", "hi there")))[0] == 200
    await twilio.wait_for(2)  # the later refusals were suppressed before their webhooks returned
    assert twilio.bodies("+15559998888") == ["Sorry, I'm a private assistant and I only talk with the people I work for."]
    assert await _stored(live) == [] and server.calls("digest") == [] and server.calls() == []


async def test_a_send_outside_the_24_hour_window_is_logged_and_told_on_telegram(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer, caplog) -> None:  # type: ignore[no-untyped-def]
    twilio.fail(400, 63016, "Failed to send freeform message because you are outside the allowed window.")
    server.enqueue(AGENT, text("Here is your answer."))
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "hello"))
    sent = await live.telegram.wait_for("sendMessage")
    assert sent[0]["text"].startswith("(I couldn't reply where you wrote: WhatsApp only accepts my replies within 24 hours")
    assert sent[0]["text"].endswith("Here is your answer.")
    assert any("twilio_send_failed code=63016" in r.getMessage() for r in caplog.records)


async def test_a_twilio_500_then_201_delivers_the_reply_once(live: Live, server: FakeModelServer,
                                                               twilio: FakeTwilioServer) -> None:
    twilio.fail(500, 20500, "Internal Server Error")
    twilio.fail(429, 20429, "Too Many Requests", {"Retry-After": "0.1"})
    server.enqueue(AGENT, text("Delivered after all."))
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "hello"))
    assert await twilio.wait_for(1) == ["Delivered after all."]
    await _settle(live)
    assert twilio.bodies() == ["Delivered after all."] and twilio.attempts == 3 and live.telegram.of("sendMessage") == []


async def test_a_twilio_refusal_with_an_error_code_is_not_tried_again(live: Live, server: FakeModelServer,
                                                                      twilio: FakeTwilioServer) -> None:
    twilio.fail(400, 21211, "Invalid 'To' Phone Number")
    server.enqueue(AGENT, text("Never sent."))
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "hello"))
    sent = await live.telegram.wait_for("sendMessage")  # told on the other channel, once
    assert "error 21211" in sent[0]["text"] and twilio.bodies() == [] and twilio.attempts == 1


async def test_a_slow_twilio_send_is_bounded_by_its_timeout(live: Live, server: FakeModelServer,
                                                            twilio: FakeTwilioServer) -> None:
    live.whatsapp_channel.sender.timeout_s = 0.2
    twilio.delay_s = 2.0
    server.enqueue(AGENT, text("Too slow for Twilio."))
    await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "hello"))
    sent = await live.telegram.wait_for("sendMessage")
    assert "Twilio did not answer in time" in sent[0]["text"]


async def test_malformed_and_oversized_webhooks_get_clear_answers_and_store_nothing(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    not_a_message = {"AccountSid": "AC0", "SmsStatus": "delivered"}  # a status callback, signed
    assert (await live.post_whatsapp(not_a_message))[0] == 200
    huge = inbound_form("SM1", MAYA_WHATSAPP, "x" * 2_000_000)
    async with live.http.post(live.url + "/webhooks/whatsapp", data=huge,
                              headers={"X-Twilio-Signature": sign(PUBLIC, huge)}) as response:
        assert response.status == 413
    assert await _stored(live) == [] and server.calls() == [] and twilio.sent == []
