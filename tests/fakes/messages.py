"""In-memory fakes of the message ports and of the unit of work (``core.ports``).

``MemoryMessages`` keeps the conversation, the requests awaiting their answers and the
outbox in dicts. ``MemoryUnitOfWork`` gives each unit of work a draft of them and, when its
block ends, puts what the draft changed in place with no await in between: a reader never
sees part of it, and a block that raises leaves nothing behind. One unit of work at a time,
as SQLite has one writer. ``tests/contract`` proves they behave as the stores do.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from core.message import Appended, Edited, Message, Owed, Role, StoredMessage
from core.schedules.model import DueRun


@dataclass
class MemoryMessages:
    rows: dict[int, StoredMessage] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    thread: dict[int, int] = field(default_factory=dict)
    outbox: dict[int, bool] = field(default_factory=dict)  # owed reply → unprompted

    def draft(self) -> MemoryMessages:
        """A copy a unit of work writes to (ids still drawn from this one's counter)."""
        return MemoryMessages(dict(self.rows), self._ids, dict(self.thread), dict(self.outbox))

    def adopt(self, draft: MemoryMessages, base: MemoryMessages) -> None:
        """What ``draft`` changed since ``base`` (both drafts of this one), put in place at once."""
        self.rows.update({key: row for key, row in draft.rows.items() if base.rows.get(key) is not row})
        self.thread.update({key: thread for key, thread in draft.thread.items() if base.thread.get(key) != thread})
        for key in base.outbox.keys() - draft.outbox.keys():
            self.outbox.pop(key, None)
        self.outbox.update({key: owed for key, owed in draft.outbox.items() if key not in base.outbox})

    async def append(self, message: Message) -> Appended:
        for row in self.rows.values():
            if message.external_id is not None and (row.owner_id, row.channel, row.external_id) == (
                    message.owner_id, message.channel, message.external_id):
                return Appended(row, created=False)
        fields = {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}
        stored = StoredMessage(**fields, id=next(self._ids), thread_id=await self.active_thread(message.owner_id))
        self.rows[stored.id] = stored
        return Appended(stored, created=True)

    async def pending_voice(self, owner_id: int, up_to: int) -> list[StoredMessage]:
        return [r for r in sorted(self.rows.values(), key=lambda r: r.id)
                if r.owner_id == owner_id and r.awaiting and r.id <= up_to and r.voice_note is not None]

    async def drop_voice(self, note_id: int) -> None:
        self.rows[note_id] = replace(self.rows[note_id], voice_note=None)

    async def pending_media(self, owner_id: int, up_to: int) -> list[StoredMessage]:
        return [r for r in sorted(self.rows.values(), key=lambda r: r.id)
                if r.owner_id == owner_id and r.awaiting and r.id <= up_to and r.media is not None]

    async def edit(self, owner_id: int, channel: str, platform_id: str, text_: str, edited_at: datetime) -> Edited | None:
        found = next((r for r in self.rows.values() if (r.owner_id, r.channel, r.platform_id) == (owner_id, channel, platform_id)), None)
        if found is None:
            return None
        edited = found.edited(text_)
        if edited.text == found.text:
            return Edited(found, changed=False)
        self.rows[found.id] = edited
        return Edited(self.rows[found.id], changed=True)

    async def claim(self, request_id: int, owner_id: int) -> bool:
        if not await self.is_awaiting(request_id):
            return False
        await self.settle(owner_id, request_id)
        return True

    async def retire(self, message_id: int) -> None:
        self.rows[message_id] = replace(self.rows[message_id], voice_note=None, awaiting=False)

    async def owe(self, reply: StoredMessage, unprompted: bool = False) -> None:
        self.outbox[reply.id] = unprompted

    async def delivered(self, reply_id: int) -> bool:
        return self.outbox.pop(reply_id, None) is not None

    async def undelivered(self, stored_before: datetime, channels: Collection[str], limit: int = 100) -> list[Owed]:
        owed = sorted((self.rows[i] for i in self.outbox), key=lambda r: (r.sent_at, r.id))  # stored at the reply's time
        return [Owed(r, self.outbox[r.id]) for r in owed if r.sent_at < stored_before and r.channel in channels][:limit]

    async def newest_awaiting(self, owner_id: int) -> StoredMessage | None:
        waiting = [r for r in self.rows.values() if r.owner_id == owner_id and r.awaiting]
        return max(waiting, key=lambda r: r.id) if waiting else None

    async def settle(self, owner_id: int, up_to: int | None = None) -> None:
        for key, row in self.rows.items():
            if row.owner_id == owner_id and row.awaiting and (up_to is None or key <= up_to):
                self.rows[key] = replace(row, awaiting=False, voice_note=None)  # settled: not heard later

    async def is_awaiting(self, message_id: int) -> bool:
        return message_id in self.rows and self.rows[message_id].awaiting

    async def awaiting_requests(self) -> list[StoredMessage]:
        newest: dict[int, StoredMessage] = {}
        for row in sorted(self.rows.values(), key=lambda r: (r.owner_id, r.id)):
            if row.awaiting:
                newest[row.owner_id] = row
        return list(newest.values())

    async def get(self, message_id: int) -> StoredMessage | None:
        return self.rows.get(message_id)

    async def get_many(self, ids: Iterable[int]) -> Mapping[int, StoredMessage]:
        return {i: self.rows[i] for i in ids if i in self.rows}

    async def recent(self, owner_id: int, limit: int, role: Role | None = None) -> list[StoredMessage]:
        thread = await self.active_thread(owner_id)
        rows = [r for r in self.rows.values() if r.thread_id == thread and (role is None or r.role is role)]
        return sorted(rows, key=lambda r: r.id)[-limit:] if limit > 0 else []

    async def thread_tail(self, thread_id: int, limit: int) -> list[StoredMessage]:
        rows = sorted((r for r in self.rows.values() if r.thread_id == thread_id), key=lambda r: r.id)
        return rows[-limit:] if limit > 0 else []

    async def owner_messages_after(self, owner_id: int, after_id: int, limit: int,
                                   sent_before: datetime) -> list[StoredMessage]:
        rows = sorted((r for r in self.rows.values() if r.owner_id == owner_id and r.role is Role.OWNER
                       and r.id > after_id), key=lambda r: r.id)[:limit]
        return list(itertools.takewhile(lambda r: r.sent_at < sent_before, rows))

    async def active_thread(self, owner_id: int) -> int:
        return self.thread.setdefault(owner_id, owner_id * 1000)

    async def reset_thread(self, owner_id: int) -> int:
        await self.settle(owner_id)
        self.thread[owner_id] = await self.active_thread(owner_id) + 1
        return self.thread[owner_id]


@dataclass
class MemoryRuns:
    """Schedule runs by (schedule, due time): their status and the message each sent."""

    status: dict[tuple[int, datetime], str] = field(default_factory=dict)
    replies: dict[tuple[int, datetime], int] = field(default_factory=dict)

    def claimed(self, run: DueRun) -> None:
        """The run as ``Schedules.claim_due`` leaves it (the fakes have no schedules)."""
        self.status[(run.schedule.id, run.due_at)] = "claimed"

    async def mark_sent(self, run: DueRun) -> bool:
        key = (run.schedule.id, run.due_at)
        if self.status.get(key) != "claimed":
            return False
        self.status[key] = "sent"
        return True

    async def link_reply(self, run: DueRun, reply_id: int) -> None:
        self.replies[(run.schedule.id, run.due_at)] = reply_id


@dataclass(frozen=True)
class MemoryTransaction:
    draft: MemoryMessages
    runs: MemoryRuns

    @property
    def messages(self) -> MemoryMessages:
        return self.draft

    @property
    def requests(self) -> MemoryMessages:
        return self.draft

    @property
    def outbox(self) -> MemoryMessages:
        return self.draft


@dataclass
class MemoryUnitOfWork:
    messages: MemoryMessages
    runs: MemoryRuns = field(default_factory=MemoryRuns)
    _one_writer: asyncio.Lock = field(default_factory=asyncio.Lock)

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[MemoryTransaction]:
        async with self._one_writer:
            base, draft = self.messages.draft(), self.messages.draft()
            runs = MemoryRuns(dict(self.runs.status), dict(self.runs.replies))
            yield MemoryTransaction(draft, runs)
            self.messages.adopt(draft, base)  # no await from here: all of it lands at once
            self.runs.status.update(runs.status)
            self.runs.replies.update(runs.replies)
