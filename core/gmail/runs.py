"""Writing-style runs in the background: at most one per owner at a time in this process.

Connecting Gmail and the page's Refresh button start a run without waiting for it (the
browser is back on the page at once, which shows the run going on); the hourly maintenance
awaits the weekly one under its owner lock. A second request while a run is going joins
it. A run's failure is its recorded sentence, so a background task never dies with an
exception nobody reads; ``close`` stops what is left when the process stops.
"""

from __future__ import annotations

import asyncio
import logging
import traceback

from core.errors import NodError
from core.gmail.style import StyleLearner
from core.gmail.values import RunReport

log = logging.getLogger("nod.gmail")


class StyleRuns:
    def __init__(self, learner: StyleLearner) -> None:
        self._learner = learner
        self._tasks: dict[int, asyncio.Task[RunReport | None]] = {}

    def request(self, owner_id: int) -> asyncio.Task[RunReport | None]:
        """Start a run for the owner (or return the one already going)."""
        task = self._tasks.get(owner_id)
        if task is None or task.done():
            task = asyncio.create_task(self._guarded(owner_id), name=f"writing-style-{owner_id}")
            self._tasks[owner_id] = task
            task.add_done_callback(lambda done: self._forget(owner_id, done))
        return task

    def running(self, owner_id: int) -> bool:
        task = self._tasks.get(owner_id)
        return task is not None and not task.done()

    async def wait(self, owner_id: int) -> RunReport | None:
        """The report of the run going on for the owner, once it ends; None when none is going."""
        task = self._tasks.get(owner_id)
        return await asyncio.shield(task) if task is not None else None

    async def run_now(self, owner_id: int) -> RunReport | None:
        return await asyncio.shield(self.request(owner_id))

    async def run_due(self, owner_id: int) -> RunReport | None:
        """The weekly run, when it is due (see ``StyleLearner.due``); None when it is not."""
        if not await self._learner.due(owner_id):
            return None
        return await self.run_now(owner_id)

    async def cancel(self, owner_id: int) -> None:
        """Stop the owner's run, if one is going (Gmail was disconnected: nothing more is read or saved)."""
        task = self._tasks.get(owner_id)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _forget(self, owner_id: int, done: asyncio.Task[RunReport | None]) -> None:
        if self._tasks.get(owner_id) is done:
            del self._tasks[owner_id]

    async def _guarded(self, owner_id: int) -> RunReport | None:
        try:
            return await self._learner.run(owner_id)
        except NodError as exc:  # not connected any more, the database away: said once, in the log
            log.warning("writing_style_run_failed owner=%s error=%s", owner_id, type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - a background run must not die unread
            # where, not what: an exception's message could carry a piece of a mail
            frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            where = f"{frame.filename}:{frame.lineno}" if frame else "?"
            log.error("writing_style_run_crashed owner=%s error=%s at=%s", owner_id, type(exc).__name__, where)
        return None
