"""Import from another assistant's answer: split pasted text into stated notes, no model.

One parser and one set of rules for ``nod memory import`` and the page: the headings pick the
area, and notes already saved, overlong lines and secrets are skipped with their reason (a
secret named by its line and kind, never its words). Nod's own Markdown export reads back as
exactly its notes. The line rules: docs/memory.md (Importing another assistant's answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import replace as _with
from datetime import date, datetime

from core.errors import MemoryLimitError
from core.memory import document as ops
from core.memory.limits import MAX_SLUG, MAX_TEXT
from core.memory.values import ARCHIVED_LABEL, AREA_TITLES, AREAS, MemoryDocument, Origin
from core.secrets import find_secret
from core.text import fact_key

_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*•]\s+(.*)$")
_AREA_BY_TITLE = {title.lower(): area for area, title in AREA_TITLES.items()}
# the export's own lines (core.memory.render): a note, and the details indented under it
_EXPORTED = re.compile(r"^- \*\*(?P<area>[a-z]+)/(?P<slug>[a-z0-9][a-z0-9-]*)\*\* \((?P<label>[^)]*)\): (?P<text>.*)$")
_DETAIL = re.compile(r"^\s+- (?P<name>Summary|Expires): (?P<value>.*)$")
_EMPTY_AREA = "_Nothing saved._"
_NOT_NOTES = {"learned skills", ARCHIVED_LABEL.lower()}  # the export's skills and archive: no notes in them


@dataclass(frozen=True)
class Candidate:
    area: str
    text: str
    line: int = 0  # its line in the pasted answer (1-based); 0 when it came without one (the page's chosen notes)
    slug: str | None = None  # from Nod's own export: the path it had
    abstract: str | None = None
    expires: date | None = None


@dataclass(frozen=True)
class ImportResult:
    document: MemoryDocument
    saved: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (first words of the line, or "line N" for a secret; why)


def _with_detail(found: list[Candidate], name: str, value: str) -> bool:
    """An export's ``Summary:``/``Expires:`` line onto the note above it; False when it is not one."""
    if not found or found[-1].slug is None:
        return False
    if name == "Summary":
        found[-1] = _with(found[-1], abstract=value.strip())
        return True
    try:
        found[-1] = _with(found[-1], expires=date.fromisoformat(value.strip()))
    except ValueError:
        return False
    return True


def split_answer(answer: str) -> list[Candidate]:
    lines = answer.splitlines()
    has_bullets = any(_BULLET.match(line) for line in lines)
    area, skipping, found = "about", False, []
    in_note = False  # the line before was part of a note of Nod's export: its line, a detail or more of its text
    for number, line in enumerate(lines, start=1):
        follows_note, in_note = in_note, False
        heading = _HEADING.match(line.strip())
        if heading:
            title = heading.group(1).strip().lower()
            level = len(line.strip()) - len(line.strip().lstrip("#"))
            if level <= 2:  # a section; "### order-flowers" inside the skills' section is still in it
                skipping = title in _NOT_NOTES
            if level >= 2 or title in _AREA_BY_TITLE:  # the export's "# Memory of ana" names no area
                area = _AREA_BY_TITLE.get(title, area if level > 2 else "about")
            continue
        if skipping or line.strip() == _EMPTY_AREA:
            continue
        exported = _EXPORTED.match(line)
        if exported and exported.group("area") in AREAS:
            found.append(Candidate(exported.group("area"), exported.group("text").strip(), number, exported.group("slug")))
            in_note = True
            continue
        detail = _DETAIL.match(line)
        if follows_note and detail and _with_detail(found, detail.group("name"), detail.group("value")):
            in_note = True
            continue
        bullet = _BULLET.match(line)
        if follows_note and not bullet and line.strip():  # an exported note's text goes on over lines
            found[-1] = _with(found[-1], text=f"{found[-1].text}\n{line.rstrip()}")
            in_note = True
            continue
        text = bullet.group(1) if bullet else (line if not has_bullets else "")
        if text.strip():
            found.append(Candidate(area, text.strip(), number))
    return found


def _slug(text: str, taken: set[str], area: str) -> str:
    base = "-".join(fact_key(text).split()[:6]).encode("ascii", "ignore").decode()
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
    if fact_key(candidate.text) in known:
        return "already saved"
    return None


def preview(doc: MemoryDocument, answer: str) -> list[tuple[Candidate, str | None]]:
    """The pasted answer split into notes, each with why it would be skipped (None: it would be saved)."""
    known = {fact_key(e.text) for e in doc.entries}
    found = []
    for candidate in split_answer(answer):
        reason = _skip_reason(candidate, known)
        if reason is None:
            known.add(fact_key(candidate.text))
        found.append((candidate, reason))
    return found


def import_candidates(doc: MemoryDocument, candidates: list[Candidate], now: datetime) -> ImportResult:
    """Save the candidates as stated notes, word for word, skipping what the rules skip (with why)."""
    known = {fact_key(e.text) for e in doc.entries}
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
        own = candidate.slug is not None and f"{candidate.area}/{candidate.slug}" not in taken
        path = f"{candidate.area}/{candidate.slug if own else _slug(candidate.text, taken, candidate.area)}"
        try:
            entry = ops.make_entry(path, candidate.text, origin=Origin.STATED, now=now, abstract=candidate.abstract,
                                   expires=candidate.expires)
        except MemoryLimitError as exc:  # the page's and the model's rules hold for imports too
            skipped.append((preview_words, str(exc).removeprefix("Not saved: ").rstrip(".")))
            continue
        doc = ops.add_entry(doc, entry)
        known.add(fact_key(candidate.text))
        taken.add(path)
        saved.append(path)
    return ImportResult(doc, tuple(saved), tuple(skipped))


def import_answer(doc: MemoryDocument, answer: str, now: datetime) -> ImportResult:
    """``nod memory import`` and the page's import: one parser, one set of rules."""
    return import_candidates(doc, split_answer(answer), now)
