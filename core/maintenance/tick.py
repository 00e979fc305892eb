"""One maintenance tick: for each owner whose saving is on, repair, then reflect.

An owner's tick runs under a per-owner try-lock, so two workers never do the same owner's
work at once, and one owner's failure is logged while the others go on. ``next_tick`` is
the pure part of the hourly schedule; the loop that sleeps until it lives in ``bot/run.py``.
What a tick does and skips: docs/memory.md (How maintenance works).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from core.agent.spending import Spending
from core.clock import Clock
from core.gmail.runs import StyleRuns
from core.maintenance.reflect import Reflector, ReflectReport
from core.maintenance.repair import repair
from core.memory.values import MemoryDocument
from core.owner import Owner
from core.ports import Changed, MemoryRepository, OwnerLocks, Owners

log = logging.getLogger("nod.maintenance")
MINUTE = 7



@dataclass(frozen=True)
class OwnerTick:
    owner: str
    repaired: int = 0
    reflect: ReflectReport | None = None
    skipped: str | None = None
    writing_style: str | None = None  # the weekly run's sentence, when it ran

    def line(self) -> str:
        if self.skipped:
            done = f"repair archived {self.repaired}; " if self.repaired else ""
            return f"{self.owner}: {done}skipped ({self.skipped})"
        parts = [f"repair archived {self.repaired}"]
        if self.reflect is None:
            parts.append("no memory model, reflection skipped")
        else:
            r = self.reflect
            parts.append(f"reflected {r.messages} messages: {r.added} added, {r.evidenced} confirmed by evidence, "
                         f"{r.archived} archived, {r.dropped} dropped"
                         + (f", {r.ungrounded} not in the owner's words" if r.ungrounded else "")
                         + (", the model failed" if r.failed else ""))
        if self.writing_style:
            parts.append(f"writing style: {self.writing_style}")
        return f"{self.owner}: " + "; ".join(parts)


def next_tick(now: datetime) -> datetime:
    """The next minute-7 UTC after ``now``."""
    utc = now.astimezone(UTC)
    candidate = utc.replace(minute=MINUTE, second=0, microsecond=0)
    return candidate if candidate > utc else candidate + timedelta(hours=1)


class MaintenanceJob:
    def __init__(self, owners: Owners, memory: MemoryRepository, reflector: Reflector | None,
                 locks: OwnerLocks, clock: Clock, spending: Spending | None = None,
                 writing_style: StyleRuns | None = None) -> None:
        self._spending = spending
        self._writing_style = writing_style
        self._owners = owners
        self._memory = memory
        self._reflector = reflector
        self._locks = locks
        self._clock = clock

    async def run(self, owner_name: str | None = None) -> list[OwnerTick]:
        if owner_name is not None:
            chosen = [await self._owners.by_name(owner_name)]
        else:
            chosen = [owner for owner, _ in await self._owners.all()]
        results = []
        for owner in chosen:
            try:
                results.append(await self._one(owner))
            except Exception as exc:  # noqa: BLE001 - one owner's failure must not stop the others
                log.exception("maintenance_failed owner=%s", owner.id)
                results.append(OwnerTick(owner.name, skipped=f"failed: {type(exc).__name__}"))
        return results

    def _repaired(self, doc: MemoryDocument) -> Changed[int]:
        result = repair(doc, self._clock.now())
        return Changed(result.document, len(result.archived))

    async def _one(self, owner: Owner) -> OwnerTick:
        if not owner.settings.saving_enabled:
            return OwnerTick(owner.name, skipped="saving is off")
        async with self._locks.hold(owner.id) as held:
            if not held:
                return OwnerTick(owner.name, skipped="another worker is on it")
            repaired = (await self._memory.apply(owner.id, self._repaired)).result
            if self._spending is not None and not await self._spending.allows_optional_calls(owner):
                return OwnerTick(owner.name, repaired, skipped="spending limit reached; repair only")
            report = await self._reflector.reflect(owner) if self._reflector else None
            style = await self._writing_style.run_due(owner.id) if self._writing_style else None
        tick = OwnerTick(owner.name, repaired, report, writing_style=style.outcome if style else None)
        log.info("maintenance_tick %s", tick.line())
        return tick
