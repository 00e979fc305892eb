"""Schedules and their runs in the database: created, listed, cancelled, claimed once.

A due run is claimed in one transaction that records it by (schedule, due time) and moves
the schedule to its next run, conditional on the schedule still being due at that time:
whichever worker commits first has it, the others find nothing (PostgreSQL's ``FOR UPDATE
SKIP LOCKED`` keeps them from even waiting for each other; SQLite has one writer). The
message a run sends is stored with its outbox row in the transaction that marks the run
sent (``RunRows``, in the scheduler's unit of work), so a crash after that is recovered like
any stored reply, and a crash before it leaves the run ``claimed`` for the next sweep to finish.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import messages, owners, schedule_runs, schedules
from core.errors import InvalidInput
from core.schedules.model import MAX_ACTIVE, MIN_REPEAT, DueRun, Kind, Schedule

log = logging.getLogger("nod.storage")
# (schedule, zone, after) -> (next run in UTC, the schedule's new wall-clock anchor), or None
Advance = Callable[[Schedule, str, datetime], tuple[datetime, datetime] | None]


def _moved(step: tuple[datetime, datetime] | None) -> dict[str, Any]:
    """The columns a schedule's next run sets: the run, and the anchor its calendar is walked from."""
    if step is None:
        return {"next_run_at": None}
    return {"next_run_at": step[0], "start_local": step[1].replace(tzinfo=None).isoformat()}


def _schedule(row: Any) -> Schedule:
    return Schedule(row.id, row.owner_id, Kind(row.kind), row.text, datetime.fromisoformat(row.start_local),
                    row.repeat, row.next_run_at, row.created_at, row.created_from)


SPACING = MIN_REPEAT - timedelta(microseconds=1)  # a run follows the last one by 15 minutes at least, whatever the rule
MAX_ATTEMPTS = 3  # a run retaken this often after its process died is given up (and the owner told)


def _step(advance: Advance, found: Schedule, zone: str, after: datetime) -> tuple[datetime, datetime] | None:
    """``advance``, or None (the schedule stops) when its rule cannot be computed any more."""
    try:
        return advance(found, zone, after)
    except Exception:  # noqa: BLE001 - one bad schedule must not hold up a hundred others' runs
        log.exception("schedule_stopped schedule=%s reason=unreadable_rule", found.id)
        return None


class ScheduleStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def create(self, owner_id: int, kind: Kind, text: str, start_local: datetime, repeat: str | None,
                     next_run_at: datetime, now: datetime, created_from: int | None) -> Schedule:
        """A new active schedule; InvalidInput when the owner has ``MAX_ACTIVE`` already."""
        async with writing(self._engine) as conn:
            if conn.dialect.name == "postgresql":  # two creates at once count one after the other
                await conn.execute(select(owners.c.id).where(owners.c.id == owner_id).with_for_update())
            active = (await conn.execute(select(func.count()).select_from(schedules).where(
                schedules.c.owner_id == owner_id, schedules.c.next_run_at.is_not(None)))).scalar_one()
            if active >= MAX_ACTIVE:
                raise InvalidInput(f"You have {MAX_ACTIVE} active reminders and tasks, the most Nod keeps; cancel one first.")
            row = (await conn.execute(insert(schedules).values(
                owner_id=owner_id, kind=kind.value, text=text, start_local=start_local.replace(tzinfo=None).isoformat(),
                repeat=repeat, next_run_at=next_run_at, created_at=now, created_from=created_from,
            ).returning(*schedules.c))).one()
        return _schedule(row)

    async def active(self, owner_id: int) -> list[Schedule]:
        """The owner's schedules that will still run, soonest first."""
        query = (select(schedules).where(schedules.c.owner_id == owner_id, schedules.c.next_run_at.is_not(None))
                 .order_by(schedules.c.next_run_at, schedules.c.id))
        async with self._engine.connect() as conn:
            return [_schedule(r) for r in (await conn.execute(query)).all()]

    async def cancel(self, owner_id: int, schedule_id: int, now: datetime) -> Schedule | None:
        """Cancel the owner's active schedule ``schedule_id``; None when the owner has no such one."""
        async with writing(self._engine) as conn:
            row = (await conn.execute(update(schedules).where(
                schedules.c.id == schedule_id, schedules.c.owner_id == owner_id, schedules.c.next_run_at.is_not(None),
            ).values(next_run_at=None, cancelled_at=now).returning(*schedules.c))).first()
        return _schedule(row) if row is not None else None

    async def rezone(self, owner_id: int, zone: str, now: datetime, advance: Advance) -> int:
        """The owner's zone changed: every future run is computed again from its wall-clock time."""
        changed = 0
        async with writing(self._engine) as conn:
            for found in await self._owned_active(conn, owner_id):
                done = await conn.execute(update(schedules).where(  # a run claimed meanwhile keeps its claim
                    schedules.c.id == found.id, schedules.c.next_run_at == found.next_run_at).values(**_moved(advance(found, zone, now))))
                changed += done.rowcount
        return changed

    @staticmethod
    async def _owned_active(conn: AsyncConnection, owner_id: int) -> list[Schedule]:
        query = select(schedules).where(schedules.c.owner_id == owner_id, schedules.c.next_run_at.is_not(None))
        return [_schedule(r) for r in (await conn.execute(query)).all()]

    async def next_due(self) -> datetime | None:
        """The soonest next run of any schedule: how long the scheduler may sleep."""
        async with self._engine.connect() as conn:
            return (await conn.execute(select(func.min(schedules.c.next_run_at)))).scalar()  # type: ignore[no-any-return]

    async def claim_due(self, now: datetime, late_after: datetime, missed_before: datetime, advance: Advance,
                        limit: int = 100) -> list[DueRun]:
        """Claim up to ``limit`` runs due by ``now``: recorded, and each schedule moved to its next run.

        A run due before ``missed_before`` is recorded ``missed`` (the owner hears of it at their
        next message) instead of claimed; one due before ``late_after`` is claimed as late.
        """
        query = (select(schedules, owners.c.time_zone).join(owners, owners.c.id == schedules.c.owner_id)
                 .where(schedules.c.next_run_at <= now).order_by(schedules.c.next_run_at).limit(limit))
        claimed: list[DueRun] = []
        async with writing(self._engine) as conn:
            if conn.dialect.name == "postgresql":
                query = query.with_for_update(of=schedules, skip_locked=True)
            for row in (await conn.execute(query)).all():
                found, due = _schedule(row), row.next_run_at
                missed = due < missed_before
                await conn.execute(update(schedules).where(schedules.c.id == found.id, schedules.c.next_run_at == due)
                                   .values(**_moved(_step(advance, found, row.time_zone, max(now, due + SPACING)))))
                recorded = await self._record(conn, found, due, now, "missed" if missed else "claimed")
                if recorded and not missed:
                    claimed.append(DueRun(found, due, late=due < late_after))
        return claimed

    @staticmethod
    async def _record(conn: AsyncConnection, found: Schedule, due: datetime, now: datetime, status: str) -> bool:
        """The run recorded; False when it was recorded before (taken already: never twice)."""
        dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
        done = await conn.execute(dialect_insert(schedule_runs).values(
            schedule_id=found.id, due_at=due, owner_id=found.owner_id, status=status, claimed_at=now,
        ).on_conflict_do_nothing())
        return bool(done.rowcount == 1)

    async def last_address(self, owner_id: int) -> tuple[str, str] | None:
        """(channel, address) of the owner's newest message that came with one: where they were last."""
        query = (select(messages.c.channel, messages.c.address).where(
            messages.c.owner_id == owner_id, messages.c.role == "owner", messages.c.address.is_not(None),
            messages.c.channel != "local").order_by(messages.c.id.desc()).limit(1))
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return (row.channel, row.address) if row is not None else None

    async def retake_stale(self, now: datetime, claimed_before: datetime, missed_before: datetime,
                           limit: int = 100) -> list[DueRun]:
        """Runs claimed before ``claimed_before`` and never finished (their process died): taken again,
        once a sweep. One cancelled since is dropped; one due before ``missed_before``, or tried
        ``MAX_ATTEMPTS`` times, is recorded missed (the owner hears of it) instead."""
        query = (select(schedule_runs.c.due_at, schedule_runs.c.attempts, schedules)
                 .join(schedules, schedules.c.id == schedule_runs.c.schedule_id)
                 .where(schedule_runs.c.status == "claimed", schedule_runs.c.claimed_at < claimed_before).limit(limit))
        taken: list[DueRun] = []
        async with writing(self._engine) as conn:
            for row in (await conn.execute(query)).all():
                gone = row.cancelled_at is not None
                given_up = row.due_at < missed_before or row.attempts >= MAX_ATTEMPTS
                status = "cancelled" if gone else "missed" if given_up else "claimed"
                mine = await conn.execute(update(schedule_runs).where(
                    schedule_runs.c.schedule_id == row.id, schedule_runs.c.due_at == row.due_at,
                    schedule_runs.c.status == "claimed", schedule_runs.c.claimed_at < claimed_before,
                ).values(claimed_at=now, status=status, attempts=row.attempts + 1))
                if mine.rowcount == 1 and status == "claimed":
                    taken.append(DueRun(_schedule(row), row.due_at, late=True))
        return taken

    async def undelivered(self, run: DueRun) -> None:
        """No channel took the run's message: the owner hears of it at their next message."""
        async with writing(self._engine) as conn:
            await _mark(conn, run, "undelivered", "sent")

    async def untold(self, owner_id: int) -> list[tuple[Schedule, datetime, str]]:
        """Runs missed or undelivered that the owner was not told of yet; marked told now, once."""
        query = (select(schedule_runs.c.due_at, schedule_runs.c.status, schedules)
                 .join(schedules, schedules.c.id == schedule_runs.c.schedule_id)
                 .where(schedule_runs.c.owner_id == owner_id, schedule_runs.c.status.in_(("missed", "undelivered")),
                        schedule_runs.c.told.is_(False)).order_by(schedule_runs.c.due_at))
        async with self._engine.connect() as conn:  # the usual answer is none: a read, no write lock
            if (await conn.execute(query.limit(1))).first() is None:
                return []
        async with writing(self._engine) as conn:
            rows = (await conn.execute(query)).all()
            told = []
            for row in rows:
                done = await conn.execute(update(schedule_runs).where(
                    schedule_runs.c.schedule_id == row.id, schedule_runs.c.due_at == row.due_at,
                    schedule_runs.c.told.is_(False)).values(told=True))
                if done.rowcount == 1:
                    told.append((_schedule(row), row.due_at, row.status))
        return told


class RunRows:
    """A claimed run as one transaction finishes it (core.ports.RunWrites), with the message it sends."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def mark_sent(self, run: DueRun) -> bool:
        return await _mark(self._conn, run, "sent", "claimed")

    async def link_reply(self, run: DueRun, reply_id: int) -> None:
        await self._conn.execute(update(schedule_runs).where(*_key(run)).values(reply_id=reply_id))


def _key(run: DueRun) -> tuple[Any, ...]:
    return (schedule_runs.c.schedule_id == run.schedule.id, schedule_runs.c.due_at == run.due_at)


async def _mark(conn: AsyncConnection, run: DueRun, status: str, was: str) -> bool:
    done = await conn.execute(update(schedule_runs).where(and_(*_key(run), schedule_runs.c.status == was))
                              .values(status=status))
    return bool(done.rowcount == 1)
