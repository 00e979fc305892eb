"""What the memory page changes, with the rules every other path to memory obeys.

Page changes post nothing to chat and work while saving is off (the owner's own hand is
not the background saving that switch stops). Adding, importing, rewriting or confirming
makes a note stated; a rewrite archives the previous version, linked to the new one;
forget deletes the entry and every archived version of it; restore brings an archived
version back and archives what stood at its path. Each write is the memory document's
compare-and-swap, and names the version the page showed (its ``etag``): an edit of a
version that has changed since raises EditedElsewhere with the current one, never a
silent overwrite. Notes typed here pass the same limits and secrets checks as every note
(``make_entry``); skills too (6,000 characters, a description of 200, no secrets).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

from core.clock import Clock
from core.errors import AlreadyExists, EditedElsewhere, InvalidInput, MemoryLimitError, NotFound
from core.memory import document as ops
from core.memory.importer import Candidate, ImportResult, import_candidates, preview
from core.memory.values import AREAS, MemoryDocument, Origin, Skill
from core.owner import Owner
from core.page.view import entry_view, etag
from core.ports import Changed, MemoryRepository, Owners
from core.secrets import refuse_secrets

MAX_SKILL_BODY = 6_000
MAX_SKILL_DESCRIPTION = 200
MAX_IMPORT_CHARS = 200_000


def _date(raw: str | None) -> date | None:
    if raw is None or not raw.strip():
        return None
    try:
        return date.fromisoformat(raw.strip())
    except ValueError as exc:
        raise InvalidInput(f"The expiry date {raw[:20]!r} is not a date like 2027-01-31.") from exc


def _stale(doc: MemoryDocument, path: str, shown: str | None, owner: Owner) -> None:
    """EditedElsewhere (with the note as it is now) unless the page showed the current version."""
    entry = doc.get(path)
    if entry is None:
        raise NotFound(f"No note at {path}.")
    if shown != etag(entry):
        raise EditedElsewhere(f"{path} changed since the page showed it; here is the current note.",
                              entry_view(entry, {}, owner))  # sources are not re-read: the page reloads


class MemoryEdits:
    def __init__(self, memory: MemoryRepository, owners: Owners, clock: Clock) -> None:
        self._memory = memory
        self._owners = owners
        self._clock = clock

    async def add(self, owner: Owner, path: str, text: str, abstract: str | None, expires: str | None) -> str:
        entry = ops.make_entry(path, text, origin=Origin.STATED, now=self._clock.now(), abstract=abstract,
                               expires=_date(expires))

        def adding(doc: MemoryDocument) -> MemoryDocument:
            if doc.get(entry.path) is not None:
                raise AlreadyExists(f"There is already a note at {entry.path}; edit that one instead.")
            return ops.add_entry(doc, entry)

        await self._memory.update(owner.id, adding)
        return entry.path

    async def rewrite(self, owner: Owner, path: str, shown: str | None, text: str, abstract: str | None,
                      expires: str | None) -> str:
        now = self._clock.now()
        new = ops.make_entry(path, text, origin=Origin.STATED, now=now, abstract=abstract, expires=_date(expires))

        def rewriting(doc: MemoryDocument) -> MemoryDocument:
            _stale(doc, new.path, shown, owner)
            old = doc.get(new.path)
            assert old is not None
            return ops.replace(doc, replace(new, created_at=old.created_at), (new.path,), now)  # the page is its source now

        await self._memory.update(owner.id, rewriting)
        return new.path

    async def confirm(self, owner: Owner, path: str, shown: str | None) -> None:
        def confirming(doc: MemoryDocument) -> MemoryDocument:
            _stale(doc, path, shown, owner)
            return ops.confirm(doc, path, self._clock.now())

        await self._memory.update(owner.id, confirming)

    async def forget(self, owner: Owner, path: str, shown: str | None) -> None:
        def forgetting(doc: MemoryDocument) -> MemoryDocument:
            if doc.get(path) is not None:
                _stale(doc, path, shown, owner)
            return ops.forget(doc, path)

        await self._memory.update(owner.id, forgetting)

    async def restore(self, owner: Owner, index: int, shown: str | None) -> str:
        def restoring(doc: MemoryDocument) -> Changed[str]:
            if not 0 <= index < len(doc.archive):
                raise NotFound("That archived version is gone.")
            record = doc.archive[index]
            if shown != etag(record):
                raise EditedElsewhere("The archive changed since the page showed it; reload the page.")
            return Changed(ops.restore_version(doc, index, self._clock.now()), record.entry.path)

        return (await self._memory.apply(owner.id, restoring)).result

    async def settings(self, owner: Owner, saving_enabled: bool | None, remember_sensitive: bool | None) -> Owner:
        def switching(current: Any) -> Any:
            if saving_enabled is not None:
                current = replace(current, saving_enabled=saving_enabled)
            if remember_sensitive is not None:
                current = replace(current, remember_sensitive=remember_sensitive)
            return current

        return await self._owners.update_settings(owner.id, switching)

    async def edit_skill(self, owner: Owner, name: str, shown: str | None, description: str, body: str) -> None:
        description, body = description.strip(), body.strip()
        if not body or len(body) > MAX_SKILL_BODY or len(description) > MAX_SKILL_DESCRIPTION or "\n" in description:
            raise MemoryLimitError(f"A skill's body holds 1 to {MAX_SKILL_BODY:,} characters and its description "
                                   f"one line of at most {MAX_SKILL_DESCRIPTION}.")
        refuse_secrets((("skill description", description), ("skill", body)))

        def editing(doc: MemoryDocument) -> MemoryDocument:
            skill = _skill(doc, name, shown)
            edited = replace(skill, description=description, body=body, updated_at=self._clock.now(), edited_by_owner=True)
            return replace(doc, skills=tuple(edited if s.name == name else s for s in doc.skills))

        await self._memory.update(owner.id, editing)

    async def forget_skill(self, owner: Owner, name: str, shown: str | None) -> None:
        def forgetting(doc: MemoryDocument) -> MemoryDocument:
            _skill(doc, name, shown)
            return replace(doc, skills=tuple(s for s in doc.skills if s.name != name))

        await self._memory.update(owner.id, forgetting)

    async def preview_import(self, owner: Owner, answer: str) -> list[dict[str, Any]]:
        if len(answer) > MAX_IMPORT_CHARS:
            raise MemoryLimitError(f"Paste at most {MAX_IMPORT_CHARS:,} characters at a time.")
        doc = (await self._memory.load(owner.id)).document
        return [{"area": c.area, "text": c.text, "skip": reason} for c, reason in preview(doc, answer)]

    async def import_notes(self, owner: Owner, notes: list[tuple[str, str]]) -> ImportResult:
        candidates = []
        for area, text in notes:
            if area not in AREAS:
                raise InvalidInput(f"Unknown memory area {area!r}; the areas are {', '.join(AREAS)}.")
            candidates.append(Candidate(area, text.strip()))
        now = self._clock.now()

        def importing(doc: MemoryDocument) -> Changed[ImportResult]:
            result = import_candidates(doc, candidates, now)
            return Changed(result.document if result.saved else doc, result)

        return (await self._memory.apply(owner.id, importing)).result


def _skill(doc: MemoryDocument, name: str, shown: str | None) -> Skill:
    skill = next((s for s in doc.skills if s.name == name), None)
    if skill is None:
        raise NotFound(f"No learned skill named {name!r}.")
    if shown != etag(skill):
        raise EditedElsewhere(f"The skill {name} changed since the page showed it; reload the page.")
    return skill
