"""Import from another assistant's answer: split pasted text into stated notes, no model.

Each ``-`` line, or each line when the answer has no bullets, becomes a note in the area
named by the heading above it (``## About you``, ``## Preferences``, ``## People``,
``## Routines``, ``## Lessons``), or ``about`` otherwise. Notes already saved, lines over
4,000 characters and text that looks like a secret are skipped, each with its reason. A
skipped secret is named by where it stood ("line 4") and its kind, never by its words,
so the report can be printed on a terminal or logged without repeating it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from core.errors import MemoryLimitError
from core.memory import document as ops
from core.memory.limits import MAX_SLUG, MAX_TEXT
from core.memory.model import AREA_TITLES, MemoryDocument, Origin
from core.secrets import find_secret

_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*•]\s+(.*)$")
_AREA_BY_TITLE = {title.lower(): area for area, title in AREA_TITLES.items()}


@dataclass(frozen=True)
class Candidate:
    area: str
    text: str
    line: int = 0  # its line in the pasted answer (1-based); 0 when it came without one (the page's chosen notes)


@dataclass(frozen=True)
class ImportResult:
    document: MemoryDocument
    saved: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (first words of the line, or "line N" for a secret; why)


def split_answer(answer: str) -> list[Candidate]:
    lines = answer.splitlines()
    has_bullets = any(_BULLET.match(line) for line in lines)
    area, found = "about", []
    for number, line in enumerate(lines, start=1):
        heading = _HEADING.match(line.strip())
        if heading:
            area = _AREA_BY_TITLE.get(heading.group(1).strip().lower(), "about")
            continue
        bullet = _BULLET.match(line)
        text = bullet.group(1) if bullet else (line if not has_bullets else "")
        if text.strip():
            found.append(Candidate(area, text.strip(), number))
    return found


def normalized(text: str) -> str:
    """Case, accents, punctuation and spacing folded: what "the same note" compares."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w\s]", " ", folded).split())


def _slug(text: str, taken: set[str], area: str) -> str:
    base = "-".join(normalized(text).split()[:6]).encode("ascii", "ignore").decode()
    base = re.sub(r"[^a-z0-9-]", "", base).strip("-")[: MAX_SLUG - 4] or "note"
    slug, n = base, 2
    while f"{area}/{slug}" in taken:
        slug, n = f"{base}-{n}", n + 1
    return slug


def _skip_reason(candidate: Candidate, known: set[str]) -> str | None:
    if len(candidate.text) > MAX_TEXT:
        return "over 4,000 characters"
    kind = find_secret(candidate.text)
    if kind:
        return f"looks like a secret ({kind})"
    if normalized(candidate.text) in known:
        return "already saved"
    return None


def preview(doc: MemoryDocument, answer: str) -> list[tuple[Candidate, str | None]]:
    """The pasted answer split into notes, each with why it would be skipped (None: it would be saved)."""
    known = {normalized(e.text) for e in doc.entries}
    found = []
    for candidate in split_answer(answer):
        reason = _skip_reason(candidate, known)
        if reason is None:
            known.add(normalized(candidate.text))
        found.append((candidate, reason))
    return found


def import_candidates(doc: MemoryDocument, candidates: list[Candidate], now: datetime) -> ImportResult:
    """Save the candidates as stated notes, word for word, skipping what the rules skip (with why)."""
    known = {normalized(e.text) for e in doc.entries}
    taken = {e.path for e in doc.entries}
    saved: list[str] = []
    skipped: list[tuple[str, str]] = []
    for index, candidate in enumerate(candidates, start=1):
        preview_words = " ".join(candidate.text.split()[:6])
        reason = _skip_reason(candidate, known)
        if reason is not None and reason.startswith("looks like a secret"):
            skipped.append((f"line {candidate.line}" if candidate.line else f"note {index}", reason))
            continue
        if reason is not None:
            skipped.append((preview_words, reason))
            continue
        path = f"{candidate.area}/{_slug(candidate.text, taken, candidate.area)}"
        try:
            entry = ops.make_entry(path, candidate.text, origin=Origin.STATED, now=now)
        except MemoryLimitError as exc:  # the page's and the model's rules hold for imports too
            skipped.append((preview_words, str(exc).removeprefix("Not saved: ").rstrip(".")))
            continue
        doc = ops.add_entry(doc, entry)
        known.add(normalized(candidate.text))
        taken.add(path)
        saved.append(path)
    return ImportResult(doc, tuple(saved), tuple(skipped))


def import_answer(doc: MemoryDocument, answer: str, now: datetime) -> ImportResult:
    """``nod memory import`` and the page's import: one parser, one set of rules."""
    return import_candidates(doc, split_answer(answer), now)
