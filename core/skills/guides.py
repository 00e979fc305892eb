"""The built-in task guides: one Markdown file each, shipped with Nod (``core/skills/guides``).

A guide covers a kind of work (remembering, searching the conversation, offering choices);
a learned skill covers one concrete flow and may name the guide it extends. A guide's name
is reserved: no learned skill may take it. The files are read once, on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FOLDER = Path(__file__).with_name("guides")


@dataclass(frozen=True)
class Guide:
    name: str
    title: str  # the first line: what the guide is for
    body: str


@lru_cache(maxsize=1)
def guides() -> tuple[Guide, ...]:
    found = []
    for path in sorted(FOLDER.glob("*.md")):
        body = path.read_text(encoding="utf-8").strip()
        found.append(Guide(path.stem, body.splitlines()[0].strip(), body))
    return tuple(found)


def guide(name: str) -> Guide | None:
    return next((g for g in guides() if g.name == name), None)


def guide_lines() -> list[str]:
    """``name: what it is for`` per guide, for the owner context."""
    return [f"{g.name}: {g.title}" for g in guides()]
