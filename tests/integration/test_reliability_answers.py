"""Answered exactly once, whatever fails (issue 39: findings 1 to 5).

A reply is sent only once it is stored; a request whose reply could not be stored is
answered later by recovery, once. Real faults: a full file system under SQLite (a small
tmpfs), a PostgreSQL whose connections die and come back (a TCP proxy in front of the real
server, cut and restored), commits out of id order (a trigger that holds one insert open
until the test lets it go), and a model that answers 10 MB.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

from adapters.storage.schema import messages
from core.message import Inbound, Message, Role
from core.owner import Identity, Owner
from core.replies import CUT_NOTE, MAX_REPLY_CHARS, Reply
from tests.fakes.model_server import FakeModelServer, text
from tests.fakes.tcp_proxy import TcpProxy
from tests.integration.harness import AGENT, START, Harness, Sink, make_harness

MAYA = Identity("telegram", "4242")


@contextlib.contextmanager
def small_disk(where: Path, size: str = "64m") -> Iterator[Path]:
    """A tmpfs of ``size`` at ``where``: a disk that really fills up. Needs root (CI is)."""
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not root'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """Write until the file system says it is full; the filler file, to delete for room."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as handle:
        for piece in (chunk, b"\0"):  # then the last few bytes, so not even a page is left
            with contextlib.suppress(OSError):
                while True:
                    handle.write(piece)
    return filler


async def _replies(nod: Harness) -> list[str]:
    query = select(messages.c.text).where(messages.c.role == Role.ASSISTANT.value).order_by(messages.c.id)
    async with nod.svc.engine.connect() as conn:
        return [row[0] for row in (await conn.execute(query)).all()]


async def _settled(nod: Harness) -> None:
    await asyncio.wait_for(nod.conductor.wait(nod.owner.id), 20)


async def test_a_reply_a_full_disk_cannot_store_is_never_sent_and_is_answered_once_later(
        tmp_path: Path, server: FakeModelServer) -> None:
    held = asyncio.Event()
    server.enqueue(AGENT, text("FIRST-ANSWER", hold=held), text("SECOND-ANSWER"))
    with small_disk(tmp_path / "disk") as disk:
        async for nod in make_harness(disk, server, memory_model=None):
            await nod.conductor.receive(nod.owner, Inbound(MAYA, "what's on today?", "u1"))
            await server.wait_for_calls(1)
            filler = fill(disk)  # the disk fills while the model works
            held.set()
            await _settled(nod)
            assert nod.sink.sent == []  # the reply could not be stored, so it was not sent
            filler.unlink()  # room again
            assert len(await nod.svc.messages.awaiting_requests()) == 1
            assert await nod.conductor.recover(("telegram",)) == 0  # a failed store backs off a minute
            nod.svc.clock.set(START + timedelta(minutes=1))  # type: ignore[attr-defined]
            assert await nod.conductor.recover(("telegram",)) == 1
            await _settled(nod)
            assert nod.sink.sent == ["SECOND-ANSWER"]
            assert await _replies(nod) == ["SECOND-ANSWER"]
            assert await nod.svc.messages.awaiting_requests() == []
            assert await nod.conductor.recover(("telegram",)) == 0


def _through(url: str, proxy: TcpProxy) -> str:
    return make_url(url).set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)


@pytest.fixture
async def proxied_postgres(postgres_url: str) -> AsyncIterator[tuple[str, TcpProxy]]:
    """The test's PostgreSQL database reached through a proxy that can play a restart."""
    real = make_url(postgres_url)
    proxy = await TcpProxy(real.host or "127.0.0.1", real.port or 5432).start()
    try:
        yield _through(postgres_url, proxy), proxy
    finally:
        await proxy.stop()


async def test_postgresql_gone_mid_turn_sends_nothing_then_one_answer_after_it_is_back(
        tmp_path: Path, server: FakeModelServer, proxied_postgres: tuple[str, TcpProxy]) -> None:
    url, proxy = proxied_postgres
    held = asyncio.Event()
    server.enqueue(AGENT, text("PGSLOW", hold=held), text("PGSLOW-2"))
    async for nod in make_harness(tmp_path, server, database_url=url, memory_model=None):
        await nod.svc.owners.link(nod.owner.id, MAYA)
        await nod.conductor.receive(nod.owner, Inbound(MAYA, "are you there?", "u1"))
        await server.wait_for_calls(1)
        await proxy.cut()  # PostgreSQL stops while the model works
        held.set()
        await _settled(nod)
        assert nod.sink.sent == []  # neither the answer nor a failure sentence: nothing was stored
        proxy.restore()  # ... and is back
        nod.svc.clock.set(START + timedelta(minutes=1))  # type: ignore[attr-defined]
        assert await nod.conductor.recover(("telegram",)) == 1
        await _settled(nod)
        assert nod.sink.sent == ["PGSLOW-2"]
        assert await nod.conductor.recover(("telegram",)) == 0


async def test_the_first_turn_after_a_postgresql_restart_is_answered(
        tmp_path: Path, server: FakeModelServer, proxied_postgres: tuple[str, TcpProxy]) -> None:
    url, proxy = proxied_postgres
    server.enqueue(AGENT, text("Before."), text("After."))
    async for nod in make_harness(tmp_path, server, database_url=url, memory_model=None):
        await nod.conductor.receive(nod.owner, Inbound(MAYA, "one", "u1"))
        await _settled(nod)
        await proxy.cut()  # a restart: every connection, the turn lock's included, dies
        proxy.restore()
        await nod.conductor.receive(nod.owner, Inbound(MAYA, "two", "u2"))
        await _settled(nod)
        assert nod.sink.sent == ["Before.", "After."]


_HOLD_KEY = 0x4E0D_7E57


async def _hold_inserts_of(url: str, words: str, prefix: bool = False) -> asyncpg.Connection:
    """A trigger that keeps an insert of ``words`` (or of text starting with them) open, its id
    drawn, until the returned connection lets go of an advisory lock: a commit out of id order."""
    admin = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    test = f"starts_with(NEW.text, '{words}')" if prefix else f"NEW.text = '{words}'"
    await admin.execute(f"""CREATE FUNCTION nod_test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF {test} THEN PERFORM pg_advisory_xact_lock_shared({_HOLD_KEY}); END IF;
        RETURN NEW; END $$""")
    await admin.execute("CREATE TRIGGER nod_test_hold AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION nod_test_hold()")
    await admin.execute(f"SELECT pg_advisory_lock({_HOLD_KEY})")
    return admin


async def test_a_turn_restarted_by_an_older_commit_answers_the_newest_request(
        tmp_path: Path, server: FakeModelServer, postgres_url: str) -> None:
    server.enqueue(AGENT, text("Answered."), text("Answered."))  # a restarted turn may have asked already
    async for nod in make_harness(tmp_path, server, database_url=postgres_url, memory_model=None):
        await nod.svc.owners.link(nod.owner.id, MAYA)
        admin = await _hold_inserts_of(postgres_url, "first")
        try:
            first = asyncio.create_task(nod.conductor.receive(nod.owner, Inbound(MAYA, "first", "u1")))
            await asyncio.wait_for(_until_id_drawn(admin), 10)
            second = await nod.conductor.receive(nod.owner, Inbound(MAYA, "second", "u2"))
            await admin.execute(f"SELECT pg_advisory_unlock({_HOLD_KEY})")  # the older one commits last
            older = await asyncio.wait_for(first, 10)
            assert older is not None and second is not None and older.id < second.id
            await _settled(nod)  # the older one's start restarted the newer one's turn
        finally:
            await admin.close()
        assert nod.sink.sent == ["Answered."]
        assert await nod.svc.messages.awaiting_requests() == []


async def _until_id_drawn(admin: asyncpg.Connection) -> None:
    """Until an insert waits on the hold (its id is drawn, its commit not yet made)."""
    while not await admin.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"):
        await asyncio.sleep(0.01)


async def test_two_workers_with_out_of_order_commits_leave_nothing_awaiting(
        tmp_path: Path, server: FakeModelServer, postgres_url: str) -> None:
    """Ten updates a round alternating between two workers; in each round one insert is held
    open (its id drawn) until its worker stored a later one and the other worker one between."""
    rounds = int(os.environ.get("NOD_TEST_INTERLEAVE_ROUNDS", "6"))
    async for one in make_harness(tmp_path / "one", server, database_url=postgres_url, memory_model=None):
        await one.svc.owners.link(one.owner.id, MAYA)
        async for two in make_harness(tmp_path / "two", server, database_url=postgres_url, memory_model=None):
            workers = (one, two)
            admin = await _hold_inserts_of(postgres_url, "held", prefix=True)
            try:
                for round_ in range(rounds):
                    await _interleaved_round(workers, server, admin, round_)
                    assert await one.svc.messages.awaiting_requests() == [], f"round {round_}"
            finally:
                await admin.close()
            assert one.sink.sent + two.sink.sent  # answered, and nothing left waiting
            server.queues.clear()


async def _interleaved_round(workers: tuple[Harness, ...], server: FakeModelServer, admin: asyncpg.Connection,
                             round_: int) -> None:
    server.enqueue(AGENT, *(text(f"answer {round_}.{n}", delay_s=random.uniform(0, 0.03)) for n in range(10)))
    held_at = random.Random(round_).choice((5, 7))  # the second worker's; it stores held_at + 2 before it commits
    held: asyncio.Task[object] | None = None
    for n in range(10):
        worker = workers[n % 2]
        words = f"held {round_}.{n}" if n == held_at else f"message {round_}.{n}"
        receiving = worker.conductor.receive(worker.owner, Inbound(MAYA, words, f"u{round_}.{n}"))
        if n == held_at:
            held = asyncio.create_task(receiving)
            await asyncio.wait_for(_until_id_drawn(admin), 10)
            continue
        await receiving
        if n == held_at + 2:  # later ids are stored on both workers: now the held one commits
            await admin.execute(f"SELECT pg_advisory_unlock({_HOLD_KEY})")
            assert held is not None and await asyncio.wait_for(held, 10) is not None
            await admin.execute(f"SELECT pg_advisory_lock({_HOLD_KEY})")
    await _all_settled(workers)


async def _all_settled(workers: tuple[Harness, ...]) -> None:
    """Until no worker runs a turn and nothing awaits (the last turn may still be storing)."""
    async def quiet() -> None:
        while True:
            for worker in workers:
                await worker.conductor.wait(worker.owner.id)
            if not await workers[0].svc.messages.awaiting_requests():
                return
            await asyncio.sleep(0.02)
    await asyncio.wait_for(quiet(), 30)


async def test_a_runaway_answer_is_cut_to_the_bound_with_a_sentence(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(AGENT, text("word " * 40_000))  # 200 KB: read whole, but far past what a chat should get
    server.enqueue(AGENT, text("word " * 2_000_000))  # 10 MB: not even read to the end (the byte cap, issue 38)
    async for nod in make_harness(tmp_path, server, memory_model=None):
        for n in (1, 2):
            await nod.conductor.receive(nod.owner, Inbound(MAYA, "tell me everything", f"u{n}"))
            await _settled(nod)
        long, runaway = nod.sink.sent
        assert len(long) <= MAX_REPLY_CHARS and long.endswith(CUT_NOTE)
        assert len(runaway) < 200 and "length limit" in runaway  # one sentence
        assert await _replies(nod) == [long]  # the sentence is a notice, not conversation


async def test_a_reply_stored_by_a_process_that_died_before_sending_is_sent_once(
        tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, memory_model=None):
        request = (await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "call mum?", "telegram", START,
                                                             "u1", address="4242", awaiting=True))).message
        # what a process killed between storing its reply and sending it leaves
        async with nod.svc.turn.uow() as tx:
            assert await tx.requests.claim(request.id, nod.owner.id)
            reply = (await tx.messages.append(Message(
                nod.owner.id, Role.ASSISTANT, "Yes, at six.", "telegram", START, address="4242"))).message
            await tx.outbox.owe(reply)
        assert await nod.conductor.recover(("telegram",)) == 0  # a live worker may still be sending it
        nod.svc.clock.set(START + timedelta(minutes=6))  # type: ignore[attr-defined]
        assert await nod.conductor.recover(("whatsapp",)) == 0  # another channel's worker leaves it
        assert await nod.conductor.recover(("telegram",)) == 1
        assert nod.sink.sent == ["Yes, at six."]
        assert await nod.conductor.recover(("telegram",)) == 0
        second = Sink()
        assert await nod.svc.conductor(second).recover(("telegram",)) == 0 and second.sent == []


class _SlowChannel(Sink):
    """A channel that takes the reply only when the test lets it: a send in flight during a stop."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = asyncio.Event(), asyncio.Event()

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        self.entered.set()
        await self.release.wait()
        await super().deliver(owner, to, reply)


async def test_a_stop_waits_for_a_reply_being_handed_over_so_the_restart_does_not_send_it_again(
        tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, memory_model=None):
        channel = _SlowChannel()
        conductor = nod.svc.conductor(channel)
        server.enqueue(AGENT, text("Yes, at six."))
        await conductor.receive(nod.owner, Inbound(Identity("telegram", "4242"), "call mum?", external_id="u1"))
        await asyncio.wait_for(channel.entered.wait(), 20)
        stopping = asyncio.create_task(conductor.close())
        done, _ = await asyncio.wait({stopping}, timeout=1)
        assert not done, "the stop returned while the reply was still being handed to its channel"
        channel.release.set()
        await asyncio.wait_for(stopping, 20)
        assert channel.sent == ["Yes, at six."]
        nod.svc.clock.set(START + timedelta(minutes=6))  # type: ignore[attr-defined]
        again = Sink()  # the restarted process: nothing is owed, so nothing is sent twice
        assert await nod.svc.conductor(again).recover(("telegram",)) == 0 and again.sent == []
