"""What the server keeps of the notes a memory model proposes: pure checks, no I/O.

Each refusal has a reason the agent can read. The rules: docs/memory.md,
"What a proposed note must pass".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, ValidatorFunctionWrapHandler, field_validator

from core.errors import MemoryLimitError
from core.memory import document as ops
from core.memory.limits import MAX_QUOTE, split_path
from core.memory.quotes import quote_matches
from core.memory.values import Entry, Evidence, Origin
from core.saving.grounding import Source, describe, find_ungrounded
from core.secrets import find_secret

KINDS = ("plan", "event", "possession", "purchase", "preference", "fact", "person", "place", "routine", "lesson")
MAX_ENTITIES = 12


@dataclass(frozen=True)
class Proposal:
    """A note the server accepted: the entry to save and the paths it replaces."""

    entry: Entry
    replaces: tuple[str, ...]


@dataclass(frozen=True)
class Refusal:
    path: str
    reason: str


class NoteProposal(BaseModel):
    """One note as the memory model proposes it (memory_learn's item schema).

    Optional details are plain strings here, not enums or dates: the specification omits
    invalid optional details without losing the fact, so the server reads them leniently
    (``kind`` is advertised with its allowed values all the same).
    """

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    path: str
    text: str
    abstract: str | None = None
    kind: Annotated[str | None, Field(json_schema_extra={"enum": [*KINDS, None]})] = None
    entities: list[str] = []
    event_date: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    expires: str | None = None
    message_ids: list[int]
    quote: str
    replaces: list[str] = []

    @field_validator("abstract", "kind", "entities", "event_date", "valid_from", "valid_to", "expires", "replaces",
                     mode="wrap")
    @classmethod
    def _omit_if_invalid(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        """An optional detail of the wrong shape is omitted; the note stands on its text and quote."""
        try:
            return handler(value)
        except ValidationError:
            assert info.field_name is not None
            return cls.model_fields[info.field_name].get_default()


def _date(value: str | None) -> date | None:
    if not value or not value.strip():
        return None
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        return None


def _entities(values: list[str], sources: Sequence[Source]) -> tuple[str, ...]:
    named = (v.strip() for v in values if v.strip())
    return tuple(dict.fromkeys(v for v in named if not find_ungrounded(v, sources)))[:MAX_ENTITIES]


def _quote_source(quote: str, cited: Sequence[int], supplied: Mapping[int, Source]) -> int | None:
    return next((i for i in cited if quote_matches(quote, supplied[i].text)), None)


def check_note(note: NoteProposal, supplied: Mapping[int, Source], now: datetime,
               saved: Mapping[str, str] | None = None) -> Proposal | Refusal:
    """One proposed note against the rules; ``supplied`` is id → the messages given (text, day sent),
    ``saved`` path → text of the notes in memory now (a note it replaces grounds it too)."""
    path, note_text, quote = note.path or "?", note.text, note.quote
    if not note_text.strip():
        return Refusal(path, "no text")
    cited = [i for i in note.message_ids if i in supplied]
    if not cited:
        return Refusal(path, "cites no message the server supplied")
    if not quote.strip():
        return Refusal(path, "no quote")
    source = _quote_source(quote, cited, supplied)
    if source is None:
        return Refusal(path, "the quote is not in a cited owner message")
    abstract = note.abstract or None
    for part, label in ((note_text, "text"), (abstract or "", "abstract"), (quote, "quote")):
        found = find_secret(part)
        if found:
            return Refusal(path, f"the {label} holds a {found}")
    notes = saved or {}
    sources = [supplied[i] for i in dict.fromkeys(cited)] + [Source(notes[p]) for p in note.replaces if p in notes]
    missing = find_ungrounded(note_text, sources) + find_ungrounded(abstract or "", sources)
    if missing:
        return Refusal(path, describe(missing))
    kept_quote = quote if len(quote) <= MAX_QUOTE else None  # proves the note, too long to keep
    evidence = tuple(Evidence(i, kept_quote if i == source else None, now) for i in dict.fromkeys(cited))
    kind = note.kind if note.kind in KINDS else None
    try:
        split_path(path)
        entry = ops.make_entry(
            path, note_text.strip(), origin=Origin.STATED, now=now, abstract=abstract, evidence=evidence,
            kind=kind, entities=_entities(note.entities, sources), event_date=_date(note.event_date),
            valid_from=_date(note.valid_from), valid_to=_date(note.valid_to), expires=_date(note.expires),
        )
    except MemoryLimitError as exc:
        try:
            entry = ops.make_entry(path, note_text.strip(), origin=Origin.STATED, now=now, evidence=evidence)
        except MemoryLimitError:
            return Refusal(path, str(exc))
    return Proposal(entry, tuple(note.replaces))
