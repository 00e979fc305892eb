"""What the memory page and ``GET /api/memory`` show: the document, read for its owner.

Only the owner's own messages are shown as sources, and every item carries an ``etag`` so an
edit of a changed version is refused. Details: docs/page.md, "What the page shows".
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from core.memory.codec import encoded_size, entry_to_json, skill_to_json
from core.memory.render import label_of
from core.memory.values import ARCHIVED_LABEL, AREA_TITLES, AREAS, ArchivedRecord, Entry, MemoryDocument, Skill
from core.message import Role, StoredMessage
from core.owner import Owner
from core.page.find import haystack
from core.page.words import capacity, day, local_time, short, why_archived
from core.ports import Messages


def etag(value: Entry | ArchivedRecord | Skill) -> str:
    """A short fingerprint of exactly what the page showed of a note, record or skill."""
    if isinstance(value, Entry):
        data: Any = entry_to_json(value)
    elif isinstance(value, ArchivedRecord):
        data = {"entry": entry_to_json(value.entry), "reason": value.reason.value, "at": value.archived_at.isoformat()}
    else:
        data = skill_to_json(value)
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _source(message_id: int, quote: str | None, found: dict[int, StoredMessage], owner: Owner,
            now: datetime) -> dict[str, Any]:
    message = found.get(message_id)
    shown: dict[str, Any] = {"message_id": message_id, "quote": quote, "text": None, "sent_at": None,
                             "sent_label": None, "voice": False}
    if message is not None:
        shown["text"] = message.text
        shown["sent_at"] = message.sent_at.astimezone(owner.zone).isoformat(timespec="minutes")
        shown["sent_label"] = local_time(message.sent_at, owner.zone, now)
        shown["voice"] = message.voice
    return shown


def entry_view(entry: Entry, found: dict[int, StoredMessage], owner: Owner, now: datetime | None = None) -> dict[str, Any]:
    """One note as the page shows it; its sources are distinct messages (the first quote of each)."""
    now = now or entry.updated_at
    quotes: dict[int, str | None] = {}
    for evidence in entry.evidence:
        if quotes.get(evidence.message_id) is None:
            quotes[evidence.message_id] = evidence.quote
    view = {
        "path": entry.path, "area": entry.area, "area_title": AREA_TITLES[entry.area], "slug": entry.slug,
        "text": entry.text, "abstract": entry.abstract,
        "status": entry.status.value, "label": label_of(entry), "origin": entry.origin.value,
        "expires": entry.expires.isoformat() if entry.expires else None,
        "expires_label": day(entry.expires) if entry.expires else None, "sensitive": entry.sensitive,
        "created_at": entry.created_at.isoformat(), "updated_at": entry.updated_at.isoformat(),
        "updated_label": local_time(entry.updated_at, owner.zone, now), "etag": etag(entry),
        "evidence": [_source(i, q, found, owner, now) for i, q in quotes.items()],
    }
    view["find"] = haystack(view)
    return view


def _record_view(index: int, record: ArchivedRecord, doc: MemoryDocument, owner: Owner, now: datetime) -> dict[str, Any]:
    standing = doc.get(record.entry.path)
    return {
        "index": index, "path": record.entry.path, "area": record.entry.area, "area_title": AREA_TITLES[record.entry.area],
        "slug": record.entry.slug, "text": record.entry.text, "label": ARCHIVED_LABEL,
        "reason": record.reason.value, "why": why_archived(record, doc), "archived_at": record.archived_at.isoformat(),
        "archived_label": local_time(record.archived_at, owner.zone, now), "replaced_by": record.replaced_by,
        "restore_replaces": short(standing.text) if standing is not None else None, "etag": etag(record),
    }


def _skill_view(skill: Skill) -> dict[str, Any]:
    return {**skill_to_json(skill), "etag": etag(skill)}


async def owners_sources(doc: MemoryDocument, owner: Owner, messages: Messages) -> dict[int, StoredMessage]:
    """The source messages the page may show: the owner's own, nobody else's."""
    ids = {e.message_id for entry in doc.entries for e in entry.evidence}
    found = await messages.get_many(ids)
    return {i: m for i, m in found.items() if m.owner_id == owner.id and m.role is Role.OWNER}


async def memory_view(owner: Owner, doc: MemoryDocument, version: int, messages: Messages,
                      now: datetime) -> dict[str, Any]:
    """The page's view of ``doc``; ``now`` (the clock's) decides when a time needs its year."""
    found = await owners_sources(doc, owner, messages)
    areas = [{"area": area, "title": AREA_TITLES[area],
              "entries": [entry_view(e, found, owner, now) for e in doc.in_area(area)]} for area in AREAS]
    return {
        "owner": owner.name, "version": version, "areas": areas,
        "archive": [_record_view(n, r, doc, owner, now) for n, r in enumerate(doc.archive)][::-1],  # newest first
        "skills": [_skill_view(s) for s in doc.skills],
        "settings": {"saving_enabled": owner.settings.saving_enabled,
                     "remember_sensitive": owner.settings.remember_sensitive},
        "capacity": capacity(doc, encoded_size(doc)),
    }
