"""What a channel does with ``FrontDoorResult`` after it acknowledged the message: written once for every channel.

A command's answer is sent, and a digest (which may wait for the memory model) computed and
sent, each from a task of its own so the webhook answers at once; the channel only says how
a text reaches an address (``send``, which logs its own failures). ``stop`` cancels what is
still running when the channel stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

from core.inbox.front import FrontDoorResult

log = logging.getLogger("nod.inbox")
Address = TypeVar("Address")


class Answering(Generic[Address]):
    def __init__(self, channel: str, send: Callable[[Address, str], Coroutine[Any, Any, None]]) -> None:
        self._channel = channel
        self._send = send
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the webhook, kept until it ends (a task nobody holds may be collected)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def follow_up(self, handled: FrontDoorResult, to: Address) -> None:
        if handled.answer:
            self.spawn(self._send(to, handled.answer))
        if handled.later is not None:
            self.spawn(self._send_later(to, handled.later))

    def send(self, to: Address, text: str) -> None:
        self.spawn(self._send(to, text))

    async def _send_later(self, to: Address, answer: Callable[[], Awaitable[str]]) -> None:
        try:
            text = await answer()
        except Exception as exc:  # noqa: BLE001 - a digest that failed on the database: logged, not sent
            log.warning("%s_answer_failed error=%s", self._channel, type(exc).__name__)
            return
        await self._send(to, text)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks))
