"""Reflect: the memory model reads the owner's new messages and proposes inferred notes.

Batches of the owner's messages after the watermark, oldest first, until caught up; what
memory_learn may not read is passed over, a model failure leaves the batch for a later tick,
and the operations and the new watermark are one compare-and-swap from the batch's start, so
a batch applies once even when two workers reach it. Sizes and skips: docs/memory.md (How
maintenance works).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial

from core.agent.gateway import Gateway
from core.clock import Clock, model_time
from core.errors import ConfigError, ModelError
from core.maintenance.operations import Applied, Reflection, apply_operations
from core.memory.render import index_lines
from core.memory.values import MemoryDocument
from core.message import StoredMessage
from core.owner import Owner
from core.ports import Changed, MemoryRepository, Messages
from core.saving.grounding import Source
from core.saving.learn import usable

log = logging.getLogger("nod.maintenance")
BATCH = 40
MIN_AGE = timedelta(minutes=10)
MAX_FAILURES = 3  # the first try and two retries on later ticks
INSTRUCTIONS = """You keep a personal assistant's memory of its owner up to date from the owner's
own messages. Record what the owner says about their life, including what a request
reveals: people, places, possessions, events, plans, numbers, interests and preferences,
one fact per entry (op "add", path area/slug with areas about, preferences, people,
routines, lessons). An entry about an event starts with its date (YYYY-MM-DD), with words
like "yesterday" resolved from the message's sent time. Archive (op "archive") an
inferred entry only when a newer message replaces it or says it is wrong. Every operation
cites message ids and copies a short quote word for word from one of them; every name,
number, e-mail address and link in an entry must be in the messages it cites. Every add says
whether it is sensitive: health, religion, politics, sexuality, gender identity,
ethnicity, immigration status or criminal history. Never record card numbers, passwords,
keys or links. Return {"operations": []} when nothing is worth keeping."""


@dataclass(frozen=True)
class ReflectReport:
    messages: int = 0
    added: int = 0
    evidenced: int = 0
    archived: int = 0
    dropped: int = 0
    failed: bool = False
    ungrounded: int = 0  # adds whose text names what no cited message holds

    def plus(self, batch: int, applied: Applied) -> ReflectReport:
        return ReflectReport(self.messages + batch, self.added + applied.added, self.evidenced + applied.evidenced,
                             self.archived + applied.archived, self.dropped + applied.dropped, self.failed,
                             self.ungrounded + applied.ungrounded)


def reflectable(message: StoredMessage) -> bool:
    """What memory_learn may read, minus attachments (reflection infers; a caption alone is thin)."""
    return usable(message) and not message.attachment


class Reflector:
    def __init__(self, gateway: Gateway, messages: Messages, memory: MemoryRepository, clock: Clock) -> None:
        self._gateway = gateway
        self._messages = messages
        self._memory = memory
        self._clock = clock

    async def reflect(self, owner: Owner) -> ReflectReport:
        report = ReflectReport()
        while True:
            doc = (await self._memory.load(owner.id)).document
            start = doc.maintenance.watermark
            batch = await self._messages.owner_messages_after(owner.id, start, BATCH, self._clock.now() - MIN_AGE)
            if not batch:
                return report
            readable = {m.id: Source(m.text, m.sent_at.astimezone(owner.zone).date()) for m in batch if reflectable(m)}
            try:
                operations = await self._ask(owner, doc, [m for m in batch if m.id in readable]) if readable else Reflection(operations=[])
            except (ModelError, ConfigError) as exc:
                await self._failed(owner, start, batch[-1].id, exc)
                return replace(report, failed=True)
            this_batch = partial(self._apply, start=start, operations=operations, readable=readable, end=batch[-1].id, owner=owner)
            saved = await self._memory.apply(owner.id, this_batch)
            if saved.result is None:  # another writer already applied this batch
                continue
            report = report.plus(len(batch), saved.result)

    def _apply(self, doc: MemoryDocument, start: int, operations: Reflection, readable: dict[int, Source],
               end: int, owner: Owner) -> Changed[Applied | None]:
        if doc.maintenance.watermark != start:
            return Changed(doc, None)
        applied = apply_operations(doc, operations, readable, end, self._clock.now(), owner.settings.remember_sensitive)
        return Changed(applied.document, applied)

    async def _ask(self, owner: Owner, doc: MemoryDocument, batch: list[StoredMessage]) -> Reflection:
        zone = owner.zone
        payload = {
            "memory_index": index_lines(doc),
            "messages": [{"id": m.id, "sent_at": model_time(m.sent_at, zone), "text": m.text}
                         for m in batch],
        }
        prompt = [{"role": "system", "content": INSTRUCTIONS},
                  {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}]
        return await self._gateway.ask(owner.id, Reflection, prompt)

    async def _failed(self, owner: Owner, start: int, end: int, error: Exception) -> None:
        def count(doc: MemoryDocument) -> MemoryDocument:
            if doc.maintenance.watermark != start:
                return doc
            failures = doc.maintenance.failures + 1
            if failures >= MAX_FAILURES:  # give up on this batch: move past it
                return replace(doc, maintenance=replace(doc.maintenance, watermark=end, failures=0))
            return replace(doc, maintenance=replace(doc.maintenance, failures=failures))

        log.warning("reflect_failed owner=%s batch_start=%s error=%s", owner.id, start, type(error).__name__)
        await self._memory.update(owner.id, count)
