"""One owner's memory out to its lossless JSON export and back in: what ``nod memory export
--json`` / ``import --json`` and the memory page's two buttons do, with one set of rules.

An import fills an owner whose memory is empty; an owner with notes, archive or skills is
refused unless the caller says ``replace_existing`` (the CLI's ``--replace``, the page's
"Replace my current memory" box). Either way the decision is made on the version it read
and the write is one compare-and-swap on that version: a note saved meanwhile (a chat turn,
the page, maintenance) makes the import refuse, never overwrite it. The owner's time zone
and settings follow once the memory is in, and the export's reminders and tasks are made
again from now (``core.memory.portable`` checks the file; this module writes it).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.clock import Clock
from core.errors import InvalidInput, StaleWrite
from core.memory import portable
from core.owner import Owner
from core.ports import MemoryStore, OwnerZones, Schedules
from core.schedules.model import Kind, Schedule
from core.schedules.runner import advance


@dataclass(frozen=True)
class Imported:
    """What an import brought in, and what it left out."""

    notes: int
    archived: int
    skills: int
    schedules_made: int
    schedules_past: int
    had_schedules: bool
    exported_from: str
    replaced: bool  # the owner had memory before, and it is gone

    def sentence(self, owner_name: str) -> str:
        made = (f", {self.schedules_made} reminders and tasks"
                + (f" ({self.schedules_past} already past, left out)" if self.schedules_past else "")
                if self.had_schedules else "")
        source = f" (exported from {self.exported_from})" if self.exported_from != owner_name else ""
        return (f"Imported {self.notes} notes, {self.archived} archived and {self.skills} skills{made} into "
                f"{owner_name}{source}" + ("; what was there before is replaced." if self.replaced else "."))


async def export_text(owner: Owner, memory: MemoryStore, schedules: Schedules) -> str:
    """The owner's export as the file holds it (indented JSON, one trailing newline)."""
    stored = await memory.load(owner.id)
    coming = await schedules.active(owner.id)
    return portable.dumps(portable.export(owner, stored.document, stored.version, coming))


async def import_text(owner: Owner, text: str, replace_existing: bool, memory: MemoryStore, owners: OwnerZones,
                      schedules: Schedules, clock: Clock, how_to_replace: str = "add --replace to replace them") -> Imported:
    """Check ``text`` whole (one sentence on the first problem), then make it ``owner``'s memory.

    ``how_to_replace`` ends the refusal for an owner who has memory: the CLI's words or the page's."""
    incoming = portable.read(text)
    current = await memory.load(owner.id)
    if not portable.is_empty(current.document) and not replace_existing:
        doc = current.document
        raise InvalidInput(f"{owner.name} already has {len(doc.entries)} notes, {len(doc.archive)} archived and "
                           f"{len(doc.skills)} skills; nothing was imported ({how_to_replace}).")
    try:
        await memory.save(owner.id, incoming.memory, current.version)
    except StaleWrite:
        raise StaleWrite(f"{owner.name}'s memory changed while it was being imported; nothing was imported, "
                         "run the import again.") from None
    await owners.set_time_zone(owner.id, incoming.time_zone)
    await owners.update_settings(owner.id, lambda _now: incoming.settings)
    made, passed = await _schedules_again(owner.id, incoming, owners, schedules, clock)
    doc = incoming.memory
    return Imported(len(doc.entries), len(doc.archive), len(doc.skills), made, passed, bool(incoming.schedules),
                    incoming.exported_from, not portable.is_empty(current.document))


async def _schedules_again(owner_id: int, incoming: portable.Portable, owners: OwnerZones, schedules: Schedules,
                           clock: Clock) -> tuple[int, int]:
    """The export's reminders and tasks made again from now, in the owner's zone; ones the owner has
    already are not made twice. (made, left out because their only run has passed)."""
    owner, now = await owners.by_id(owner_id), clock.now()
    have = {(s.kind.value, s.text, s.start_local, s.repeat) for s in await schedules.active(owner_id)}
    made = passed = 0
    for one in incoming.schedules:
        if (one.kind, one.text, one.at, one.repeat) in have:
            continue
        step = advance(Schedule(0, owner_id, Kind(one.kind), one.text, one.at, one.repeat, None, now, None),
                       owner.time_zone, now)
        if step is None:
            passed += 1
            continue
        await schedules.create(owner_id, Kind(one.kind), one.text, step[1], one.repeat, step[0], now, None)
        made += 1
    return made, passed
