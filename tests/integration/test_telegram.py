"""Telegram end to end: python-telegram-bot against the fake Bot API, Nod's webhook, the scripted model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy import text as text_sql
from telegram import Message
from telegram.constants import ParseMode
from telegram.error import BadRequest

from adapters.storage.schema import messages as messages_table
from core.inbox.commands import COMMANDS, HELP
from core.inbox.front import PRIVATE_ONLY
from tests.fakes.model_server import FakeModelServer, structured, text, tool
from tests.fakes.telegram_server import FakeTelegramServer, callback_update, message_update
from tests.fakes.twilio_server import FakeTwilioServer
from tests.integration.harness import AGENT, MEMORY
from tests.integration.live import MAYA_TELEGRAM, MAYA_WHATSAPP, Live, make_live

STRANGER = 9999


async def _stored(live: Live) -> list[tuple[str, str, bool, bool, bool]]:
    query = select(messages_table).order_by(messages_table.c.id)
    async with live.nod.svc.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return [(r.role, r.text, r.card_title, r.forwarded, r.attachment) for r in rows]


async def _settle(live: Live) -> None:
    await asyncio.wait_for(live.nod.conductor.wait(live.nod.owner.id), 15)
    await asyncio.wait_for(live.running.front.wait(live.nod.owner.id), 15)


async def test_a_message_in_and_the_reply_out_with_typing_commands_and_webhook(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, text("Hi **Maya** <3"))
    assert await live.post_update(message_update(1, MAYA_TELEGRAM, "hello")) == 200
    sent = await telegram.wait_for("sendMessage")
    assert sent[0]["text"] == "Hi <b>Maya</b> &lt;3" and sent[0]["parse_mode"] == "HTML"
    assert int(sent[0]["chat_id"]) == MAYA_TELEGRAM
    assert telegram.of("sendChatAction")[0]["action"] == "typing"
    assert [(c["command"], c["description"]) for c in telegram.of("setMyCommands")[0]["commands"]] == list(COMMANDS.items())
    assert [name for name, _ in COMMANDS.items()] == ["start", "help", "memory", "context", "reset", "stop", "settings",
                                                        "reminders"]
    assert all(f"/{name} — {what}" in HELP for name, what in COMMANDS.items())  # /help says what each one does
    hook = telegram.of("setWebhook")[0]
    assert hook["url"] == "https://nod.example.org/webhooks/telegram" and hook["secret_token"] == "webhook-secret"
    assert hook["allowed_updates"] == ["message", "edited_message", "callback_query"]
    assert await _stored(live) == [("owner", "hello", False, False, False), ("assistant", "Hi **Maya** <3", False, False, False)]


async def test_polling_mode_answers_through_get_updates(
        tmp_path: Path, server: FakeModelServer, telegram: FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    async for live in make_live(tmp_path, server, telegram, twilio, webhook=False):
        server.enqueue(AGENT, text("Polled and answered."))
        telegram.push(message_update(5, MAYA_TELEGRAM, "are you there?"))
        assert (await telegram.wait_for("sendMessage"))[0]["text"] == "Polled and answered."
        assert telegram.of("getUpdates") and not telegram.of("setWebhook")
        assert live.running.webhooks == {"/webhooks/whatsapp": live.whatsapp_channel.webhook}


async def test_a_wrong_or_missing_secret_is_refused_and_nothing_is_stored(live: Live, server: FakeModelServer) -> None:
    assert await live.post_update(message_update(1, MAYA_TELEGRAM, "hello"), secret="guess") == 403
    assert await live.post_update(message_update(2, MAYA_TELEGRAM, "hello"), secret=None) == 403
    async with live.http.post(live.url + "/webhooks/telegram", data=b"{not json",
                              headers={"X-Telegram-Bot-Api-Secret-Token": "webhook-secret"}) as response:
        assert response.status == 400
    assert await _stored(live) == [] and server.calls() == []  # refused before anything is stored or started


async def test_a_redelivered_update_is_answered_once(live: Live, server: FakeModelServer,
                                                     telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, text("Once."))
    update = message_update(7, MAYA_TELEGRAM, "hello")
    assert await live.post_update(update) == 200
    await telegram.wait_for("sendMessage")
    await _settle(live)
    assert await live.post_update(update) == 200
    server.enqueue(AGENT, text("Next."))
    await live.post_update(message_update(8, MAYA_TELEGRAM, "and now?"))
    assert await telegram.wait_for("sendMessage", 2) and telegram.texts() == ["Once.", "Next."]
    assert len(server.calls()) == 2


async def test_a_group_hears_one_sentence_the_first_time_nod_is_addressed_then_silence_and_nothing_is_stored(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, text("Only here."))
    family, work = {"id": -1001, "type": "supergroup", "title": "Family"}, {"id": -1002, "type": "group", "title": "Work"}
    chats = [(family, "good morning all"), (family, "/memory what do you know?"), (family, "@NodTestBot are you there?"),
             (work, "/help"), ({"id": -1003, "type": "channel", "title": "News"}, "/start")]
    for n, (chat, words) in enumerate(chats, start=1):
        assert await live.post_update(message_update(n, MAYA_TELEGRAM, words, chat=chat)) == 200
    await live.post_update(message_update(9, MAYA_TELEGRAM, "private hello"))
    await telegram.wait_for("sendMessage", 3)
    await _settle(live)
    assert telegram.texts() == [PRIVATE_ONLY, PRIVATE_ONLY, "Only here."]  # once a group, only when addressed
    assert [int(p["chat_id"]) for p in telegram.of("sendMessage")] == [-1001, -1002, MAYA_TELEGRAM]
    assert [m[1] for m in await _stored(live)] == ["private hello", "Only here."]
    async with live.nod.svc.engine.connect() as conn:  # the one marker per group: its id, no content
        marks = (await conn.execute(text_sql("SELECT key, value FROM nod_meta WHERE key LIKE 'group-told:%'"))).all()
    assert sorted(k for k, _ in marks) == ["group-told:telegram:-1001", "group-told:telegram:-1002"]
    assert not any("morning" in v or "memory" in v for _, v in marks)


async def test_an_unknown_sender_gets_one_short_refusal_and_nothing_is_stored(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    for n in range(1, 4):
        await live.post_update(message_update(n, STRANGER, f"hi, I am a stranger {n}"))
    await telegram.wait_for("sendMessage")  # the later two were refused silently before their webhooks returned
    assert len(telegram.texts(STRANGER)) == 1 and "private assistant" in telegram.texts(STRANGER)[0]
    assert await _stored(live) == [] and server.calls() == []
    assert len(await live.nod.svc.owners.all()) == 1


async def test_open_sign_up_makes_a_stranger_an_owner(
        tmp_path: Path, server: FakeModelServer, telegram: FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    async for live in make_live(tmp_path, server, telegram, twilio, open_signup=True):
        server.enqueue(AGENT, text("Welcome!"))
        await live.post_update(message_update(1, STRANGER, "hello"))
        assert (await telegram.wait_for("sendMessage"))[0]["text"] == "Welcome!"
        owners = {o.name: links for o, links in await live.nod.svc.owners.all()}
        assert owners["Maya"] and [(i.channel, i.external_id) for i in owners["Maya (telegram 9999)"]] == [
            ("telegram", "9999")]  # the first name Maya was taken


async def test_flood_control_429_is_waited_out_then_the_reply_arrives(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    telegram.fail("sendMessage", 429, retry_after=1, description="Too Many Requests: retry after 1")
    server.enqueue(AGENT, text("Worth the wait."))
    await live.post_update(message_update(1, MAYA_TELEGRAM, "hello"))
    await telegram.wait_for("sendMessage", 2)
    assert telegram.texts() == ["Worth the wait.", "Worth the wait."]  # the refused try, then the delivered one


async def test_rejected_markup_is_sent_again_as_plain_text(live: Live, server: FakeModelServer,
                                                            telegram: FakeTelegramServer) -> None:
    telegram.fail("sendMessage", 400, description="Bad Request: can't parse entities")
    server.enqueue(AGENT, text("a **b** & <c>"))
    await live.post_update(message_update(1, MAYA_TELEGRAM, "hello"))
    sent = await telegram.wait_for("sendMessage", 2)
    assert sent[0]["text"] == "a <b>b</b> &amp; &lt;c&gt;" and sent[0]["parse_mode"] == "HTML"
    assert sent[1]["text"] == "a b & <c>" and "parse_mode" not in sent[1]  # the part as its reader would see it
    await _settle(live)
    assert (await _stored(live))[1][1] == "a **b** & <c>"  # what is kept is the model's text, not what was sent


async def test_a_long_reply_is_split_at_4096_on_paragraphs(live: Live, server: FakeModelServer,
                                                           telegram: FakeTelegramServer) -> None:
    paragraphs = [f"Paragraph {n}. " + "word " * 300 for n in range(6)]
    server.enqueue(AGENT, text("\n\n".join(paragraphs)))
    await live.post_update(message_update(1, MAYA_TELEGRAM, "tell me everything"))
    await telegram.wait_for("sendMessage", 3)
    await _settle(live)
    parts = telegram.texts()
    assert len(parts) >= 3 and all(len(p) <= 4096 for p in parts)
    assert all(p.startswith("Paragraph") for p in parts)
    assert " ".join(" ".join(parts).split()) == " ".join(" ".join(paragraphs).split())


RICH_REPLY = "\n\n".join([
    "# Your week in *Porto*",
    "Book [the river hotel](https://example.org/hotels/ribeira_(river)?a=1&b=2) — ~~Lisbon~~ **Porto** it is.",
    "> Travel light.\n> Eat well.",
    "\n".join(f"- Day {n}: **walk** the _old_ town, then `café < 5€ & tip`\n  - and rest" for n in range(1, 41)),
    "```python\n" + "\n".join(f"if budget[{n}] < 100 and hotel != '<none>':  # day {n}" for n in range(150)) + "\n```",
    "1. pack\n2. go",
])


async def test_a_markdown_rich_long_reply_arrives_in_parts_telegram_accepts(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, text(RICH_REPLY))
    await live.post_update(message_update(1, MAYA_TELEGRAM, "plan my week"))
    await telegram.wait_for("sendMessage", 3)
    await _settle(live)
    sent = telegram.of("sendMessage")
    assert len(sent) >= 3 and all(p["parse_mode"] == "HTML" and len(p["text"]) <= 4096 for p in sent)
    assert len(telegram.messages) == len(sent)  # every part parsed as Telegram does: none refused, no plain resend
    bot = live.telegram_channel.application.bot
    delivered = [Message.de_json(m, bot) for m in telegram.messages]
    kinds = {e.type for m in delivered for e in m.entities}
    assert {"bold", "italic", "strikethrough", "code", "pre", "text_link", "blockquote"} <= kinds
    link = next(e for m in delivered for e in m.entities if e.type == "text_link")
    assert link.url == "https://example.org/hotels/ribeira_(river)?a=1&b=2"
    assert delivered[0].text.startswith("Your week in Porto\n\nBook the river hotel — Lisbon Porto it is.")
    pres = [(m.parse_entity(e), e.language) for m in delivered for e in m.entities if e.type == "pre"]
    assert len(pres) >= 2 and all(language == "python" for _, language in pres)  # the block was cut and reopened
    assert "".join(code for code, _ in pres).count("if budget[") == 150
    assert delivered[-1].text.endswith("1. pack\n2. go")
    assert (await _stored(live))[1][1] == RICH_REPLY  # the model's Markdown is what is kept


async def test_the_fake_bot_api_refuses_html_telegram_would_refuse(live: Live) -> None:
    bot = live.telegram_channel.application.bot
    for markup in ("<b>open", "<b>x</i>", "<p>para</p>", "a < b", "<b>x</b></b>"):
        with pytest.raises(BadRequest, match="Can't parse entities"):
            await bot.send_message(MAYA_TELEGRAM, markup, parse_mode=ParseMode.HTML)
    with pytest.raises(BadRequest, match="Message is too long"):
        await bot.send_message(MAYA_TELEGRAM, "<b>" + "x" * 4097 + "</b>", parse_mode=ParseMode.HTML)
    accepted = await bot.send_message(MAYA_TELEGRAM, "<b>" + "x" * 4000 + "</b> &lt;&amp;&gt;", parse_mode=ParseMode.HTML)
    assert accepted.text.endswith(" <&>") and accepted.entities[0].type == "bold"


async def test_a_card_tap_is_stored_as_nods_wording_and_starts_a_turn(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, tool("offer_choices", {"choices": ["Tuesday", "Wednesday"]}), text("Which day suits you?"),
                   text("Wednesday it is."))
    await live.post_update(message_update(1, MAYA_TELEGRAM, "book the dentist"))
    card = (await telegram.wait_for("sendMessage"))[0]
    assert card["text"] == "Which day suits you?"
    buttons = [b for row in card["reply_markup"]["inline_keyboard"] for b in row]
    assert [(b["text"], b["callback_data"]) for b in buttons] == [("Tuesday", "choice:1"), ("Wednesday", "choice:2")]
    await _settle(live)
    await live.post_update(callback_update(2, MAYA_TELEGRAM, "choice:2", card))
    await telegram.wait_for("sendMessage", 2)
    assert telegram.of("answerCallbackQuery") and telegram.of("editMessageReplyMarkup")
    stored = await _stored(live)
    assert stored[1] == ("assistant", "Which day suits you?\n\n1. Tuesday\n2. Wednesday", False, False, False)
    assert stored[2] == ("owner", "Wednesday", True, False, False)
    last_prompt = server.calls()[-1]["messages"][-1]["content"]
    assert "[tapped the button: Wednesday]" in last_prompt


async def test_forwarded_and_quoted_text_is_flagged_and_memory_learn_cannot_cite_it(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    forward = {"forward_origin": {"type": "hidden_user", "sender_user_name": "Someone", "date": 1_764_740_000}}
    server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn"}), text("Noted."))
    await live.post_update(message_update(1, MAYA_TELEGRAM, "My bank PIN rules: Ana's birthday is 12 May", **forward))
    await telegram.wait_for("sendMessage")
    await _settle(live)
    quoted = {"reply_to_message": {"message_id": 5, "date": 1_764_740_000, "chat": {"id": MAYA_TELEGRAM, "type": "private"},
                                   "text": "Ana's birthday is 12 May"}}
    note = {"path": "people/ana", "text": "Ana's birthday: 12 May", "message_ids": [1, 3],
            "quote": "Ana's birthday is 12 May"}
    server.enqueue(MEMORY, structured({"notes": [note]}), purpose="memory_learn")
    server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn", "message_ids": [1]}), text("Sure."))
    await live.post_update(message_update(2, MAYA_TELEGRAM, "remember this", **quoted))
    await telegram.wait_for("sendMessage", 2)
    await _settle(live)
    stored = await _stored(live)
    assert stored[0] == ("owner", "My bank PIN rules: Ana's birthday is 12 May", False, True, False)
    assert stored[2] == ("owner", "[replying to] Ana's birthday is 12 May", False, True, False)
    assert stored[3] == ("owner", "remember this", False, False, False)
    assert (await live.nod.svc.memory.load(live.nod.owner.id)).document.entries == ()
    learn_inputs = " ".join(str(c["messages"]) for c in server.calls("memory_learn"))
    assert "birthday" not in learn_inputs  # neither the forward nor the quote reached the memory model


async def test_other_files_are_named_with_type_and_size_and_places_and_contacts_become_text_the_turn_reads(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, text("A zip."), text("Near the river."), text("Ana, noted."))
    archive = {"file_id": "z1", "file_unique_id": "u1", "file_name": "photos.zip", "mime_type": "application/zip",
               "file_size": 2_400_000}
    updates = [message_update(1, MAYA_TELEGRAM, None, document=archive, caption="my holiday"),
               message_update(2, MAYA_TELEGRAM, None, location={"latitude": 38.7223, "longitude": -9.1393}),
               message_update(3, MAYA_TELEGRAM, None, contact={"phone_number": "+351912345678", "first_name": "Ana",
                                                               "last_name": "Silva"})]
    for n, update in enumerate(updates, start=1):
        await live.post_update(update)
        await telegram.wait_for("sendMessage", n)
        await _settle(live)
    assert [m[1:] for m in await _stored(live) if m[0] == "owner"] == [
        ("[sent a file: photos.zip (application/zip, 2.3 MB)]", False, False, True), ("my holiday", False, False, False),
        ("[shared a location: 38.72230, -9.13930]", False, False, True),
        ("[shared a contact: Ana Silva, +351912345678]", False, False, True)]
    assert "[with an attachment] [shared a location: 38.72230, -9.13930]" in str(server.calls()[1]["messages"][-1])
    assert not telegram.of("getFile")  # a file Nod does not read is never fetched


async def test_memory_and_context_digests_without_a_turn(live: Live, server: FakeModelServer,
                                                         telegram: FakeTelegramServer) -> None:
    await live.post_update(message_update(1, MAYA_TELEGRAM, "/memory"))
    assert (await telegram.wait_for("sendMessage"))[0]["text"].startswith("I don't remember anything")
    await live.nod.svc.memory.update(live.nod.owner.id, _with_sister(live))
    server.enqueue(MEMORY, structured({"summary": "Your sister Ana lives in Porto."}), purpose="digest")
    await live.post_update(message_update(2, MAYA_TELEGRAM, "/memory@NodTestBot"))
    assert (await telegram.wait_for("sendMessage", 2))[1]["text"] == "Your sister Ana lives in Porto.\n\n(1 note saved.)"
    server.enqueue(MEMORY, text("not json at all"), purpose="digest")
    await live.post_update(message_update(3, MAYA_TELEGRAM, "/context"))
    plain = (await telegram.wait_for("sendMessage", 3))[2]["text"]
    assert plain.startswith("What I see at the start of every turn") and "people/sister: Sister: Ana" in plain
    assert server.calls() == [] and len(server.calls("digest")) == 2
    assert len(await live.nod.usage_rows("digest")) == 2  # both calls count in usage
    assert await _stored(live) == []  # commands are not conversation


async def test_reset_and_stop_commands(live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    await live.post_update(message_update(1, MAYA_TELEGRAM, "/stop"))
    assert (await telegram.wait_for("sendMessage"))[0]["text"] == "Nothing is running."
    first = await live.nod.svc.messages.active_thread(live.nod.owner.id)
    await live.post_update(message_update(2, MAYA_TELEGRAM, "/reset"))
    assert (await telegram.wait_for("sendMessage", 2))[1]["text"].startswith("Started a new conversation")
    assert await live.nod.svc.messages.active_thread(live.nod.owner.id) != first


async def test_one_conversation_across_channels_and_a_blocked_bot_falls_back_to_whatsapp(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    server.enqueue(AGENT, text("Got it on Telegram."))
    await live.post_update(message_update(1, MAYA_TELEGRAM, "my boat is called Gaivota"))
    await telegram.wait_for("sendMessage")
    await _settle(live)
    telegram.fail("sendMessage", 403, description="Forbidden: bot was blocked by the user")
    server.enqueue(AGENT, text("It's called Gaivota."))
    await live.post_update(message_update(2, MAYA_TELEGRAM, "what is my boat called?"))
    bodies = await twilio.wait_for(1)
    assert bodies[0].startswith("(I couldn't reply where you wrote: Telegram says the bot is blocked")
    assert bodies[0].endswith("It's called Gaivota.") and twilio.sent[0]["To"] == f"whatsapp:{MAYA_WHATSAPP}"
    prompt = str(server.calls()[-1]["messages"])
    assert "my boat is called Gaivota" in prompt and "Got it on Telegram." in prompt


def _with_sister(live: Live):  # type: ignore[no-untyped-def]
    from core.memory import document as ops
    from core.memory.values import Origin

    def change(doc):  # type: ignore[no-untyped-def]
        entry = ops.make_entry("people/sister", "Sister: Ana", origin=Origin.STATED, now=live.nod.svc.clock.now())
        return ops.add_entry(doc, entry)
    return change


async def test_typing_is_shown_again_every_few_seconds_while_a_turn_runs_and_nothing_else(
        live: Live, server: FakeModelServer, telegram: FakeTelegramServer) -> None:
    server.enqueue(AGENT, text("Thought it over.", delay_s=1.6))  # typing's pause is 0.5 s here (4 s in Nod)
    await live.post_update(message_update(1, MAYA_TELEGRAM, "think about it"))
    await telegram.wait_for("sendMessage")
    actions = [p["action"] for p in telegram.of("sendChatAction")]
    assert len(actions) >= 3 and set(actions) == {"typing"}  # never "upload_photo": Nod sends no files
    count = len(actions)
    await _settle(live)
    assert len(telegram.of("sendChatAction")) <= count + 1


async def test_a_command_nod_does_not_have_gets_the_help_without_a_turn(live: Live, server: FakeModelServer,
                                                                      telegram: FakeTelegramServer) -> None:
    assert await live.post_update(message_update(1, MAYA_TELEGRAM, "/whatever")) == 200
    sent = await telegram.wait_for("sendMessage")
    assert sent[0]["text"].startswith("I don't have that command.") and "/reminders" in sent[0]["text"]
    assert server.calls() == [] and await _stored(live) == []  # no turn, nothing stored
