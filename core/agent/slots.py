"""A bound on how many turns do server work at once — not on how many wait for a model.

Waiting costs nothing, so any number of turns may wait; Nod's own work is CPU, so only a few
run it at once, which keeps the event loop free to acknowledge webhooks. A turn hands its slot
back while it waits elsewhere (``waiting_elsewhere``), and storing an arriving message
(``inbound``) goes before any turn. Why, under a burst: docs/turn.md (Load).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
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
        self._free = size
        self._returning: deque[asyncio.Future[None]] = deque()  # back from a model: first
        self._new: deque[asyncio.Future[None]] = deque()
        self._arriving = 0

    @property
    def free(self) -> int:
        """How many slots no turn holds now (for tests and diagnostics)."""
        return self._free

    @property
    def waiting(self) -> int:
        """How many turns are queued for a slot (for tests and diagnostics)."""
        return sum(not w.done() for w in (*self._returning, *self._new))

    @asynccontextmanager
    async def inbound(self) -> AsyncIterator[None]:
        """Mark the body as storing an arriving message: turns wait to take slots meanwhile."""
        self._arriving += 1
        try:
            yield
        finally:
            self._arriving -= 1
            self._dispatch()

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold a slot for the body; a model wait inside gives it back meanwhile."""
        holding = _Holding(self)
        token = _holding.set(holding)
        try:
            await self._acquire(returning=False)
            holding.held = True
            yield
        finally:
            if holding.held:
                self._release()
            _holding.reset(token)

    async def _acquire(self, returning: bool) -> None:
        """A slot, when no message is being stored; a turn back from its model goes first,
        so under load turns finish in the order they started instead of all at the end."""
        if self._free > 0 and self._arriving == 0 and not self._returning and not self._new:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._returning if returning else self._new
        queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot in the same instant: pass it on
            with suppress(ValueError):
                queue.remove(waiter)
            raise

    def _release(self) -> None:
        self._free += 1
        self._dispatch()

    def _dispatch(self) -> None:
        while self._free > 0 and self._arriving == 0:
            waiter = self._next_waiter()
            if waiter is None:
                return
            self._free -= 1
            waiter.set_result(None)

    def _next_waiter(self) -> asyncio.Future[None] | None:
        for queue in (self._returning, self._new):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    return waiter
        return None

    async def _give_back(self, holding: _Holding) -> None:
        self._release()
        holding.held = False

    async def _take_again(self, holding: _Holding) -> None:
        await self._acquire(returning=True)  # cancelled here: not held, so nothing to release
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
