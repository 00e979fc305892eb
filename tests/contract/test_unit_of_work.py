"""The UnitOfWork port: the writes of one block commit together, or none of them, and no one sees half."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from core.message import Message, Role, StoredMessage
from tests.contract.conftest import NOW, Ports

LATER = NOW + timedelta(days=1)


class Boom(Exception):
    """What a use case raises in the middle of its unit of work."""


async def _request(ports: Ports, name: str = "ana") -> StoredMessage:
    owner = (await ports.owners.add(name, "UTC", (), NOW)).id
    return (await ports.messages.append(Message(owner, Role.OWNER, "hi", "telegram", NOW, awaiting=True))).message


def _reply(request: StoredMessage, text: str = "hello") -> Message:
    return Message(request.owner_id, Role.ASSISTANT, text, "telegram", NOW)


async def _texts(ports: Ports, owner_id: int) -> list[str]:
    return [m.text for m in await ports.messages.recent(owner_id, 10)]


async def test_every_write_of_a_unit_of_work_lands_when_it_ends(ports: Ports) -> None:
    request = await _request(ports)
    async with ports.uow() as tx:
        assert await tx.requests.claim(request.id, request.owner_id)
        reply = (await tx.messages.append(_reply(request))).message
        await tx.outbox.owe(reply)
    assert not await ports.messages.is_awaiting(request.id)
    assert await ports.messages.get(reply.id) == reply and reply.thread_id == request.thread_id
    assert [o.message for o in await ports.messages.undelivered(LATER, ["telegram"])] == [reply]


async def test_a_unit_of_work_that_raises_leaves_nothing(ports: Ports) -> None:
    request = await _request(ports)
    with pytest.raises(Boom):
        async with ports.uow() as tx:
            assert await tx.requests.claim(request.id, request.owner_id)
            reply = (await tx.messages.append(_reply(request))).message
            await tx.outbox.owe(reply)
            raise Boom
    assert await ports.messages.is_awaiting(request.id) and await ports.messages.newest_awaiting(request.owner_id) == request
    assert await ports.messages.get(reply.id) is None and await _texts(ports, request.owner_id) == ["hi"]
    assert await ports.messages.undelivered(LATER, ["telegram"]) == []
    async with ports.uow() as tx:  # and the next one is not held up by it
        assert await tx.requests.claim(request.id, request.owner_id)
    assert not await ports.messages.is_awaiting(request.id)


async def test_a_reader_never_sees_half_of_a_unit_of_work(ports: Ports) -> None:
    request = await _request(ports)
    written, finish = asyncio.Event(), asyncio.Event()

    async def answer() -> StoredMessage:
        async with ports.uow() as tx:
            assert await tx.requests.claim(request.id, request.owner_id)
            reply = (await tx.messages.append(_reply(request))).message
            await tx.outbox.owe(reply)
            written.set()
            await finish.wait()  # every write made, none committed
        return reply

    answering = asyncio.create_task(answer())
    try:
        await asyncio.wait_for(written.wait(), 10)
        reader = ports.again().messages  # another worker's handle: its own connection
        assert await reader.is_awaiting(request.id) and await reader.awaiting_requests() == [request]
        assert await _texts(ports.again(), request.owner_id) == ["hi"]
        assert await reader.undelivered(LATER, ["telegram"]) == []
    finally:
        finish.set()
        reply = await asyncio.wait_for(answering, 10)
    assert not await ports.messages.is_awaiting(request.id) and await _texts(ports, request.owner_id) == ["hi", "hello"]
    assert [o.message for o in await ports.messages.undelivered(LATER, ["telegram"])] == [reply]


async def test_two_units_of_work_at_once_answer_a_request_once(ports: Ports) -> None:
    """Two workers finishing the same turn: one stores its reply, the other nothing."""
    request = await _request(ports)

    async def answer(worker: Ports, text: str) -> StoredMessage | None:
        async with worker.uow() as tx:
            if not await tx.requests.claim(request.id, request.owner_id):
                return None
            await asyncio.sleep(0)  # let the other one try meanwhile
            reply = (await tx.messages.append(_reply(request, text))).message
            await tx.outbox.owe(reply)
        return reply

    answers = await asyncio.wait_for(asyncio.gather(answer(ports, "one"), answer(ports.again(), "two")), 10)
    assert sorted(a is None for a in answers) == [False, True]
    [reply] = [a for a in answers if a is not None]
    assert await _texts(ports, request.owner_id) == ["hi", reply.text]
    assert [o.message for o in await ports.messages.undelivered(LATER, ["telegram"])] == [reply]


async def test_a_unit_of_work_stores_in_the_active_thread_and_opens_one_for_an_owner_who_never_wrote(ports: Ports) -> None:
    """A reminder to an owner with no message yet: its thread is opened with it, or not at all."""
    owner = (await ports.owners.add("ana", "UTC", (), NOW)).id
    said = Message(owner, Role.ASSISTANT, "Reminder: water the figs", "telegram", NOW)
    with pytest.raises(Boom):
        async with ports.uow() as tx:
            await tx.messages.append(said)
            raise Boom
    assert await _texts(ports, owner) == []
    async with ports.uow() as tx:
        stored = (await tx.messages.append(said)).message
    assert stored.thread_id == await ports.messages.active_thread(owner) and await _texts(ports, owner) == [said.text]
    fresh = await ports.messages.reset_thread(owner)
    async with ports.uow() as tx:
        assert (await tx.messages.append(said)).message.thread_id == fresh
