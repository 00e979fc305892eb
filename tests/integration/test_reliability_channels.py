"""Channels acknowledge only what is stored, and refuse bad input cleanly (issue 14: findings 2, 8, 9)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from adapters.storage.schema import messages as messages_table
from tests.fakes import telegram_server as tg
from tests.fakes.model_server import FakeModelServer, text
from tests.fakes.twilio_server import FakeTwilioServer, inbound_form
from tests.integration.faults import refusing
from tests.integration.harness import AGENT
from tests.integration.live import MAYA_TELEGRAM, MAYA_WHATSAPP, SECRET, Live, make_live

STRANGER = 9999


async def _stored(live: Live) -> list[tuple[str, str, str | None]]:
    async with live.nod.svc.engine.connect() as conn:
        rows = (await conn.execute(select(messages_table).order_by(messages_table.c.id))).all()
    return [(r.role, r.text, r.external_id) for r in rows]


def _url(live: Live) -> str:
    return live.nod.svc.engine.url.render_as_string(hide_password=False)


async def test_a_telegram_update_the_database_cannot_store_gets_503_and_is_taken_when_sent_again(
        live: Live, server: FakeModelServer, telegram: tg.FakeTelegramServer) -> None:
    update = tg.message_update(1, MAYA_TELEGRAM, "remember the gate code")
    async with refusing(_url(live), "messages"):
        assert await live.post_update(update) == 503
    assert await _stored(live) == []
    server.enqueue(AGENT, text("Noted."))
    assert await live.post_update(update) == 200  # Telegram's redelivery
    assert [r[1] for r in await _stored(live)][:1] == ["remember the gate code"]
    assert (await telegram.wait_for("sendMessage"))[0]["text"] == "Noted."


async def test_whatsapp_gets_503_when_the_message_cannot_be_stored(live: Live, server: FakeModelServer) -> None:
    form = inbound_form("SM9", MAYA_WHATSAPP, "hello")
    async with refusing(_url(live), "messages"):
        status, _ = await live.post_whatsapp(form)
    assert status == 503 and await _stored(live) == []
    server.enqueue(AGENT, text("Hi."))
    assert (await live.post_whatsapp(form))[0] == 200 and (await _stored(live))[0][1] == "hello"


async def test_polling_confirms_an_offset_only_after_its_update_is_stored(
        tmp_path: Path, server: FakeModelServer, telegram: tg.FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    confirmed_unstored: list[int] = []
    offsets: list[int] = []
    async for live in make_live(tmp_path, server, telegram, twilio, webhook=False):
        async def check(offset: int) -> None:  # every update below the offset asked for must be stored
            offsets.append(offset)
            stored = {int(r[2]) for r in await _stored(live) if r[0] == "owner" and r[2]}
            confirmed_unstored.extend(u for u in range(1, offset) if u not in stored)
        telegram.before_poll = check
        server.enqueue(AGENT, *[text(f"reply {n}") for n in range(6)])
        async with refusing(_url(live), "messages"):
            for n in range(1, 4):
                telegram.push(tg.message_update(n, MAYA_TELEGRAM, f"message {n}"))
            while offsets.count(0) < 3:  # asked again and again for the first, unstored update
                await asyncio.wait_for(telegram.wait_for("getUpdates", len(telegram.of("getUpdates")) + 1), 10)
        await telegram.wait_for("sendMessage")
        await asyncio.wait_for(live.running.front.wait(live.nod.owner.id), 15)
        assert [r[1] for r in await _stored(live) if r[0] == "owner"] == ["message 1", "message 2", "message 3"]
        telegram.before_poll = None
    assert confirmed_unstored == [] and max(offsets) == 4


@pytest.mark.parametrize("body", [b"null", b"[]", b"42", b'"text"', b'{"update_id": "x"}', b"{not json"])
async def test_a_telegram_body_that_is_not_an_update_gets_400(live: Live, body: bytes) -> None:
    async with live.http.post(live.url + "/webhooks/telegram", data=body,
                              headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}) as response:
        assert response.status == 400
    assert await _stored(live) == []


async def test_a_secret_header_that_is_not_ascii_is_refused_not_a_crash(live: Live) -> None:
    update = tg.message_update(1, MAYA_TELEGRAM, "hello")
    assert await live.post_update(update, secret="sécret") == 403
    assert await _stored(live) == []


async def test_a_lone_surrogate_is_stored_replaced_not_lost(live: Live, server: FakeModelServer) -> None:
    server.enqueue(AGENT, text("ok"))
    body = b'{"update_id": 5, "message": {"message_id": 5, "date": 1800000000, "chat": {"id": 4242, "type": "private"},' \
           b' "from": {"id": 4242, "is_bot": false, "first_name": "Maya"}, "text": "caf\\ud800 time"}}'
    async with live.http.post(live.url + "/webhooks/telegram", data=body,
                              headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}) as response:
        assert response.status == 200
    assert (await _stored(live))[0][1] == "caf\ufffd time"


async def test_a_strangers_tap_is_not_answered(live: Live, server: FakeModelServer,
                                               telegram: tg.FakeTelegramServer) -> None:
    card = {"text": "Which day?", "reply_markup": {"inline_keyboard": [[{"text": "Tuesday", "callback_data": "choice:1"}]]}}
    assert await live.post_update(tg.callback_update(3, STRANGER, "choice:1", card)) == 200
    server.enqueue(AGENT, text("Hello Maya."))
    assert await live.post_update(tg.message_update(4, MAYA_TELEGRAM, "hi")) == 200  # handled after the tap
    await telegram.wait_for("sendMessage")
    assert telegram.of("answerCallbackQuery") == [] and telegram.of("editMessageReplyMarkup") == []
    assert [r[1] for r in await _stored(live)] == ["hi", "Hello Maya."]


async def test_telegrams_own_date_is_the_sent_time(live: Live, server: FakeModelServer) -> None:
    server.enqueue(AGENT, text("ok"))
    sent = datetime(2026, 12, 3, 8, 15, tzinfo=UTC)  # delivered late: before the harness clock's now
    assert await live.post_update(tg.message_update(1, MAYA_TELEGRAM, "hi", date=int(sent.timestamp()))) == 200
    stored = await live.nod.svc.messages.recent(live.nod.owner.id, 1)
    assert stored[0].sent_at == sent


async def test_health_is_503_with_a_reason_when_writes_fail(live: Live) -> None:
    async with live.http.get(live.url + "/healthz") as response:
        assert response.status == 200
    async with refusing(_url(live), "nod_meta", "UPDATE"):
        async with live.http.get(live.url + "/healthz") as response:
            body = await response.json()
    assert response.status == 503 and body["status"] == "unhealthy" and "failed" in body["reason"]


async def test_a_digest_is_sent_after_the_acknowledgement(live: Live, telegram: tg.FakeTelegramServer) -> None:
    assert await live.post_update(tg.message_update(1, MAYA_TELEGRAM, "/memory")) == 200
    assert (await telegram.wait_for("sendMessage"))[0]["text"].startswith("I don't remember anything")


async def test_a_webhook_into_a_deleted_database_is_not_acknowledged(live: Live, tmp_path: Path) -> None:
    (tmp_path / "nod.db").rename(tmp_path / "elsewhere.db")
    assert await live.post_update(tg.message_update(1, MAYA_TELEGRAM, "hello")) == 503
    assert (await live.post_whatsapp(inbound_form("SM1", MAYA_WHATSAPP, "hello")))[0] == 503


async def test_a_poisoned_update_in_polling_is_confirmed_and_the_rest_go_through(
        tmp_path: Path, server: FakeModelServer, telegram: tg.FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    async for live in make_live(tmp_path, server, telegram, twilio, webhook=False):
        server.enqueue(AGENT, text("Got the last one."))
        telegram.push(tg.message_update(1, MAYA_TELEGRAM, "unreadable", date=10**15))  # the library cannot parse it
        telegram.push({"update_id": 2, "message": {"message_id": 2, "date": 1_800_000_000, "text": 5,
                                                   "chat": {"id": MAYA_TELEGRAM, "type": "private"},
                                                   "from": {"id": MAYA_TELEGRAM, "is_bot": False, "first_name": "M"}}})
        telegram.push(tg.message_update(3, MAYA_TELEGRAM, "the real question"))
        assert (await telegram.wait_for("sendMessage"))[0]["text"] == "Got the last one."
        assert [r[1] for r in await _stored(live) if r[0] == "owner"] == ["the real question"]
