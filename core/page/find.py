"""Search and filters on the memory page: which notes a query and the three filters leave shown.

A note matches when every word of the query is found in its text, summary, short name,
area, label or the words of its sources (the owner's own messages), case and accents
ignored; the filters narrow by area, status and the sensitive mark. The page's script does
the same on every key press from the ``data-find`` text this module makes for each note, so
the result is the same with the script (no reload) and without it (the form's GET).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.memory.values import AREAS, Status

STATUSES = tuple(s.value for s in Status)


def folded(text: str) -> str:
    """Lower case without accents, spaces collapsed: what both sides of a match are compared as."""
    plain = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in plain if not unicodedata.combining(c)).split())


def haystack(note: Mapping[str, Any]) -> str:
    """Everything a query can match in a note as the page shows it."""
    parts = [note["text"], note.get("abstract") or "", note["slug"], note["slug"].replace("-", " "), note["area_title"],
             note["label"], "sensitive" if note.get("sensitive") else ""]
    parts += [source["text"] for source in note["evidence"] if source.get("text")]
    return folded(" ".join(parts))


@dataclass(frozen=True)
class Filters:
    query: str = ""
    area: str = ""
    status: str = ""
    sensitive: bool = False

    @classmethod
    def read(cls, raw: Mapping[str, str]) -> Filters:
        """From a query string: unknown areas or statuses are ignored, not an error."""
        area, status = raw.get("area", ""), raw.get("status", "")
        return cls(raw.get("q", "")[:200].strip(), area if area in AREAS else "", status if status in STATUSES else "",
                   raw.get("sensitive") in ("1", "on", "true"))

    @property
    def active(self) -> bool:
        return bool(self.query or self.area or self.status or self.sensitive)

    def keeps(self, note: Mapping[str, Any]) -> bool:
        if self.area and note["area"] != self.area:
            return False
        if self.status and note["status"] != self.status:
            return False
        if self.sensitive and not note.get("sensitive"):
            return False
        return all(word in note["find"] for word in folded(self.query).split())


def apply(view: dict[str, Any], filters: Filters) -> dict[str, Any]:
    """``view`` with each note marked ``shown`` or not, and how many are: ``{shown, total}``."""
    shown = total = 0
    for area in view["areas"]:
        for note in area["entries"]:
            note["shown"] = filters.keeps(note)
            shown += note["shown"]
            total += 1
        area["shown"] = sum(1 for note in area["entries"] if note["shown"])
    view["found"] = {"shown": shown, "total": total, "active": filters.active, "query": filters.query,
                     "area": filters.area, "status": filters.status, "sensitive": filters.sensitive}
    return view
