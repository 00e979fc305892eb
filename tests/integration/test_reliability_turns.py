"""Turns and commands across restarts and workers (issue 14: findings 4 and 7).

A "restart" is what a killed process leaves: a second Nod opened on the same database
after the first one stopped without settling its turn (``conductor.close`` cancels turns
the way a crash ends them, before anything is answered). The kill -9 of a real process is
in tests/e2e/test_crash.py.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select

from adapters.storage.schema import threads
from core.agent.conductor import TOO_LATE
from core.message import Inbound, Message, Role
from core.owner import Identity
from tests.fakes.model_server import FakeModelServer, text
from tests.integration.harness import AGENT, START, Harness, Sink, make_harness

MAYA = Identity("telegram", "4242")


async def _linked(nod: Harness) -> None:
    if not await nod.svc.owners.identities(nod.owner.id):
        await nod.svc.owners.link(nod.owner.id, MAYA)


async def _threads(nod: Harness) -> int:
    async with nod.svc.engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(threads))).scalar_one())


async def test_a_turn_cut_off_by_a_crash_is_answered_once_after_the_restart(
        tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(AGENT, text("too slow", delay_s=30))
    async for nod in make_harness(tmp_path, server):
        await nod.conductor.receive(nod.owner, Inbound(Identity("telegram", "4242"), "where is my passport?", "u1"))
        await server.wait_for_calls(1)  # the turn is waiting for the model when the process dies
    server.enqueue(AGENT, text("In the top drawer."))
    async for nod in make_harness(tmp_path, server):
        front = nod.svc.front_door(nod.sink)
        assert await front.recover(("telegram",)) == 1
        await asyncio.wait_for(front.wait(nod.owner.id), 15)
        assert nod.sink.sent == ["In the top drawer."]
        assert await nod.svc.messages.awaiting_requests() == []
        assert await front.recover(("telegram",)) == 0  # answered: never again
        assert "where is my passport?" in str(server.calls()[-1]["messages"])
        await front.close()


async def test_a_request_older_than_the_bound_gets_a_note_instead_of_a_late_answer(
        tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server):
        # what a process that died seven hours ago left: a request no turn answered
        await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "book a table", "telegram",
                                                 START - timedelta(hours=7), "u1", address="4242", awaiting=True))
        front = nod.svc.front_door(nod.sink)
        assert await front.recover(("telegram",)) == 1
        await asyncio.wait_for(front.wait(nod.owner.id), 15)
        assert nod.sink.sent == [TOO_LATE.format(when="2026-12-03 02:00")]  # Lisbon time
        assert server.calls() == [] and await nod.svc.messages.awaiting_requests() == []
        await front.close()


async def test_a_channel_this_process_does_not_serve_is_left_for_one_that_does(
        tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server):
        await nod.conductor.receive(nod.owner, Inbound(Identity("whatsapp", "+351910000001"), "hello", "SM1"))
        await nod.conductor.close()  # died before answering
        front = nod.svc.front_door(nod.sink)
        assert await front.recover(("telegram",)) == 0
        assert len(await nod.svc.messages.awaiting_requests()) == 1


async def test_stop_and_reset_settle_what_awaits_so_nothing_is_recovered(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(AGENT, text("slow", delay_s=30), text("slow too", delay_s=30))
    async for nod in make_harness(tmp_path, server):
        await _linked(nod)
        front = nod.svc.front_door(nod.sink)
        for n, command in enumerate(("/stop", "/reset"), start=1):
            await front.handle(Inbound(MAYA, f"question {n}", f"m{n}"))
            await server.wait_for_calls(n)
            await front.handle(Inbound(MAYA, command, f"c{n}"))
            assert await nod.svc.messages.awaiting_requests() == []
        await front.close()


async def test_a_redelivered_reset_after_a_restart_resets_nothing(tmp_path: Path, server: FakeModelServer) -> None:
    reset = Inbound(MAYA, "/reset", "update-7")
    async for nod in make_harness(tmp_path, server):
        await _linked(nod)
        front = nod.svc.front_door(nod.sink)
        assert (await front.handle(reset)).answer == "Started a new conversation. Your memory is kept."
        active, count = await nod.svc.messages.active_thread(nod.owner.id), await _threads(nod)
    async for nod in make_harness(tmp_path, server):
        front = nod.svc.front_door(nod.sink)
        handled = await front.handle(reset)
        assert handled.answer is None and handled.later is None
        assert await nod.svc.messages.active_thread(nod.owner.id) == active and await _threads(nod) == count


async def test_two_postgresql_workers_given_the_same_commands_run_each_once(
        tmp_path: Path, server: FakeModelServer, postgres_url: str) -> None:
    async for one in make_harness(tmp_path / "one", server, database_url=postgres_url, memory_model=None):
        await _linked(one)
        async for two in make_harness(tmp_path / "two", server, database_url=postgres_url, memory_model=None):
            doors = (one.svc.front_door(one.sink), two.svc.front_door(Sink()))
            for round_ in range(3):
                reset = Inbound(MAYA, "/reset", f"reset-{round_}")
                handled = await asyncio.gather(*(door.handle(reset) for door in doors))
                assert sorted(h.answer is not None for h in handled) == [False, True]
            assert await _threads(one) == 3  # one per distinct /reset
            digests = await asyncio.gather(*(door.handle(Inbound(MAYA, "/memory", "memory-1")) for door in doors))
            assert sorted(d.later is not None for d in digests) == [False, True]
            for door in doors:
                await door.close()


async def test_two_postgresql_workers_recovering_at_once_answer_once(
        tmp_path: Path, server: FakeModelServer, postgres_url: str) -> None:
    server.enqueue(AGENT, text("Answered once."), text("Answered twice!"))
    async for one in make_harness(tmp_path / "one", server, database_url=postgres_url, memory_model=None):
        await one.conductor.receive(one.owner, Inbound(Identity("telegram", "4242"), "are you there?", "u1"))
        await one.conductor.close()  # the worker died before its turn answered
        server.requests.clear()
        async for two in make_harness(tmp_path / "two", server, database_url=postgres_url, memory_model=None):
            sinks = (Sink(), Sink())
            doors = (one.svc.front_door(sinks[0]), two.svc.front_door(sinks[1]))
            taken = sum(await asyncio.gather(*(door.recover(("telegram",)) for door in doors)))
            assert taken in (1, 2)  # the second may look after the first already answered
            await asyncio.wait_for(asyncio.gather(*(door.wait(one.owner.id) for door in doors)), 20)
            assert sinks[0].sent + sinks[1].sent == ["Answered once."] and len(server.calls()) == 1
            for door in doors:
                await door.close()


async def test_two_processes_on_one_sqlite_file_recovering_at_once_answer_once(
        tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(AGENT, text("Answered.", delay_s=0.2), text("Answered again!", delay_s=0.2))
    async for one in make_harness(tmp_path, server, memory_model=None):
        await one.conductor.receive(one.owner, Inbound(Identity("telegram", "4242"), "are you there?", "u1"))
        await one.conductor.close()
        async for two in make_harness(tmp_path, server, memory_model=None):  # a second engine on the same file
            sinks = (Sink(), Sink())
            doors = (one.svc.front_door(sinks[0]), two.svc.front_door(sinks[1]))
            await asyncio.gather(*(door.recover(("telegram",)) for door in doors))
            await asyncio.wait_for(asyncio.gather(*(door.wait(one.owner.id) for door in doors)), 20)
            assert len(sinks[0].sent + sinks[1].sent) == 1  # both may have asked the model; one answer is sent
            for door in doors:
                await door.close()
