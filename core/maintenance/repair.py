"""Repair: the model-free first step of every maintenance tick, as one pure function.

It archives, never deletes: entries past their expiry date; inferred entries with a
single source that nobody repeated for 60 days, when they are plans or carry no
structured details (a completed event or another structured fact is not stale for being
mentioned once; its expiry date still applies); and duplicates — entries whose text is
the same after folding case, accents and punctuation — where the stronger one stays
(stated over observed over tentative, then more evidence, then newer) and takes the
other's evidence. Stated entries are never archived as stale. Trimming the archive to fit
256 KiB happens when the document is saved (``fit_and_encode``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.memory import document as ops
from core.memory.values import ArchiveReason, Entry, MemoryDocument, Origin, Status
from core.text import fact_key

STALE_AFTER = timedelta(days=60)
_STRENGTH = {Status.STATED: 2, Status.OBSERVED: 1, Status.TENTATIVE: 0}


@dataclass(frozen=True)
class Repaired:
    document: MemoryDocument
    archived: tuple[tuple[str, ArchiveReason], ...]


def is_expired(entry: Entry, now: datetime) -> bool:
    return entry.expires is not None and entry.expires < now.date()


def is_stale(entry: Entry, now: datetime) -> bool:
    """An inferred plan, or an inferred entry without details, with one source, quiet for 60 days."""
    if entry.origin is not Origin.INFERRED or len(entry.source_ids) != 1:
        return False
    if entry.has_details and entry.kind != "plan":
        return False
    return now - entry.last_evidence_at >= STALE_AFTER


def _stronger(a: Entry, b: Entry) -> Entry:
    return a if _strength(a) >= _strength(b) else b


def _strength(entry: Entry) -> tuple[int, int, datetime]:
    return _STRENGTH[entry.status], len(entry.source_ids), entry.updated_at


def _merge_duplicates(doc: MemoryDocument, now: datetime, archived: list[tuple[str, ArchiveReason]]) -> MemoryDocument:
    groups: dict[str, list[Entry]] = {}
    for entry in doc.entries:
        groups.setdefault(fact_key(entry.text), []).append(entry)
    for same in groups.values():
        if len(same) < 2:
            continue
        keeper = same[0]
        for other in same[1:]:
            keeper = _stronger(keeper, other)
        for other in (e for e in same if e.path != keeper.path):
            for evidence in other.evidence:
                doc = ops.add_evidence(doc, keeper.path, evidence, now)
            doc = ops.archive(doc, other.path, ArchiveReason.DUPLICATE, now, replaced_by=keeper.path)
            archived.append((other.path, ArchiveReason.DUPLICATE))
    return doc


def _archive_where(
    doc: MemoryDocument, paths: Sequence[str], reason: ArchiveReason, now: datetime,
    archived: list[tuple[str, ArchiveReason]],
) -> MemoryDocument:
    for path in paths:
        doc = ops.archive(doc, path, reason, now)
        archived.append((path, reason))
    return doc


def repair(doc: MemoryDocument, now: datetime) -> Repaired:
    """Expired, then stale, then duplicates; the same document back when nothing applies."""
    archived: list[tuple[str, ArchiveReason]] = []
    doc = _archive_where(doc, [e.path for e in doc.entries if is_expired(e, now)], ArchiveReason.EXPIRED, now, archived)
    doc = _archive_where(doc, [e.path for e in doc.entries if is_stale(e, now)], ArchiveReason.STALE, now, archived)
    doc = _merge_duplicates(doc, now, archived)
    return Repaired(doc, tuple(archived))
