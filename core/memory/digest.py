"""The plain digests behind ``/memory`` and ``/context`` when no model writes one.

``/memory`` answers "what do you remember about me?" in a few lines: how many notes per
area, then the notes themselves, stated first, up to a screenful. ``/context`` shows the
owner context exactly as the agent receives it. Neither runs an agent turn.
"""

from __future__ import annotations

from collections import Counter

from core.memory.render import index_lines, render_index
from core.memory.values import AREAS, MemoryDocument

DIGEST_LINES = 20


def memory_digest(doc: MemoryDocument) -> str:
    if not doc.entries:
        return "I don't remember anything about you yet. Tell me what you'd like me to keep in mind."
    per_area = Counter(entry.area for entry in doc.entries)
    counts = ", ".join(f"{area} {per_area[area]}" for area in AREAS if per_area[area])
    lines = index_lines(doc)
    shown = [f"- {line}" for line in lines[:DIGEST_LINES]]
    if len(lines) > DIGEST_LINES:
        shown.append(f"…and {len(lines) - DIGEST_LINES} more.")
    count = len(doc.entries)
    return f"I remember {count} note{'s' if count != 1 else ''} ({counts}):\n" + "\n".join(shown)


def context_digest(doc: MemoryDocument) -> str:
    return "What I see at the start of every turn:\n" + render_index(doc)
