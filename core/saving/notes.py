"""What the server keeps of the notes a memory model proposes: pure checks, no I/O.

A proposed note is kept only when every rule holds: its path and text are valid, it
cites at least one message the server supplied, one of those cited messages contains its
quote (Unicode NFC and whitespace folding, nothing looser), and neither its text, its
abstract nor its quote holds a secret. Optional details that do not parse are dropped,
never fatal; a quote over 400 characters proves the note and is then not stored. Each
refusal has a reason the agent can read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from core.errors import MemoryLimitError
from core.memory import document as ops
from core.memory.limits import MAX_QUOTE, split_path
from core.memory.model import Evidence, Entry, Origin
from core.memory.quotes import quote_matches
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


def _date(value: Any) -> date | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        return None


def _entities(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(v.strip() for v in value if isinstance(v, str) and v.strip()))[:MAX_ENTITIES]


def _ids(value: Any) -> list[int]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]


def _quote_source(quote: str, cited: Sequence[int], supplied: Mapping[int, str]) -> int | None:
    return next((i for i in cited if quote_matches(quote, supplied[i])), None)


def check_note(raw: Any, supplied: Mapping[int, str], now: datetime) -> Proposal | Refusal:
    """One proposed note against the rules; ``supplied`` is id → text of the messages given."""
    if not isinstance(raw, dict):
        return Refusal("?", "not a note object")
    path = raw.get("path") if isinstance(raw.get("path"), str) else "?"
    note_text, quote = raw.get("text"), raw.get("quote")
    if not isinstance(note_text, str) or not note_text.strip():
        return Refusal(path, "no text")
    cited = [i for i in _ids(raw.get("message_ids")) if i in supplied]
    if not cited:
        return Refusal(path, "cites no message the server supplied")
    if not isinstance(quote, str) or not quote.strip():
        return Refusal(path, "no quote")
    source = _quote_source(quote, cited, supplied)
    if source is None:
        return Refusal(path, "the quote is not in a cited owner message")
    abstract = raw.get("abstract") if isinstance(raw.get("abstract"), str) and raw.get("abstract") else None
    for part, label in ((note_text, "text"), (abstract or "", "abstract"), (quote, "quote")):
        found = find_secret(part)
        if found:
            return Refusal(path, f"the {label} holds a {found}")
    kept_quote = quote if len(quote) <= MAX_QUOTE else None  # proves the note, too long to keep
    evidence = tuple(Evidence(i, kept_quote if i == source else None, now) for i in dict.fromkeys(cited))
    kind = raw.get("kind") if raw.get("kind") in KINDS else None
    try:
        split_path(path)
        entry = ops.make_entry(
            path, note_text.strip(), origin=Origin.STATED, now=now, abstract=abstract, evidence=evidence,
            kind=kind, entities=_entities(raw.get("entities")), event_date=_date(raw.get("event_date")),
            valid_from=_date(raw.get("valid_from")), valid_to=_date(raw.get("valid_to")),
            expires=_date(raw.get("expires")),
        )
    except MemoryLimitError as exc:
        try:
            entry = ops.make_entry(path, note_text.strip(), origin=Origin.STATED, now=now, evidence=evidence)
        except MemoryLimitError:
            return Refusal(path, str(exc))
    replaces = tuple(p for p in raw.get("replaces") or () if isinstance(p, str))
    return Proposal(entry, replaces)
