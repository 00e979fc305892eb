"""The scheduler: claims what is due, sends it on the owner's channel, once.

Each tick claims the runs due by now (``Schedules.claim_due``: recorded by schedule and due
time, so no worker and no restart fires one twice) and the runs a dead process claimed but
never finished, then fires them side by side. A reminder's text goes as written; a task's
text is an agent turn's instruction (``TaskRuns``: origin ``schedule``, so it may read
memory but never save it). What a run sends is stored with its outbox row, and the run marked
sent, in one unit of work (``sent``) before it is sent, the way a reply is, and goes to the
channel the owner used last, falling back as the router does. A run that fell due while Nod
was down fires at start when it is at most ``LATE_BOUND`` late, saying so; later than that it
is recorded missed, and a run no channel took is recorded undelivered: the owner hears of both
at their next message (``notices``).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from core.agent.conductor import SEND_DEADLINE
from core.agent.turn_context import TurnOrigin
from core.clock import Clock
from core.errors import DeliveryFailed
from core.message import Message, Role, StoredMessage
from core.owner import Identity, Owner
from core.ports import Messages, Owners, ReplySink, Schedules, TaskRuns, UnitOfWork
from core.replies import Reply
from core.schedules.model import DueRun, Kind, Schedule, next_run, spoken_time

log = logging.getLogger("nod.schedules")
LATE_BOUND = timedelta(hours=2)  # a run missed by more is told at the next message, not fired
ON_TIME = timedelta(minutes=1)  # a run fired later than this says it is late
STALE_CLAIM = timedelta(minutes=15)  # a claimed run unfinished this long: its process died
TASK_TURNS = 4  # scheduled tasks' agent turns at once in a process; reminders never wait for them
NOTICE_LINES = 10  # a notice names at most this many schedules
MAX_WAIT_S = 1.0  # the longest a tick sleeps: a schedule made on another worker is due within a second



def advance(schedule: Schedule, zone: str, after: datetime) -> tuple[datetime, datetime] | None:
    """The schedule's next run after ``after`` in its owner's ``zone``, with its new anchor (see
    ``next_run``); None when it has no more. Never sooner than ``MIN_REPEAT`` after ``after``'s run."""
    return next_run(schedule.start_local, schedule.repeat, ZoneInfo(zone), after)


async def sent(uow: UnitOfWork, run: DueRun, reply: Message) -> StoredMessage | None:
    """Mark the run sent, store what it sends and owe that to the channel, in one unit of work;
    None when the run was finished already (another worker, or before a restart)."""
    async with uow() as tx:
        if not await tx.runs.mark_sent(run):
            return None
        stored = (await tx.messages.append(reply)).message
        await tx.runs.link_reply(run, stored.id)
        await tx.outbox.owe(stored, unprompted=True)  # Nod speaks first
    return stored


class Scheduler:
    def __init__(self, schedules: Schedules, owners: Owners, messages: Messages, uow: UnitOfWork, sink: ReplySink,
                 clock: Clock, tasks: TaskRuns, stale_at_start: timedelta = STALE_CLAIM) -> None:
        self._schedules = schedules
        self._owners = owners
        self._messages = messages
        self._uow = uow
        self._sink = sink
        self._clock = clock
        self._tasks = tasks
        self._stale = stale_at_start  # the first tick's: SQLite's one process may take its dead self's runs at once
        self._firing: set[asyncio.Task[None]] = set()
        self._task_turns = asyncio.Semaphore(TASK_TURNS)

    async def tick(self) -> int:
        """Claim every run due now (and unfinished ones a dead process left) and start firing them,
        each on its own, so one slow task holds up no other owner's reminder; how many."""
        now = self._clock.now()
        runs = await self._schedules.retake_stale(now, now - self._stale, now - LATE_BOUND)
        self._stale = STALE_CLAIM
        runs += await self._schedules.claim_due(now, now - ON_TIME, now - LATE_BOUND, advance)
        for run in runs:
            firing = asyncio.create_task(self._fire(run))
            self._firing.add(firing)
            firing.add_done_callback(self._firing.discard)
        return len(runs)

    async def close(self) -> None:
        """Stop: runs still firing are cancelled (their claims are taken up again after a restart)."""
        for firing in list(self._firing):
            firing.cancel()
        await self.settle()

    async def settle(self) -> None:
        """Until every run started so far has been fired (tests, and a clean stop)."""
        while self._firing:
            await asyncio.wait(set(self._firing))
            await asyncio.sleep(0)  # done callbacks run: the set forgets them

    async def wait_s(self) -> float:
        """How long until the next run is due, at most ``MAX_WAIT_S``."""
        due = await self._schedules.next_due()
        if due is None:
            return MAX_WAIT_S
        return max(0.0, min(MAX_WAIT_S, (due - self._clock.now()).total_seconds()))

    async def _fire(self, run: DueRun) -> None:
        try:
            await self._fire_once(run)
        except Exception:  # noqa: BLE001 - one run's failure never stops the others; it stays claimed
            log.exception("schedule_run_failed schedule=%s due=%s", run.schedule.id, run.due_at.isoformat())

    async def _fire_once(self, run: DueRun) -> None:
        owner = await self._owners.by_id(run.schedule.owner_id)
        to = await self._where(owner)
        text = await self._text(owner, run)
        reply = Message(owner.id, Role.ASSISTANT, text, to.channel if to else "schedule", self._clock.now(),
                           origin=TurnOrigin.SCHEDULE.value, address=to.external_id if to else None)
        stored = await sent(self._uow, run, reply)
        if stored is None:
            return  # finished elsewhere
        delivered = False
        try:
            if to is not None:
                await asyncio.wait_for(self._sink.deliver(owner, to, Reply(text, unprompted=True)),
                                       SEND_DEADLINE.total_seconds())
                delivered = True
        except DeliveryFailed as exc:
            log.warning("schedule_undelivered schedule=%s code=%s", run.schedule.id, exc.code)
        except Exception as exc:  # noqa: BLE001 - any other channel failure: the owner hears of it later
            log.warning("schedule_undelivered schedule=%s error=%s", run.schedule.id, type(exc).__name__)
        finally:
            await self._messages.delivered(stored.id)
        if not delivered:
            await self._schedules.undelivered(run)
        log.info("schedule_fired schedule=%s owner=%s kind=%s late=%s delivered=%s", run.schedule.id, owner.id,
                 run.schedule.kind.value, run.late, delivered)

    async def _text(self, owner: Owner, run: DueRun) -> str:
        late = (f"(Late: Nod was offline at {spoken_time(run.due_at, owner.zone)}.)\n" if run.late else "")
        if run.schedule.kind is Kind.REMINDER:
            return f"{late}Reminder: {run.schedule.text}"
        async with self._task_turns:
            return late + await self._tasks.run(owner, run.schedule)

    async def _where(self, owner: Owner) -> Identity | None:
        """The channel the owner used last; else the first one linked; None when there is none."""
        last = await self._schedules.last_address(owner.id)
        if last is not None:
            return Identity(*last)
        linked = [i for i in await self._owners.identities(owner.id) if i.channel != "local"]
        return linked[0] if linked else None


async def notices(schedules: Schedules, owner: Owner) -> str | None:
    """What the owner should hear at their next message: runs missed while Nod was down, runs
    no channel took. Each is told once."""
    untold = await schedules.untold(owner.id)
    if not untold:
        return None
    grouped: dict[tuple[int, str], list[datetime]] = {}
    texts: dict[int, str] = {}
    for schedule, due, status in untold:  # one line a schedule, however often it was missed
        grouped.setdefault((schedule.id, status), []).append(due)
        texts[schedule.id] = schedule.text
    lines = []
    for (schedule_id, status), dues in list(grouped.items())[:NOTICE_LINES]:
        what = "missed while Nod was offline" if status == "missed" else "could not be delivered"
        when = spoken_time(dues[-1], owner.zone) + (f", and {len(dues) - 1} earlier time(s)" if len(dues) > 1 else "")
        lines.append(f"- {_short(texts[schedule_id])} ({when}): {what}")
    more = len(grouped) - NOTICE_LINES
    tail = f"\n…and {more} more; /reminders lists what is coming." if more > 0 else ""
    return "About your reminders and tasks:\n" + "\n".join(lines) + tail


def _short(text: str, most: int = 100) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"
