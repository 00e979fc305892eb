"""The Messages port: the conversation as stored, requests awaiting their answers, replies owed to a channel."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.errors import InvalidInput
from core.message import Message, Role, StoredMessage, VoiceNote
from tests.contract.conftest import NOW, Ports

NOTE = VoiceNote("file-9", "voice.ogg", "audio/ogg", 1_200, 3)


async def _owner(ports: Ports, name: str = "ana") -> int:
    return (await ports.owners.add(name, "UTC", (), NOW)).id


def _says(owner: int, text: str, at: datetime = NOW, role: Role = Role.OWNER, channel: str = "telegram",
          external_id: str | None = None, **flags: object) -> Message:
    return Message(owner, role, text, channel, at, external_id, **flags)  # type: ignore[arg-type]


async def _stored(ports: Ports, message: Message) -> StoredMessage:
    return (await ports.messages.append(message)).message


async def _answer(ports: Ports, request: StoredMessage, reply: Message) -> StoredMessage | None:
    """What the conductor does with a reply: stored, the request settled and the reply owed, in one unit of work."""
    async with ports.uow() as tx:
        if not await tx.requests.claim(request.id, request.owner_id):
            return None
        stored = (await tx.messages.append(reply)).message
        await tx.outbox.owe(stored)
    return stored


async def _claim(ports: Ports, request_id: int, owner_id: int) -> bool:
    async with ports.uow() as tx:
        return await tx.requests.claim(request_id, owner_id)


# --- appending and reading back ------------------------------------------------------------

async def test_a_message_reads_back_with_every_field_and_its_thread(ports: Ports) -> None:
    ana = await _owner(ports)
    new = _says(ana, "my sister Ana lives in Porto", role=Role.ASSISTANT, channel="whatsapp", external_id="SM1",
                card_title=True, attachment=True, forwarded=True, origin="schedule", address="+351 9", awaiting=True,
                voice=True, voice_note=NOTE)
    appended = await ports.messages.append(new)
    stored = appended.message
    assert appended.created and stored.thread_id == await ports.messages.active_thread(ana)
    assert (stored.owner_id, stored.role, stored.text, stored.sent_at, stored.channel, stored.external_id) == (
        ana, Role.ASSISTANT, "my sister Ana lives in Porto", NOW, "whatsapp", "SM1")
    assert (stored.card_title, stored.attachment, stored.forwarded, stored.secret, stored.origin, stored.address,
            stored.awaiting, stored.voice, stored.voice_note) == (True, True, True, False, "schedule", "+351 9", True, True, NOTE)
    assert await ports.messages.get(stored.id) == stored
    assert await ports.messages.get_many([stored.id]) == {stored.id: stored}
    assert await ports.messages.recent(ana, 5) == [stored]


async def test_ids_grow_in_the_order_messages_are_stored(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    ids = [(await _stored(ports, _says(owner, f"m{i}"))).id for i, owner in enumerate([ana, bo, ana, ana, bo])]
    assert ids == sorted(ids) and len(set(ids)) == 5


async def test_the_same_external_id_twice_is_stored_once(ports: Ports) -> None:
    """A redelivered webhook or a re-run import: unique per owner and channel."""
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    first = await ports.messages.append(_says(ana, "hello", external_id="u-1"))
    again = await ports.messages.append(_says(ana, "hello, edited", external_id="u-1"))
    assert first.created and not again.created and again.message == first.message  # the copy already stored
    other_channel = await ports.messages.append(_says(ana, "hello", channel="whatsapp", external_id="u-1"))
    other_owner = await ports.messages.append(_says(bo, "hello", external_id="u-1"))
    assert other_channel.created and other_owner.created
    no_id = [await ports.messages.append(_says(ana, "no id")) for _ in range(2)]
    assert all(a.created for a in no_id) and no_id[0].message.id != no_id[1].message.id
    assert [m.text for m in await ports.messages.recent(ana, 10)] == ["hello", "hello", "no id", "no id"]


async def test_a_secret_is_flagged_as_the_message_is_stored(ports: Ports) -> None:
    ana = await _owner(ports)
    card = await _stored(ports, _says(ana, "card 4111 1111 1111 1111"))
    plain = await _stored(ports, _says(ana, "my sister Ana"))
    assert card.secret and not plain.secret
    assert (await ports.messages.get(card.id)).secret  # type: ignore[union-attr]


async def test_text_is_stored_as_both_backends_can_hold_it(ports: Ports) -> None:
    ana = await _owner(ports)
    stored = await _stored(ports, _says(ana, "a\x00b \ud800c"))
    assert "\x00" not in stored.text and "\ud800" not in stored.text and stored.text.startswith("a")
    assert (await ports.messages.get(stored.id)).text == stored.text  # type: ignore[union-attr]


@pytest.mark.parametrize("when", [datetime(2026, 1, 1), datetime(1899, 12, 31, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)],
                         ids=["naive", "before-1900", "after-2199"])
async def test_a_sent_time_without_a_zone_or_out_of_range_is_refused(ports: Ports, when: datetime) -> None:
    ana = await _owner(ports)
    with pytest.raises(InvalidInput):
        await ports.messages.append(_says(ana, "x", at=when))
    assert await ports.messages.recent(ana, 5) == []


async def test_unknown_ids_read_as_nothing(ports: Ports) -> None:
    ana = await _owner(ports)
    stored = await _stored(ports, _says(ana, "hello"))
    assert await ports.messages.get(stored.id + 100) is None
    assert await ports.messages.get_many([]) == {}
    assert await ports.messages.get_many([stored.id + 100, stored.id, stored.id]) == {stored.id: stored}


async def test_get_reads_any_owners_message_by_id_the_caller_checks_whose(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    theirs = await _stored(ports, _says(bo, "bo's words"))
    assert (await ports.messages.get(theirs.id)).owner_id == bo  # type: ignore[union-attr]
    assert (await ports.messages.get_many([theirs.id]))[theirs.id].owner_id == bo
    assert await ports.messages.recent(ana, 5) == []


# --- the thread ---------------------------------------------------------------------------

async def test_recent_is_the_active_threads_newest_oldest_first(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    said = [await _stored(ports, _says(ana, f"m{i}", role=Role.OWNER if i % 2 == 0 else Role.ASSISTANT)) for i in range(6)]
    await _stored(ports, _says(bo, "not ana's"))
    assert await ports.messages.recent(ana, 3) == said[3:]
    assert await ports.messages.recent(ana, 100) == said
    assert await ports.messages.recent(ana, 2, Role.OWNER) == [said[2], said[4]]
    assert await ports.messages.recent(ana, 0) == []


async def test_a_threads_tail_is_its_newest_oldest_first(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    said = [await _stored(ports, _says(ana, f"m{i}")) for i in range(4)]
    await _stored(ports, _says(bo, "another thread"))
    thread = said[0].thread_id
    assert await ports.messages.thread_tail(thread, 2) == said[2:]
    assert await ports.messages.thread_tail(thread, 10) == said
    assert await ports.messages.thread_tail(thread, 0) == []


async def test_each_owner_has_one_active_thread_until_a_reset_opens_another(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    first = await ports.messages.active_thread(ana)
    assert await ports.messages.active_thread(ana) == first and await ports.messages.active_thread(bo) != first
    old = await _stored(ports, _says(ana, "before"))
    assert old.thread_id == first
    fresh = await ports.messages.reset_thread(ana)
    assert fresh not in (first, await ports.messages.active_thread(bo)) and await ports.messages.active_thread(ana) == fresh
    assert await ports.messages.recent(ana, 10) == []  # the old thread is no longer the conversation...
    assert await ports.messages.get(old.id) == old  # ...but stays stored
    after = await _stored(ports, _says(ana, "after"))
    assert after.thread_id == fresh and await ports.messages.recent(ana, 10) == [after]
    assert await ports.messages.thread_tail(first, 10) == [old]


async def test_a_reset_settles_the_owners_waiting_requests(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    waiting = await _stored(ports, _says(ana, "voice", awaiting=True, voice_note=NOTE))
    theirs = await _stored(ports, _says(bo, "bo waits", awaiting=True))
    await ports.messages.reset_thread(ana)
    assert not await ports.messages.is_awaiting(waiting.id) and await ports.messages.newest_awaiting(ana) is None
    settled = await ports.messages.get(waiting.id)
    assert settled is not None and not settled.awaiting and settled.voice_note is None  # not heard later
    assert await ports.messages.is_awaiting(theirs.id)


async def test_reflection_reads_the_owners_own_words_after_an_id_across_threads(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    m1 = await _stored(ports, _says(ana, "one", at=NOW - timedelta(hours=5)))
    await _stored(ports, _says(ana, "nod says", at=NOW - timedelta(hours=5), role=Role.ASSISTANT))
    await ports.messages.reset_thread(ana)
    m2 = await _stored(ports, _says(ana, "two", at=NOW - timedelta(hours=4)))
    await _stored(ports, _says(bo, "bo's", at=NOW - timedelta(hours=4)))
    m3 = await _stored(ports, _says(ana, "three", at=NOW - timedelta(hours=3)))
    young = await _stored(ports, _says(ana, "too young", at=NOW))
    await _stored(ports, _says(ana, "older again", at=NOW - timedelta(hours=2)))  # after a young one: waits for it
    assert await ports.messages.owner_messages_after(ana, 0, 10, NOW - timedelta(hours=1)) == [m1, m2, m3]
    assert await ports.messages.owner_messages_after(ana, m1.id, 1, NOW - timedelta(hours=1)) == [m2]
    assert await ports.messages.owner_messages_after(ana, m3.id, 10, NOW - timedelta(hours=1)) == []
    assert await ports.messages.owner_messages_after(ana, m3.id, 10, NOW + timedelta(hours=1)) == [
        young, (await ports.messages.recent(ana, 1))[0]]


# --- requests awaiting their answer -------------------------------------------------------

async def test_an_answer_stores_the_reply_settles_the_requests_up_to_it_and_is_owed(ports: Ports) -> None:
    ana = await _owner(ports)
    older = await _stored(ports, _says(ana, "first", awaiting=True))
    request = await _stored(ports, _says(ana, "second", awaiting=True))
    newer = await _stored(ports, _says(ana, "third", awaiting=True))
    assert await ports.messages.newest_awaiting(ana) == newer
    reply = await _answer(ports, request, _says(ana, "the answer", role=Role.ASSISTANT))
    assert reply is not None and reply.role is Role.ASSISTANT and reply.thread_id == request.thread_id
    assert await ports.messages.get(reply.id) == reply and reply.id > newer.id
    assert [await ports.messages.is_awaiting(m.id) for m in (older, request, newer)] == [False, False, True]
    assert await ports.messages.newest_awaiting(ana) == newer
    assert [o.message for o in await ports.messages.undelivered(NOW + timedelta(seconds=1), ["telegram"])] == [reply]


async def test_a_request_no_longer_awaiting_gets_no_reply_stored(ports: Ports) -> None:
    """Answered by another worker, or /stop: nothing is stored, so nothing is sent."""
    ana = await _owner(ports)
    request = await _stored(ports, _says(ana, "hi", awaiting=True))
    await ports.messages.settle(ana)
    assert await _answer(ports, request, _says(ana, "too late", role=Role.ASSISTANT)) is None
    assert await _answer(ports, replace(request, id=request.id + 100), _says(ana, "to nothing", role=Role.ASSISTANT)) is None
    assert [m.text for m in await ports.messages.recent(ana, 10)] == ["hi"]
    assert await ports.messages.undelivered(NOW + timedelta(days=1), ["telegram"]) == []


async def test_a_request_is_answered_once(ports: Ports) -> None:
    ana = await _owner(ports)
    request = await _stored(ports, _says(ana, "hi", awaiting=True))
    first = await _answer(ports, request, _says(ana, "one", role=Role.ASSISTANT))
    second = await _answer(ports.again(), request, _says(ana, "two", role=Role.ASSISTANT))
    assert first is not None and second is None
    assert [m.text for m in await ports.messages.recent(ana, 10)] == ["hi", "one"]


async def test_a_claim_settles_without_a_reply_and_only_once(ports: Ports) -> None:
    ana = await _owner(ports)
    older = await _stored(ports, _says(ana, "first", awaiting=True))
    request = await _stored(ports, _says(ana, "second", awaiting=True, voice_note=NOTE))
    assert await _claim(ports, request.id, ana)
    assert not await _claim(ports, request.id, ana) and not await _claim(ports, older.id, ana)
    assert not await _claim(ports, request.id + 100, ana)
    assert not await ports.messages.is_awaiting(older.id)
    assert (await ports.messages.get(request.id)).voice_note is None  # type: ignore[union-attr]
    assert [m.text for m in await ports.messages.recent(ana, 10)] == ["first", "second"]  # no reply stored
    assert await ports.messages.undelivered(NOW + timedelta(days=1), ["telegram"]) == []


async def test_settling_is_per_owner_and_up_to_an_id(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    a1 = await _stored(ports, _says(ana, "a1", awaiting=True))
    b1 = await _stored(ports, _says(bo, "b1", awaiting=True))
    a2 = await _stored(ports, _says(ana, "a2", awaiting=True))
    await ports.messages.settle(ana, a1.id)
    assert [await ports.messages.is_awaiting(m.id) for m in (a1, b1, a2)] == [False, True, True]
    await ports.messages.settle(ana)
    assert [await ports.messages.is_awaiting(m.id) for m in (a1, b1, a2)] == [False, True, False]
    assert not await ports.messages.is_awaiting(a2.id + 100)


async def test_each_owners_newest_waiting_request_is_found_after_a_crash(ports: Ports) -> None:
    assert await ports.messages.awaiting_requests() == []
    ana, bo, cy = await _owner(ports), await _owner(ports, "bo"), await _owner(ports, "cy")
    b1 = await _stored(ports, _says(bo, "b1", awaiting=True))
    await _stored(ports, _says(ana, "a1", awaiting=True))
    a2 = await _stored(ports, _says(ana, "a2", awaiting=True))
    await _stored(ports, _says(ana, "a3, answered"))
    await _stored(ports, _says(cy, "c1, not waiting"))
    assert await ports.messages.awaiting_requests() == [a2, b1]  # by owner, each one's newest
    assert await ports.messages.newest_awaiting(cy) is None


# --- replies owed to a channel ------------------------------------------------------------

async def test_an_owed_reply_is_taken_once(ports: Ports) -> None:
    ana = await _owner(ports)
    request = await _stored(ports, _says(ana, "hi", awaiting=True))
    reply = await _answer(ports, request, _says(ana, "hello", role=Role.ASSISTANT))
    assert reply is not None
    assert await ports.messages.delivered(reply.id)
    assert not await ports.again().messages.delivered(reply.id)  # another worker finds it taken
    assert not await ports.messages.delivered(request.id)  # never owed
    assert await ports.messages.undelivered(NOW + timedelta(days=1), ["telegram"]) == []


async def test_owed_replies_are_listed_oldest_first_by_channel_age_and_limit(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")

    async def answered(owner: int, channel: str, at: datetime) -> StoredMessage:
        request = await _stored(ports, _says(owner, "q", at=at, channel=channel, awaiting=True))
        reply = await _answer(ports, request, _says(owner, f"{channel} {at:%H}", at=at, channel=channel, role=Role.ASSISTANT))
        assert reply is not None
        return reply

    late = await answered(ana, "telegram", NOW)
    early = await answered(bo, "telegram", NOW - timedelta(hours=2))
    other = await answered(ana, "whatsapp", NOW - timedelta(hours=1))
    owed = await ports.messages.undelivered(NOW + timedelta(seconds=1), ["telegram", "whatsapp"])
    assert [o.message for o in owed] == [early, other, late] and not any(o.unprompted for o in owed)
    assert [o.message for o in await ports.messages.undelivered(NOW, ["telegram", "whatsapp"])] == [early, other]
    assert [o.message for o in await ports.messages.undelivered(NOW + timedelta(seconds=1), ["telegram"])] == [early, late]
    assert [o.message for o in await ports.messages.undelivered(NOW + timedelta(seconds=1), ["telegram"], limit=1)] == [early]
    assert await ports.messages.undelivered(NOW + timedelta(seconds=1), ["local"]) == []


# --- voice notes --------------------------------------------------------------------------

async def test_a_voice_note_waits_for_its_transcript_which_retires_it(ports: Ports) -> None:
    ana, bo = await _owner(ports), await _owner(ports, "bo")
    note = await _stored(ports, _says(ana, "(voice note)", awaiting=True, attachment=True, voice_note=NOTE))
    typed = await _stored(ports, _says(ana, "typed", awaiting=True))
    later = await _stored(ports, _says(ana, "(another)", awaiting=True, voice_note=NOTE))
    await _stored(ports, _says(bo, "(bo's)", awaiting=True, voice_note=NOTE))
    assert await ports.messages.pending_voice(ana, typed.id) == [note]
    assert await ports.messages.pending_voice(ana, later.id) == [note, later]
    words = _says(ana, "I'm at the harbour", external_id=f"voice:{note.id}", voice=True, awaiting=True)

    async def transcribed() -> StoredMessage:  # what the listener does: the transcript stored, its note retired
        async with ports.uow() as tx:
            transcript = (await tx.messages.append(words)).message
            await tx.requests.retire(note.id)
        return transcript

    transcript = await transcribed()
    assert transcript.voice and transcript.text == "I'm at the harbour" and transcript.id > later.id
    assert await transcribed() == transcript  # a second transcription stores nothing new
    retired = await ports.messages.get(note.id)
    assert retired is not None and retired.voice_note is None and not retired.awaiting and retired.attachment
    assert await ports.messages.pending_voice(ana, later.id) == [later]


async def test_a_dropped_voice_note_stays_a_waiting_attachment(ports: Ports) -> None:
    ana = await _owner(ports)
    note = await _stored(ports, _says(ana, "(voice note)", awaiting=True, attachment=True, voice_note=NOTE))
    await ports.messages.drop_voice(note.id)
    dropped = await ports.messages.get(note.id)
    assert dropped is not None and dropped.voice_note is None and dropped.awaiting and dropped.attachment
    assert await ports.messages.pending_voice(ana, note.id) == []
