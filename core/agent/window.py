"""Which recent messages a turn's prompt shows: a window whose start rarely moves.

Providers cache a request's longest unchanged beginning, and a window of the last N messages
slides every turn; this one starts at an anchor (an id that is a multiple of ``block``) and
keeps it until a newer anchor has ``least`` messages after it. The anchor is read from the
messages, never counted or remembered, so every worker picks the same window. Why: docs/turn.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.message import StoredMessage
from core.ports import Messages


@dataclass(frozen=True)
class RecentWindow:
    least: int = 20  # never fewer earlier messages than this, when the thread has them
    block: int = 10  # anchors are ids that are multiples of this

    def chosen(self, tail: list[StoredMessage]) -> list[StoredMessage]:
        """The window within ``tail`` (oldest first): from the newest anchor that has at
        least ``least`` messages after it, else the last ``least + block``."""
        for start in range(len(tail) - self.least, -1, -1):
            if tail[start].id % self.block == 0:
                return tail[start:]
        return tail[-(self.least + self.block):]

    async def messages(self, store: Messages, thread_id: int, request: StoredMessage) -> list[StoredMessage]:
        """The window, oldest first, without the request (which the prompt puts last). A reply
        stored after the request (another worker's turn it waited for) is part of it."""
        reach = self.least + 2 * self.block
        tail = [m for m in await store.thread_tail(thread_id, reach + 1) if m.id != request.id][-reach:]
        return self.chosen(tail)
