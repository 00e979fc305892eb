"""``nod memory export --json``, ``nod memory import --json`` and ``nod memory archive``.

An import restores one owner's memory from its JSON export (core.memory.portable). It fills
an owner whose memory is empty; an owner with notes, archive or skills is refused unless the
operator says ``--replace``. Either way the decision is made on the version it read and the
write is one compare-and-swap on that version: a note saved meanwhile (a chat turn, the
page, maintenance) makes the import refuse, never overwrite it. The owner's time zone and
settings follow once the memory is in.

The archive commands list what was let go and bring a version back with the same pure
function the memory page uses (``restore_version``: what stands at the path now is archived,
so nothing is lost either way).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from bot.cli_parser import STDIN
from bot.wiring import Services
from core.errors import InvalidInput, NotFound, StaleWrite
from core.memory import document as ops
from core.memory import portable
from core.memory.codec import entry_to_json
from core.memory.model import MemoryDocument
from core.ports import Changed
from core.schedules.model import Kind, Schedule
from core.schedules.runner import advance


def read_input(path: Path, stdin: TextIO) -> str:
    """FILE's text, or standard input's for ``-``; one sentence when it cannot be read as UTF-8."""
    try:
        if str(path) == STDIN:
            return stdin.read()
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Cannot read {'standard input' if str(path) == STDIN else path} as UTF-8 text.") from exc


async def export_json(svc: Services, owner_name: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    stored = await svc.memory.load(owner.id)
    coming = await svc.schedules.active(owner.id)
    return portable.dumps(portable.export(owner, stored.document, stored.version, coming)).rstrip("\n")


async def import_json(svc: Services, owner_name: str, text: str, replace_existing: bool) -> str:
    owner = await svc.owners.by_name(owner_name)
    incoming = portable.read(text)
    current = await svc.memory.load(owner.id)
    if not portable.is_empty(current.document) and not replace_existing:
        doc = current.document
        raise InvalidInput(f"{owner.name} already has {len(doc.entries)} notes, {len(doc.archive)} archived and "
                           f"{len(doc.skills)} skills; nothing was imported (add --replace to replace them).")
    try:
        await svc.memory.save(owner.id, incoming.memory, current.version)
    except StaleWrite:
        raise StaleWrite(f"{owner.name}'s memory changed while it was being imported; nothing was imported, "
                         "run the import again.") from None
    await svc.owners.set_time_zone(owner.id, incoming.time_zone)
    await svc.owners.update_settings(owner.id, lambda _now: incoming.settings)
    made, passed = await _schedules_again(svc, owner.id, incoming)
    doc = incoming.memory
    schedules = f", {made} reminders and tasks" + (f" ({passed} already past, left out)" if passed else "") \
        if incoming.schedules else ""
    return (f"Imported {len(doc.entries)} notes, {len(doc.archive)} archived and {len(doc.skills)} skills{schedules} into "
            f"{owner.name}" + (f" (exported from {incoming.exported_from})" if incoming.exported_from != owner.name else "")
            + ("; what was there before is replaced." if not portable.is_empty(current.document) else "."))


async def _schedules_again(svc: Services, owner_id: int, incoming: portable.Portable) -> tuple[int, int]:
    """The export's reminders and tasks made again from now, in the owner's zone; ones the owner has
    already are not made twice. (made, left out because their only run has passed)."""
    owner, now = await svc.owners.by_id(owner_id), svc.clock.now()
    have = {(s.kind.value, s.text, s.start_local, s.repeat) for s in await svc.schedules.active(owner_id)}
    made = passed = 0
    for one in incoming.schedules:
        if (one.kind, one.text, one.at, one.repeat) in have:
            continue
        step = advance(Schedule(0, owner_id, Kind(one.kind), one.text, one.at, one.repeat, None, now, None),
                       owner.time_zone, now)
        if step is None:
            passed += 1
            continue
        await svc.schedules.create(owner_id, Kind(one.kind), one.text, step[1], one.repeat, step[0], now, None)
        made += 1
    return made, passed


def _record(number: int, doc: MemoryDocument) -> dict[str, Any]:
    record = doc.archive[number - 1]
    return {"number": number, "path": record.entry.path, "reason": record.reason.value,
            "archived_at": record.archived_at.isoformat(), "replaced_by": record.replaced_by,
            "entry": entry_to_json(record.entry)}


async def archive_list(svc: Services, owner_name: str, as_json: bool) -> str:
    """Archived notes, oldest first, numbered from 1 (the number ``restore`` takes)."""
    owner = await svc.owners.by_name(owner_name)
    doc = (await svc.memory.load(owner.id)).document
    records = [_record(n, doc) for n in range(1, len(doc.archive) + 1)]
    if as_json:
        return json.dumps(records, ensure_ascii=False, indent=2)
    if not records:
        return f"{owner.name} has no archived notes."
    lines = []
    for r in records:
        by = f" by {r['replaced_by']}" if r["replaced_by"] else ""
        lines.append(f"{r['number']}\t{r['path']}\t{r['reason']}{by}, {r['archived_at'][:16].replace('T', ' ')}\t"
                     f"{r['entry']['text']}")
    return "\n".join(lines)


def _index_of(doc: MemoryDocument, which: str) -> int:
    """The archive index ``which`` names: a number from ``archive list``, or a path's newest version."""
    if which.strip().isdigit():
        number = int(which)
        if not 1 <= number <= len(doc.archive):
            raise NotFound(f"There is no archived note number {number}; `nod memory archive list` shows them.")
        return number - 1
    for index in range(len(doc.archive) - 1, -1, -1):
        if doc.archive[index].entry.path == which.strip():
            return index
    raise NotFound(f"No archived note at {which}; `nod memory archive list` shows them.")


async def archive_restore(svc: Services, owner_name: str, which: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    now = svc.clock.now()

    def restoring(doc: MemoryDocument) -> Changed[tuple[str, bool]]:
        index = _index_of(doc, which)
        path = doc.archive[index].entry.path
        return Changed(ops.restore_version(doc, index, now), (path, doc.get(path) is not None))

    path, replaced = (await svc.memory.apply(owner.id, restoring)).result
    return f"Restored {path}" + ("; the note that stood there is archived." if replaced else ".")

