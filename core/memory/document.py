"""Pure operations on the memory document: each takes a document and returns a new one.

Nothing here touches storage or the clock: callers pass ``now``. That keeps every rule
(replacement order, archive trimming, the 256 KiB ceiling) testable without a database,
and lets the store re-apply an operation after losing a compare-and-swap.
"""

from __future__ import annotations

import json
from dataclasses import replace as _with
from datetime import date, datetime

from core.errors import AlreadyExists, MemoryFull, NotFound
from core.memory import limits
from core.memory.codec import encode, to_json
from core.memory.values import (
    ArchivedRecord,
    ArchiveReason,
    Entry,
    Evidence,
    MemoryDocument,
    Origin,
)
from core.secrets import refuse_secrets


def make_entry(
    path: str,
    text: str,
    *,
    origin: Origin,
    now: datetime,
    abstract: str | None = None,
    evidence: tuple[Evidence, ...] = (),
    kind: str | None = None,
    entities: tuple[str, ...] = (),
    event_date: date | None = None,
    valid_from: date | None = None,
    valid_to: date | None = None,
    expires: date | None = None,
    sensitive: bool = False,
    label: str | None = None,
) -> Entry:
    """A new entry with every limit checked; an over-long quote is dropped, not fatal.

    Every way a note is made passes here — the memory model, reflection, the page, the
    CLI, an import — so here every stored field is checked for secrets, the path too.
    """
    area, slug = limits.split_path(path)
    refuse_secrets((("path", slug.replace("-", " ")), ("text", text), ("abstract", abstract or ""),
                    *(("quote", e.quote or "") for e in evidence)))
    return Entry(
        area=area,
        slug=slug,
        text=limits.check_text(text),
        origin=origin,
        created_at=now,
        updated_at=now,
        abstract=limits.check_abstract(abstract),
        evidence=tuple(_with(e, quote=limits.fit_quote(e.quote)) for e in evidence),
        kind=kind,
        entities=entities,
        event_date=event_date,
        valid_from=valid_from,
        valid_to=valid_to,
        expires=expires,
        sensitive=sensitive,
        label=label,
    )


def _require(doc: MemoryDocument, path: str) -> Entry:
    entry = doc.get(path)
    if entry is None:
        raise NotFound(f"No memory entry at {path}.")
    return entry


def _swap(doc: MemoryDocument, path: str, new: Entry) -> MemoryDocument:
    return _with(doc, entries=tuple(new if e.path == path else e for e in doc.entries))


def at_free_path(doc: MemoryDocument, entry: Entry) -> Entry:
    """``entry`` moved to ``slug-2``, ``slug-3``, … when its path is taken, so no note is overwritten."""
    n, slug = 2, entry.slug
    while doc.get(entry.path) is not None:
        entry = _with(entry, slug=f"{slug}-{n}")
        n += 1
    return entry


def add_entry(doc: MemoryDocument, entry: Entry) -> MemoryDocument:
    if doc.get(entry.path) is not None:
        raise AlreadyExists(f"There is already a memory entry at {entry.path}.")
    return _with(doc, entries=doc.entries + (entry,))


def add_evidence(
    doc: MemoryDocument, path: str, evidence: Evidence, now: datetime
) -> MemoryDocument:
    """Another source for an entry; the same message twice counts once (a better quote wins)."""
    entry = _require(doc, path)
    evidence = _with(evidence, quote=limits.fit_quote(evidence.quote), added_at=now)
    known = {e.message_id: e for e in entry.evidence}
    old = known.get(evidence.message_id)
    if old is not None and (old.quote or not evidence.quote):
        return doc
    kept = tuple(e for e in entry.evidence if e.message_id != evidence.message_id)
    return _swap(doc, path, _with(entry, evidence=kept + (evidence,), updated_at=now))


def confirm(doc: MemoryDocument, path: str, now: datetime) -> MemoryDocument:
    """The owner's own words or page make an entry stated, whatever its origin was."""
    entry = _require(doc, path)
    if entry.origin is Origin.STATED:
        return doc
    return _swap(doc, path, _with(entry, origin=Origin.STATED, label=None, updated_at=now))


def archive(
    doc: MemoryDocument,
    path: str,
    reason: ArchiveReason,
    now: datetime,
    replaced_by: str | None = None,
) -> MemoryDocument:
    entry = _require(doc, path)
    record = ArchivedRecord(entry, reason, now, replaced_by)
    return _with(
        doc,
        entries=tuple(e for e in doc.entries if e.path != path),
        archive=doc.archive + (record,),
    )


def replace(
    doc: MemoryDocument, new: Entry, old_paths: tuple[str, ...], now: datetime
) -> MemoryDocument:
    """Save ``new`` first, then archive each old entry linked to it (both ways).

    ``new`` may sit at one of the old paths (a rewrite): the old version is archived with
    ``replaced_by`` pointing at the same path, and the new one takes its place in the list
    (the page shows a rewritten note where it was, not at the end of its area).
    """
    olds = tuple(dict.fromkeys(old_paths))
    for path in olds:
        _require(doc, path)
    if new.path not in olds and doc.get(new.path) is not None:
        raise AlreadyExists(f"There is already a memory entry at {new.path}.")
    linked = _with(new, replaces=tuple(dict.fromkeys(new.replaces + olds)))
    records = tuple(
        ArchivedRecord(_require(doc, p), ArchiveReason.REPLACED, now, new.path) for p in olds
    )
    if new.path in olds:  # a rewrite keeps the note's place among its area's notes
        entries = tuple(linked if e.path == new.path else e for e in doc.entries
                        if e.path == new.path or e.path not in olds)
    else:
        entries = tuple(e for e in doc.entries if e.path not in olds) + (linked,)
    return _with(doc, entries=entries, archive=doc.archive + records)


def restore(doc: MemoryDocument, path: str, now: datetime) -> MemoryDocument:
    """Bring back the newest archived version of ``path``."""
    if doc.get(path) is not None:
        raise AlreadyExists(f"There is already a memory entry at {path}; forget it first.")
    for index in range(len(doc.archive) - 1, -1, -1):
        record = doc.archive[index]
        if record.entry.path == path:
            archive_left = doc.archive[:index] + doc.archive[index + 1 :]
            entry = _with(record.entry, updated_at=now)
            return _with(doc, entries=doc.entries + (entry,), archive=archive_left)
    raise NotFound(f"No archived memory entry at {path}.")


def restore_version(doc: MemoryDocument, index: int, now: datetime) -> MemoryDocument:
    """Bring the archived record at ``index`` back as the current entry at its path.

    What stands at that path now is archived first, replaced by the restored version (which
    takes its place in the list), so nothing is lost either way and the two stay linked.
    """
    if not 0 <= index < len(doc.archive):
        raise NotFound("No such archived version.")
    record = doc.archive[index]
    path = record.entry.path
    rest = _with(doc, archive=doc.archive[:index] + doc.archive[index + 1 :])
    back = _with(record.entry, updated_at=now)
    place = next((n for n, e in enumerate(rest.entries) if e.path == path), None)
    if place is None:
        return _with(rest, entries=rest.entries + (back,))
    rest = archive(rest, path, ArchiveReason.REPLACED, now, replaced_by=path)
    return _with(rest, entries=rest.entries[:place] + (back,) + rest.entries[place:])  # where the replaced one stood


def _version_paths(doc: MemoryDocument, path: str) -> set[str]:
    """``path`` and every path whose archived version was replaced, directly or not, by it."""
    paths, frontier = {path}, [path]
    while frontier:
        current = frontier.pop()
        for record in doc.archive:
            if record.replaced_by == current and record.entry.path not in paths:
                paths.add(record.entry.path)
                frontier.append(record.entry.path)
    return paths


def forget(doc: MemoryDocument, path: str) -> MemoryDocument:
    """Delete the entry and all its archived versions: nothing of it stays anywhere."""
    paths = _version_paths(doc, path)
    entries = tuple(e for e in doc.entries if e.path != path)
    kept = tuple(r for r in doc.archive if r.entry.path not in paths)
    if len(entries) == len(doc.entries) and len(kept) == len(doc.archive):
        raise NotFound(f"No memory entry at {path}.")
    return _with(doc, entries=entries, archive=kept)


def _record_size(record: ArchivedRecord) -> int:
    one = _with(MemoryDocument(), archive=(record,))
    raw = json.dumps(to_json(one)["archive"][0], ensure_ascii=False, separators=(",", ":"))
    return len(raw.encode("utf-8")) + 1  # the comma between records


def fit_and_encode(
    doc: MemoryDocument, max_bytes: int = limits.MAX_DOCUMENT_BYTES
) -> tuple[MemoryDocument, str]:
    """Trim the archive oldest-first until the document fits, or refuse with MemoryFull.

    Returns the fitted document with its stored form, so a save encodes only once.
    """
    body = encode(doc)
    size = len(body.encode("utf-8"))
    if size <= max_bytes:
        return doc, body
    by_age = sorted(range(len(doc.archive)), key=lambda i: doc.archive[i].archived_at)
    dropped: set[int] = set()
    for index in by_age:
        if size <= max_bytes:
            break
        dropped.add(index)
        size -= _record_size(doc.archive[index])
    trimmed = _with(doc, archive=tuple(r for i, r in enumerate(doc.archive) if i not in dropped))
    body = encode(trimmed)
    if len(body.encode("utf-8")) > max_bytes:
        raise MemoryFull()
    return trimmed, body


def fit(doc: MemoryDocument, max_bytes: int = limits.MAX_DOCUMENT_BYTES) -> MemoryDocument:
    """The document trimmed to fit in ``max_bytes``; MemoryFull when even that fails."""
    return fit_and_encode(doc, max_bytes)[0]
