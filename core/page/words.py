"""The memory page's words for what the document stores as codes: times, archive reasons, capacity.

An owner reads "2 Nov, 13:55" in their own time zone (the year only when it is not this
year), "Replaced by “Job: senior designer”" instead of ``replaced``, and how full their
memory is against the limits the specification sets (256 KiB, 40 skills) before a save is
refused, not after. Everything here is a pure function of the document and a clock's now.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from core.memory.limits import MAX_DOCUMENT_BYTES
from core.memory.values import AREA_TITLES, ArchivedRecord, ArchiveReason, MemoryDocument
from core.skills.learned import MAX_SKILLS

WARN_AT = 0.8  # the meter warns from 80 % of the document, or 36 of 40 skills
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_QUOTE_CHARS = 120


def local_time(moment: datetime, zone: ZoneInfo, now: datetime) -> str:
    """``2 Nov, 13:55`` in the owner's zone; ``2 Nov 2025, 13:55`` when it is another year."""
    here = moment.astimezone(zone)
    year = "" if here.year == now.astimezone(zone).year else f" {here.year}"
    return f"{here.day} {_MONTHS[here.month - 1]}{year}, {here:%H:%M}"


def day(value: date) -> str:
    """``30 Jun 2027``: a date the owner set, always with its year."""
    return f"{value.day} {_MONTHS[value.month - 1]} {value.year}"


def short(text: str) -> str:
    """A note's text cut to one line of at most 120 characters, for a sentence that names it."""
    line = " ".join(text.split())
    return line if len(line) <= _QUOTE_CHARS else line[: _QUOTE_CHARS - 1].rstrip() + "…"


def why_archived(record: ArchivedRecord, doc: MemoryDocument) -> str:
    """Why a version was let go, in words, with the note that took its place when there is one."""
    by = doc.get(record.replaced_by) if record.replaced_by else None
    named = f"“{short(by.text)}”" if by is not None else None
    if record.reason is ArchiveReason.REPLACED:
        if named:
            return f"Replaced by {named}" + (" (a newer version)" if record.replaced_by == record.entry.path else "")
        return "Replaced by a note that is no longer here" if record.replaced_by else "Replaced by a newer note"
    if record.reason is ArchiveReason.MERGED:
        return f"Merged into {named}" if named else "Merged into another note"
    if record.reason is ArchiveReason.DUPLICATE:
        return f"The same as {named}" if named else "The same as another note"
    if record.reason is ArchiveReason.EXPIRED:
        return "Its forget-after date passed"
    if record.reason is ArchiveReason.STALE:
        return "Mentioned once, and not again for 60 days"
    return "A later message of yours said it was no longer true"


def where(path: str) -> str:
    """``about/job`` as the page says it: ``About you › job``."""
    area, _, slug = path.partition("/")
    return f"{AREA_TITLES.get(area, area)} › {slug}"


def capacity(doc: MemoryDocument, size: int) -> dict[str, Any]:
    """How full the memory is: bytes of 256 KiB, notes, skills of 40, and a warning before it is full."""
    share = size / MAX_DOCUMENT_BYTES
    warnings = []
    if share >= WARN_AT:
        warnings.append(f"Memory is {share:.0%} full. When it is full, the oldest let-go versions are dropped first, "
                        "then new notes are refused: forget what you no longer need.")
    if len(doc.skills) >= MAX_SKILLS * 0.9:
        warnings.append(f"{len(doc.skills)} of {MAX_SKILLS} skills: a new one drops the one used least recently "
                        "that you have not edited.")
    return {
        "bytes": size, "max_bytes": MAX_DOCUMENT_BYTES, "percent": min(100, round(share * 100)),
        "used": _kb(size), "limit": _kb(MAX_DOCUMENT_BYTES), "notes": len(doc.entries), "archived": len(doc.archive),
        "skills": len(doc.skills), "max_skills": MAX_SKILLS, "warnings": warnings,
    }


def _kb(size: int) -> str:
    kb = size / 1024
    return f"{kb:.1f} KB" if kb < 10 else f"{kb:.0f} KB"
