"""Reflection's proposed operations, checked and applied as one pure function.

The memory model proposes ``add`` (a new inferred entry) and ``archive`` (an inferred entry a
newer message replaces or says is wrong); the server applies only what holds — a cited quote,
the sensitive flag, no secret, the owner's words, a stated entry untouched, room in the
document — and writes the batch's watermark into the same document, so the operations and
the progress are one compare-and-swap. Each rule: docs/memory.md (How maintenance works).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import MemoryFull, MemoryLimitError
from core.memory import document as ops
from core.memory.quotes import quote_matches
from core.memory.values import ArchiveReason, Evidence, MemoryDocument, Origin
from core.saving.grounding import Source, find_ungrounded
from core.saving.notes import KINDS
from core.secrets import find_secret
from core.structured import Answer
from core.text import fact_key


class AddOperation(BaseModel):
    """A new inferred entry; it must say whether it is sensitive (without the flag it is invalid)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    op: Literal["add"]
    path: str
    text: str
    kind: Annotated[str | None, Field(json_schema_extra={"enum": [*KINDS, None]})] = None
    sensitive: bool
    message_ids: list[int]
    quote: str


class ArchiveOperation(BaseModel):
    """An inferred entry a newer message replaces or says is wrong."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    op: Literal["archive"]
    path: str
    reason: Literal["replaced", "wrong"] = "replaced"
    message_ids: list[int]
    quote: str


Operation = AddOperation | ArchiveOperation


class Reflection(Answer):
    purpose: ClassVar[str] = "reflect"
    max_tokens: ClassVar[int] = 3_000  # operations over a batch of 40 messages, each quoted
    ITEM_LISTS: ClassVar[tuple[str, ...]] = ("operations",)
    operations: list[Operation]


@dataclass(frozen=True)
class Applied:
    document: MemoryDocument
    added: int = 0
    evidenced: int = 0
    archived: int = 0
    dropped: int = 0
    ungrounded: int = 0


def _source(operation: Operation, batch: Mapping[int, Source]) -> int | None:
    """The cited batch message that holds the quote, or None."""
    if not operation.quote.strip():
        return None
    return next((i for i in operation.message_ids if i in batch and quote_matches(operation.quote, batch[i].text)), None)


def _fits(doc: MemoryDocument) -> bool:
    try:
        ops.fit(doc)
    except MemoryFull:
        return False
    return True


def _add(doc: MemoryDocument, add: AddOperation, source: int, batch: Mapping[int, Source], now: datetime,
         remember_sensitive: bool) -> tuple[MemoryDocument, str]:
    note = add.text
    if not note.strip() or (add.sensitive and not remember_sensitive) or find_secret(note) or find_secret(add.quote):
        return doc, "dropped"
    if find_ungrounded(note, [batch[i] for i in dict.fromkeys(add.message_ids) if i in batch]):
        return doc, "ungrounded"
    evidence = Evidence(source, add.quote, now)
    same = next((e for e in doc.entries if fact_key(e.text) == fact_key(note)), None)
    if same is not None:
        if same.origin is not Origin.INFERRED:
            return doc, "dropped"  # a stated (or email) entry is never changed by reflection
        return ops.add_evidence(doc, same.path, evidence, now), "evidenced"
    kind = add.kind if add.kind in KINDS else None
    try:
        entry = ops.make_entry(add.path, note.strip(), origin=Origin.INFERRED, now=now, evidence=(evidence,),
                               kind=kind, sensitive=add.sensitive)
    except MemoryLimitError:
        return doc, "dropped"
    grown = ops.add_entry(doc, ops.at_free_path(doc, entry))
    return (grown, "added") if _fits(grown) else (doc, "dropped")


def _archive(doc: MemoryDocument, archive: ArchiveOperation, now: datetime) -> tuple[MemoryDocument, str]:
    target = doc.get(archive.path)
    if target is None or target.origin is not Origin.INFERRED:
        return doc, "dropped"
    reason = ArchiveReason.WRONG if archive.reason == "wrong" else ArchiveReason.REPLACED
    return ops.archive(doc, target.path, reason, now), "archived"


def apply_operations(
    doc: MemoryDocument, reflection: Reflection, batch: Mapping[int, Source], watermark: int,
    now: datetime, remember_sensitive: bool,
) -> Applied:
    counts = {"added": 0, "evidenced": 0, "archived": 0, "dropped": reflection.dropped, "ungrounded": 0}
    for operation in reflection.operations:
        source = _source(operation, batch)
        if source is None:
            outcome = "dropped"
        elif isinstance(operation, AddOperation):
            doc, outcome = _add(doc, operation, source, batch, now, remember_sensitive)
        else:
            doc, outcome = _archive(doc, operation, now)
        counts[outcome] += 1
    progressed = replace(doc, maintenance=replace(doc.maintenance, watermark=watermark, failures=0))
    return Applied(progressed, **counts)
