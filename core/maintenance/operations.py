"""Reflection's proposed operations, checked and applied as one pure function.

The memory model proposes ``add`` (a new inferred entry) and ``archive`` (an inferred
entry a newer message replaces or says is wrong). The server applies only what holds:
every operation cites messages of this batch and one of them contains its verbatim quote
(NFC and whitespace folding); an add says whether it is sensitive — without the flag it is
invalid, and with it, it is dropped unless the owner turned on Remember sensitive topics;
no part of an add holds a secret; an add whose text matches an inferred entry adds
evidence to it instead (two messages make it observed); a stated entry is never changed
or archived; an add that would not fit in the document even with the archive trimmed is
skipped. The batch's watermark goes into the same document, so the operations and the
progress are one compare-and-swap write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from core.errors import MemoryFull, MemoryLimitError
from core.memory import document as ops
from core.memory.model import ArchiveReason, Evidence, MemoryDocument, Origin
from core.memory.quotes import quote_matches
from core.saving.notes import KINDS
from core.secrets import find_secret
from core.text import fact_key

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"operations": {"type": "array", "items": {"type": "object", "properties": {
        "op": {"type": "string", "enum": ["add", "archive"]},
        "path": {"type": "string"}, "text": {"type": "string"},
        "kind": {"type": ["string", "null"]}, "sensitive": {"type": "boolean"},
        "reason": {"type": "string", "enum": ["replaced", "wrong"]},
        "message_ids": {"type": "array", "items": {"type": "integer"}}, "quote": {"type": "string"},
    }, "required": ["op", "path", "message_ids", "quote"]}}},
    "required": ["operations"],
}


@dataclass(frozen=True)
class Applied:
    document: MemoryDocument
    added: int = 0
    evidenced: int = 0
    archived: int = 0
    dropped: int = 0


def _source(raw: Mapping[str, Any], batch: Mapping[int, str]) -> int | None:
    """The cited batch message that holds the quote, or None."""
    quote = raw.get("quote")
    ids = raw.get("message_ids")
    if not isinstance(quote, str) or not quote.strip() or not isinstance(ids, list):
        return None
    return next((i for i in ids if isinstance(i, int) and i in batch and quote_matches(quote, batch[i])), None)


def _fits(doc: MemoryDocument) -> bool:
    try:
        ops.fit(doc)
    except MemoryFull:
        return False
    return True


def _add(doc: MemoryDocument, raw: Mapping[str, Any], source: int, quote: str, now: datetime,
         remember_sensitive: bool) -> tuple[MemoryDocument, str]:
    sensitive = raw.get("sensitive")
    note = raw.get("text")
    if not isinstance(sensitive, bool) or not isinstance(note, str) or not note.strip():
        return doc, "dropped"
    if (sensitive and not remember_sensitive) or find_secret(note) or find_secret(quote):
        return doc, "dropped"
    evidence = Evidence(source, quote, now)
    same = next((e for e in doc.entries if fact_key(e.text) == fact_key(note)), None)
    if same is not None:
        if same.origin is not Origin.INFERRED:
            return doc, "dropped"  # a stated (or email) entry is never changed by reflection
        return ops.add_evidence(doc, same.path, evidence, now), "evidenced"
    path = str(raw.get("path") or "")
    kind = raw.get("kind") if raw.get("kind") in KINDS else None
    try:
        entry = ops.make_entry(path, note.strip(), origin=Origin.INFERRED, now=now, evidence=(evidence,),
                               kind=kind, sensitive=sensitive)
    except MemoryLimitError:
        return doc, "dropped"
    grown = ops.add_entry(doc, ops.at_free_path(doc, entry))
    return (grown, "added") if _fits(grown) else (doc, "dropped")


def _archive(doc: MemoryDocument, raw: Mapping[str, Any], now: datetime) -> tuple[MemoryDocument, str]:
    target = doc.get(str(raw.get("path") or ""))
    if target is None or target.origin is not Origin.INFERRED:
        return doc, "dropped"
    reason = ArchiveReason.WRONG if raw.get("reason") == "wrong" else ArchiveReason.REPLACED
    return ops.archive(doc, target.path, reason, now), "archived"


def apply_operations(
    doc: MemoryDocument, operations: Sequence[Any], batch: Mapping[int, str], watermark: int,
    now: datetime, remember_sensitive: bool,
) -> Applied:
    counts = {"added": 0, "evidenced": 0, "archived": 0, "dropped": 0}
    for raw in operations:
        source = _source(raw, batch) if isinstance(raw, dict) else None
        if source is None:
            counts["dropped"] += 1
            continue
        if raw.get("op") == "add":
            doc, outcome = _add(doc, raw, source, raw["quote"], now, remember_sensitive)
        elif raw.get("op") == "archive":
            doc, outcome = _archive(doc, raw, now)
        else:
            outcome = "dropped"
        counts[outcome] += 1
    progressed = replace(doc, maintenance=replace(doc.maintenance, watermark=watermark, failures=0))
    return Applied(progressed, **counts)
