"""The scheduler under 10,000 active schedules: a tick's cost, and how late a due run is sent.

``python -m tests.bench schedules`` (SQLite; PostgreSQL too with NOD_TEST_POSTGRES_URL).
200 owners with 50 schedules each (the most an owner may keep), spread over the next week.
First the tick with nothing due, the loop's usual case (one query for due runs, one for
stale claims, one for the next due time); then 200 more runs falling due within a few
seconds, fired by the loop ``nod run`` runs (``bot.run._schedule_loop``'s steps) with the
real clock, each timed from its due time to the moment the reply sink received it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.settings import Settings
from bot.wiring import services
from core.owner import Identity, Owner
from core.replies import Reply
from core.schedules.model import Kind
from core.schedules.runner import Scheduler

OWNERS = 200
EACH = 50
TICKS = 200
DUE_SOON = 200


class TimedSink:
    """Records when each reminder reached it: the channel's side of the delay."""

    def __init__(self) -> None:
        self.received: dict[str, float] = {}
        self.all_in = asyncio.Event()

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        self.received[reply.text.splitlines()[-1]] = time.time()
        if len(self.received) >= DUE_SOON:
            self.all_in.set()


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


async def _fill(svc: object, now: datetime) -> list[Owner]:
    owners = []
    for k in range(OWNERS):
        owner = await svc.owners.add(f"o{k}", "Europe/Lisbon", (Identity("telegram", str(10_000 + k)),), now)  # type: ignore[attr-defined]
        owners.append(owner)
        for n in range(EACH - 1):  # one place left for a run that falls due soon
            at = now + timedelta(hours=1 + (k * EACH + n) % (24 * 7))
            await svc.schedules.create(owner.id, Kind.REMINDER, f"later {k}.{n}", at.astimezone(owner.zone)  # type: ignore[attr-defined]
                                       .replace(tzinfo=None), None, at, now, None)
    return owners


async def _loop(scheduler: Scheduler, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await scheduler.tick()
        try:
            await asyncio.wait_for(stop.wait(), timeout=await scheduler.wait_s())
        except TimeoutError:
            pass


async def _one(url: str, label: str) -> None:
    async with services(Settings(database_url=url)) as svc:
        now = datetime.now(UTC)
        started = time.perf_counter()
        owners = await _fill(svc, now)
        print(f"{label}: {OWNERS * (EACH - 1):,} schedules stored in {time.perf_counter() - started:.1f} s")
        sink = TimedSink()
        scheduler = svc.scheduler(sink)
        ticks = []
        for _ in range(TICKS):
            began = time.perf_counter()
            await scheduler.tick()
            await scheduler.wait_s()
            ticks.append((time.perf_counter() - began) * 1000)
        due: dict[str, float] = {}
        soon = datetime.now(UTC) + timedelta(seconds=2)
        for n in range(DUE_SOON):
            at = soon + timedelta(milliseconds=15 * n)
            owner = owners[n % OWNERS]
            await svc.schedules.create(owner.id, Kind.REMINDER, f"soon {n}", at.astimezone(owner.zone).replace(tzinfo=None),
                                       None, at, datetime.now(UTC), None)
            due[f"Reminder: soon {n}"] = at.timestamp()
        stop = asyncio.Event()
        loop = asyncio.create_task(_loop(scheduler, stop))
        await asyncio.wait_for(sink.all_in.wait(), 60)
        stop.set()
        await loop
        delays = [(sink.received[text] - at) * 1000 for text, at in due.items()]
        print(f"| {label} | tick, nothing due (ms) p50 {statistics.median(ticks):.2f} p99 {_pct(ticks, 0.99):.2f} "
              f"| due → sent (ms) p50 {statistics.median(delays):.1f} p99 {_pct(delays, 0.99):.1f} max {max(delays):.1f} |")


async def run_schedules_bench() -> None:
    print(f"{OWNERS * (EACH - 1) + DUE_SOON:,} active schedules ({DUE_SOON} of them due within 5 s), {TICKS} idle ticks")
    with tempfile.TemporaryDirectory() as folder:
        await _one(f"sqlite+aiosqlite:///{Path(folder) / 'nod.db'}", "SQLite")
    url = os.environ.get("NOD_TEST_POSTGRES_URL")
    if url:
        from tests.conftest import drop_postgres_database, fresh_postgres_url

        fresh = await fresh_postgres_url()
        try:
            await _one(fresh, "PostgreSQL")
        finally:
            await drop_postgres_database(fresh)
