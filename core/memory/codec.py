"""The JSON form of the memory document, as stored and as ``nod memory show --json`` prints.

Field names are a contract (DESIGN.md). Decoding is tolerant of fields it does not know
and of missing optional ones, so older documents keep loading after the format grows.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from core.errors import StorageError
from core.memory.values import (
    ArchivedRecord,
    ArchiveReason,
    Entry,
    Evidence,
    Maintenance,
    MemoryDocument,
    Origin,
    Skill,
)


def _iso(value: date | datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _d(value: Any) -> date | None:
    return date.fromisoformat(value) if value else None


def entry_to_json(entry: Entry) -> dict[str, Any]:
    return {
        "area": entry.area,
        "slug": entry.slug,
        "text": entry.text,
        "abstract": entry.abstract,
        "status": entry.status.value,
        "origin": entry.origin.value,
        "evidence": [
            {"message_id": e.message_id, "quote": e.quote, "added_at": _iso(e.added_at)}
            for e in entry.evidence
        ],
        "kind": entry.kind,
        "entities": list(entry.entities),
        "event_date": _iso(entry.event_date),
        "valid_from": _iso(entry.valid_from),
        "valid_to": _iso(entry.valid_to),
        "expires": _iso(entry.expires),
        "sensitive": entry.sensitive,
        "replaces": list(entry.replaces),
        "label": entry.label,
        "created_at": _iso(entry.created_at),
        "updated_at": _iso(entry.updated_at),
    }


def entry_from_json(data: dict[str, Any]) -> Entry:
    return Entry(
        area=data["area"],
        slug=data["slug"],
        text=data["text"],
        abstract=data.get("abstract"),
        origin=Origin(data.get("origin", "stated")),
        evidence=tuple(
            Evidence(int(e["message_id"]), e.get("quote"), _dt(e.get("added_at")))
            for e in data.get("evidence", ())
        ),
        kind=data.get("kind"),
        entities=tuple(data.get("entities", ())),
        event_date=_d(data.get("event_date")),
        valid_from=_d(data.get("valid_from")),
        valid_to=_d(data.get("valid_to")),
        expires=_d(data.get("expires")),
        sensitive=bool(data.get("sensitive", False)),
        replaces=tuple(data.get("replaces", ())),
        label=data.get("label"),
        created_at=_dt(data["created_at"]),  # type: ignore[arg-type]
        updated_at=_dt(data.get("updated_at") or data["created_at"]),  # type: ignore[arg-type]
    )


def skill_to_json(skill: Skill) -> dict[str, Any]:
    return {
        "name": skill.name,
        "description": skill.description,
        "body": skill.body,
        "created_at": _iso(skill.created_at),
        "updated_at": _iso(skill.updated_at),
        "last_used_at": _iso(skill.last_used_at),
        "edited_by_owner": skill.edited_by_owner,
        "extends": skill.extends,
    }


def _skill_from_json(data: dict[str, Any]) -> Skill:
    return Skill(
        name=data["name"],
        description=data.get("description", ""),
        body=data.get("body", ""),
        created_at=_dt(data["created_at"]),  # type: ignore[arg-type]
        updated_at=_dt(data.get("updated_at") or data["created_at"]),  # type: ignore[arg-type]
        last_used_at=_dt(data.get("last_used_at")),
        edited_by_owner=bool(data.get("edited_by_owner", False)),
        extends=data.get("extends"),
    )


def to_json(doc: MemoryDocument) -> dict[str, Any]:
    return {
        "entries": [entry_to_json(e) for e in doc.entries],
        "archive": [
            {
                "entry": entry_to_json(r.entry),
                "reason": r.reason.value,
                "archived_at": _iso(r.archived_at),
                "replaced_by": r.replaced_by,
            }
            for r in doc.archive
        ],
        "skills": [skill_to_json(s) for s in doc.skills],
        "maintenance": {
            "watermark": doc.maintenance.watermark,
            "failures": doc.maintenance.failures,
        },
    }


def from_json(data: dict[str, Any]) -> MemoryDocument:
    maintenance = data.get("maintenance") or {}
    return MemoryDocument(
        entries=tuple(entry_from_json(e) for e in data.get("entries", ())),
        archive=tuple(
            ArchivedRecord(
                entry=entry_from_json(r["entry"]),
                reason=ArchiveReason(r["reason"]),
                archived_at=_dt(r["archived_at"]),  # type: ignore[arg-type]
                replaced_by=r.get("replaced_by"),
            )
            for r in data.get("archive", ())
        ),
        skills=tuple(_skill_from_json(s) for s in data.get("skills", ())),
        maintenance=Maintenance(
            watermark=int(maintenance.get("watermark", 0)),
            failures=int(maintenance.get("failures", 0)),
        ),
    )


def encode(doc: MemoryDocument) -> str:
    """Compact JSON: the stored form, whose UTF-8 size is what the 256 KiB limit counts."""
    return json.dumps(to_json(doc), ensure_ascii=False, separators=(",", ":"))


def decode(body: str) -> MemoryDocument:
    try:
        return from_json(json.loads(body))
    except (ValueError, KeyError, TypeError) as exc:
        raise StorageError(f"The stored memory document cannot be read: {exc}.") from exc


def encoded_size(doc: MemoryDocument) -> int:
    return len(encode(doc).encode("utf-8"))
