"""What the memory page and ``GET /api/memory`` show: the document, read for its owner.

Notes by area with their status label (Mentioned once, Learned, Confirmed — or Learned from
your sent email), each with its sources: the owner's own message, whole, and its date
(and whether it came from a voice note: then its text is a transcription).
Only the owner's own messages are shown as sources, never Nod's words or a tool's; a
source that is gone, or is not the owner's, is listed without text. The archive is shown
as "Let go" with why and when. Every note, archived record and skill carries an ``etag``:
a fingerprint of what the page showed, which every edit sends back, so an edit of a
version that has changed since is refused instead of overwriting it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.memory.codec import entry_to_json, skill_to_json
from core.memory.model import ARCHIVED_LABEL, AREA_TITLES, AREAS, ArchivedRecord, Entry, MemoryDocument, Skill
from core.memory.render import label_of
from core.message import Role, StoredMessage
from core.owner import Owner
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


def _source(message_id: int, quote: str | None, found: dict[int, StoredMessage], owner: Owner) -> dict[str, Any]:
    message = found.get(message_id)
    shown: dict[str, Any] = {"message_id": message_id, "quote": quote, "text": None, "sent_at": None, "voice": False}
    if message is not None:
        shown["text"] = message.text
        shown["sent_at"] = message.sent_at.astimezone(owner.zone).isoformat(timespec="minutes")
        shown["voice"] = message.voice
    return shown


def entry_view(entry: Entry, found: dict[int, StoredMessage], owner: Owner) -> dict[str, Any]:
    return {
        "path": entry.path, "area": entry.area, "slug": entry.slug, "text": entry.text, "abstract": entry.abstract,
        "status": entry.status.value, "label": label_of(entry), "origin": entry.origin.value,
        "expires": entry.expires.isoformat() if entry.expires else None, "sensitive": entry.sensitive,
        "created_at": entry.created_at.isoformat(), "updated_at": entry.updated_at.isoformat(), "etag": etag(entry),
        "evidence": [_source(e.message_id, e.quote, found, owner) for e in entry.evidence],
    }


def _record_view(index: int, record: ArchivedRecord) -> dict[str, Any]:
    return {
        "index": index, "path": record.entry.path, "text": record.entry.text, "label": ARCHIVED_LABEL,
        "reason": record.reason.value, "archived_at": record.archived_at.isoformat(), "replaced_by": record.replaced_by,
        "etag": etag(record),
    }


def _skill_view(skill: Skill) -> dict[str, Any]:
    return {**skill_to_json(skill), "etag": etag(skill)}


async def owners_sources(doc: MemoryDocument, owner: Owner, messages: Messages) -> dict[int, StoredMessage]:
    """The source messages the page may show: the owner's own, nobody else's."""
    ids = {e.message_id for entry in doc.entries for e in entry.evidence}
    found = await messages.get_many(ids)
    return {i: m for i, m in found.items() if m.owner_id == owner.id and m.role is Role.OWNER}


async def memory_view(owner: Owner, doc: MemoryDocument, version: int, messages: Messages) -> dict[str, Any]:
    found = await owners_sources(doc, owner, messages)
    areas = [{"area": area, "title": AREA_TITLES[area],
              "entries": [entry_view(e, found, owner) for e in doc.in_area(area)]} for area in AREAS]
    return {
        "owner": owner.name, "version": version, "areas": areas,
        "archive": [_record_view(n, r) for n, r in enumerate(doc.archive)][::-1],  # newest first
        "skills": [_skill_view(s) for s in doc.skills],
        "settings": {"saving_enabled": owner.settings.saving_enabled,
                     "remember_sensitive": owner.settings.remember_sensitive},
    }
