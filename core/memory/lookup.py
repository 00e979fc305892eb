"""memory_read and memory_find: how the agent looks into memory beyond the index.

``memory_read area`` lists an area; ``memory_read area/slug`` shows one entry with its
status, label, origin and sources. The agent receives only the saved support quote,
never the whole source message, and only while the quote still matches an owner
message it came from: an edited or deleted source hides it. ``memory_find`` is a plain
keyword match over slug, abstract and text, in any word form, ranked by BM25F over those
three fields (core.bm25, as history_search re-ranks); no model and no embeddings.
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from zoneinfo import ZoneInfo

from core.bm25 import scores
from core.clock import model_time
from core.errors import InvalidInput, NotFound
from core.memory.quotes import quote_matches
from core.memory.render import label_of
from core.memory.values import AREAS, Entry, MemoryDocument
from core.message import Role
from core.ports import MessageLookup
from core.text import query_terms, stem_counts

MAX_FOUND = 20
FIELD_WEIGHTS = (2.0, 1.5, 1.0)  # slug, abstract, text: a word in the slug names the note


def _areas_hint() -> str:
    return "Areas: " + ", ".join(AREAS) + "."


def _summary(entry: Entry) -> str:
    if entry.abstract:
        return entry.abstract
    lines = entry.text.strip().splitlines()
    return lines[0] if lines else ""


def read_area(doc: MemoryDocument, area: str) -> dict[str, Any]:
    entries = [
        {"path": e.path, "summary": _summary(e), "status": e.status.value, "label": label_of(e)}
        for e in doc.in_area(area)
    ]
    return {"area": area, "entries": entries, "count": len(entries)}


async def read_entry(
    doc: MemoryDocument, path: str, owner_id: int, zone: ZoneInfo, lookup: MessageLookup
) -> dict[str, Any]:
    entry = doc.get(path)
    if entry is None:
        raise NotFound(f"No note at {path}; read the area `{path.split('/')[0]}` to see its notes.")
    sources = await lookup.get_many(entry.source_ids)
    owned = {i: m for i, m in sources.items() if m.owner_id == owner_id and m.role is Role.OWNER}
    quote = next(
        (ev.quote for ev in entry.evidence
         if ev.quote and ev.message_id in owned and quote_matches(ev.quote, owned[ev.message_id].text)),
        None,
    )
    shown: dict[str, Any] = {
        "path": entry.path, "text": entry.text, "abstract": entry.abstract,
        "status": entry.status.value, "label": label_of(entry), "origin": entry.origin.value,
        "sources": [
            {"id": i, "sent_at": model_time(owned[i].sent_at, zone) if i in owned else None}
            for i in entry.source_ids
        ],
        "evidence_count": len(entry.source_ids),
        "quote": quote,
    }
    details = {
        "kind": entry.kind, "entities": list(entry.entities) or None,
        "event_date": entry.event_date, "valid_from": entry.valid_from, "valid_to": entry.valid_to,
        "expires": entry.expires,
    }
    shown.update({k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in details.items() if v})
    return shown


async def memory_read(
    doc: MemoryDocument, path: Any, owner_id: int, zone: ZoneInfo, lookup: MessageLookup
) -> dict[str, Any]:
    """The tool: an area's list or one entry; a clear error naming the areas otherwise."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidInput("memory_read needs `path`: an area or area/slug. " + _areas_hint())
    path = path.strip().strip("/")
    area = path.split("/", 1)[0]
    if area not in AREAS:
        raise InvalidInput(f"There is no memory area {area!r}. " + _areas_hint())
    if "/" not in path:
        return read_area(doc, area)
    return await read_entry(doc, path, owner_id, zone, lookup)


def _fields(entry: Entry) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """The note's stems by field, in FIELD_WEIGHTS' order (a slug's hyphens and underscores part words)."""
    return (stem_counts(entry.slug.replace("-", " ").replace("_", " ")), stem_counts(entry.abstract or ""),
            stem_counts(entry.text))


def memory_find(doc: MemoryDocument, words: str) -> dict[str, Any]:
    """Entries sharing words with ``words`` (any word form), best BM25F score first."""
    if not words.strip():
        raise InvalidInput("memory_find needs `words`: the words to look for.")
    groups = query_terms(words).stem_groups
    if not groups:
        raise InvalidInput("memory_find needs at least one word to look for.")
    relevance = scores([_fields(e) for e in doc.entries], FIELD_WEIGHTS, groups)
    scored = [(score, entry) for score, entry in zip(relevance, doc.entries, strict=True) if score > 0]
    scored.sort(key=lambda pair: (-pair[0], pair[1].path))
    found = [
        {"path": e.path, "text": e.text, "status": e.status.value, "label": label_of(e)}
        for _, e in scored[:MAX_FOUND]
    ]
    return {"results": found, "count": len(scored)}
