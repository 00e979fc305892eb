"""A bound on how many turns do server work at once — not on how many wait for a model.

A turn alternates between Nod's own work (reading the database, building the prompt,
storing the reply) and waiting for the model. Waiting costs nothing, so any number of
turns may wait; the work is CPU, so only a few run it at once. That keeps the event loop
free for what must stay fast — acknowledging webhooks — even when a burst of messages
meets a model that answers at once: the burst is accepted, and the answers go out as
fast as the CPU allows. The gateway hands the slot back while it waits for a model
(``waiting_elsewhere``) and takes it again, in arrival order, when the answer is there.

Storing an arriving message has priority: while one is being stored (``inbound``), no
turn takes a slot, so a turn's work fills the gaps between arrivals instead of queueing
in front of them. A burst is therefore stored first and answered right after; nothing is
dropped, and a turn already working finishes its current stretch undisturbed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass

DEFAULT_SLOTS = 2  # measured: 2 keeps acknowledgements fastest at 200 msg/s; 1 starves the turns


@dataclass
class _Holding:
    slots: WorkSlots
    held: bool = False


_holding: ContextVar[_Holding | None] = ContextVar("nod_work_slot", default=None)


class WorkSlots:
    def __init__(self, size: int = DEFAULT_SLOTS) -> None:
        self._semaphore = asyncio.Semaphore(size)
        self._arriving = 0
        self._quiet = asyncio.Event()
        self._quiet.set()

    @asynccontextmanager
    async def inbound(self) -> AsyncIterator[None]:
        """Mark the body as storing an arriving message: turns wait to take slots meanwhile."""
        self._arriving += 1
        self._quiet.clear()
        try:
            yield
        finally:
            self._arriving -= 1
            if self._arriving == 0:
                self._quiet.set()

    async def _acquire(self) -> None:
        while True:
            await self._quiet.wait()
            await self._semaphore.acquire()
            if self._quiet.is_set():
                return
            self._semaphore.release()  # a message arrived while this turn queued: let it in first

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold a slot for the body; a model wait inside gives it back meanwhile."""
        holding = _Holding(self)
        token = _holding.set(holding)
        try:
            await self._acquire()
            holding.held = True
            yield
        finally:
            if holding.held:
                self._semaphore.release()
            _holding.reset(token)

    async def _give_back(self, holding: _Holding) -> None:
        self._semaphore.release()
        holding.held = False

    async def _take_again(self, holding: _Holding) -> None:
        await self._acquire()  # cancelled here: not held, so nothing to release
        holding.held = True


@asynccontextmanager
async def waiting_elsewhere() -> AsyncIterator[None]:
    """While the body waits on something outside Nod, let another turn work."""
    holding = _holding.get()
    if holding is None or not holding.held:
        yield
        return
    await holding.slots._give_back(holding)
    yield  # cancelled (``/stop``, a newer message): leave without queueing for a slot again
    await holding.slots._take_again(holding)
