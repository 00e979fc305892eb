"""Which recent messages a turn's prompt shows: a window that advances in blocks.

Providers cache a request's longest unchanged beginning. A window of the last N messages
slides by one exchange every turn, so everything after the system message differs each
time and the cache only ever covers the instructions. Here the window's first message
stays put while the window grows from ``least`` to ``least + block - 1`` messages, then
jumps ahead by ``block``: nine turns in ten reuse the whole earlier conversation.

The start is computed from how many messages the thread holds, not remembered, so several workers answering one owner choose the same window.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.message import StoredMessage
from core.ports import Messages


@dataclass(frozen=True)
class RecentWindow:
    least: int = 20  # never fewer earlier messages than this, when the thread has them
    block: int = 10  # the start moves this many messages at a time

    def size(self, earlier: int) -> int:
        """How many of the ``earlier`` messages to show: between least and least + block - 1."""
        if earlier <= self.least:
            return earlier
        return self.least + (earlier - self.least) % self.block

    async def messages(self, store: Messages, thread_id: int, request: StoredMessage) -> list[StoredMessage]:
        """The window, oldest first, without the request (which the prompt puts last). A reply
        stored after the request (another worker's turn it waited for) is part of it."""
        others = max(await store.thread_count(thread_id) - 1, 0)
        size = self.size(others)
        shown = [m for m in await store.thread_tail(thread_id, size + 1) if m.id != request.id]
        return shown[-size:] if size else []
