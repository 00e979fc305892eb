"""``nod memory export --json``, ``nod memory import --json`` and ``nod memory archive``.

An import restores one owner's memory from its JSON export with the rules the memory
page's import follows too (core.memory.transfer): it fills an owner whose memory is empty;
an owner with notes, archive or skills is refused unless the operator says ``--replace``;
a note saved meanwhile makes the import refuse, never overwrite it.

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
from core.errors import InvalidInput, NotFound
from core.memory import document as ops
from core.memory import transfer
from core.memory.codec import entry_to_json
from core.memory.values import MemoryDocument
from core.ports import Changed


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
    return (await transfer.export_text(owner, svc.memory, svc.schedules)).rstrip("\n")


async def import_json(svc: Services, owner_name: str, text: str, replace_existing: bool) -> str:
    owner = await svc.owners.by_name(owner_name)
    done = await transfer.import_text(owner, text, replace_existing, svc.memory, svc.owners, svc.schedules, svc.clock)
    return done.sentence(owner.name)


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

