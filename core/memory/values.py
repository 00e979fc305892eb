"""Frozen values of the memory document.

These types are pure values: identity is the entry's ``area/slug`` path, and storage
(versions, compare-and-swap) is a concern of ``adapters.storage``. An entry's status is
derived from its origin and evidence, never stored apart from them, so the two cannot
disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum

AREAS: tuple[str, ...] = ("about", "preferences", "people", "routines", "lessons")
AREA_TITLES: dict[str, str] = {
    "about": "About you",
    "preferences": "Preferences",
    "people": "People",
    "routines": "Routines",
    "lessons": "Lessons",
}


class Origin(str, Enum):
    """Where an entry came from; the specification's three origins."""

    STATED = "stated"
    INFERRED = "inferred"
    EMAIL = "email"


class Status(str, Enum):
    """How sure Nod is of an entry, from its origin and number of sources."""

    TENTATIVE = "tentative"
    OBSERVED = "observed"
    STATED = "stated"


STATUS_LABELS: dict[Status, str] = {
    Status.TENTATIVE: "Mentioned once",
    Status.OBSERVED: "Learned",
    Status.STATED: "Confirmed",
}
ARCHIVED_LABEL = "Let go"
EMAIL_STYLE_LABEL = "Learned from your sent email"


class ArchiveReason(str, Enum):
    """Why an entry left the index; archived records keep it."""

    REPLACED = "replaced"
    MERGED = "merged"
    EXPIRED = "expired"
    STALE = "stale"
    DUPLICATE = "duplicate"
    WRONG = "wrong"


@dataclass(frozen=True)
class Evidence:
    """One owner message behind an entry, with the short quote that ties them."""

    message_id: int
    quote: str | None = None
    added_at: datetime | None = None


@dataclass(frozen=True)
class Entry:
    """One note at ``area/slug``; optional structured details travel with it."""

    area: str
    slug: str
    text: str
    origin: Origin
    created_at: datetime
    updated_at: datetime
    abstract: str | None = None
    evidence: tuple[Evidence, ...] = ()
    kind: str | None = None
    entities: tuple[str, ...] = ()
    event_date: date | None = None
    valid_from: date | None = None
    valid_to: date | None = None
    expires: date | None = None
    sensitive: bool = False
    replaces: tuple[str, ...] = ()
    label: str | None = None

    @property
    def path(self) -> str:
        return f"{self.area}/{self.slug}"

    @property
    def status(self) -> Status:
        return status_for(self.origin, len(self.source_ids))

    @property
    def source_ids(self) -> tuple[int, ...]:
        """Distinct source message ids, in the order they were added."""
        return tuple(dict.fromkeys(e.message_id for e in self.evidence))

    @property
    def has_details(self) -> bool:
        """True when the entry carries structured fact details beyond its text."""
        return bool(
            self.kind or self.entities or self.event_date or self.valid_from or self.valid_to
        )

    @property
    def last_evidence_at(self) -> datetime:
        times = [e.added_at for e in self.evidence if e.added_at is not None]
        return max(times, default=self.created_at)


def status_for(origin: Origin, sources: int) -> Status:
    """The specification's status table: stated stays stated; inference needs two sources."""
    if origin is Origin.STATED:
        return Status.STATED
    if origin is Origin.EMAIL or sources >= 2:
        return Status.OBSERVED
    return Status.TENTATIVE


@dataclass(frozen=True)
class ArchivedRecord:
    """An entry that left the index, kept whole with why and when."""

    entry: Entry
    reason: ArchiveReason
    archived_at: datetime
    replaced_by: str | None = None


@dataclass(frozen=True)
class Skill:
    """A learned procedure for one site, app or flow, written by Nod for itself after a task."""

    name: str
    description: str
    body: str
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = None
    edited_by_owner: bool = False
    extends: str | None = None  # the built-in guide this flow is a case of, if any

    @property
    def used_at(self) -> datetime:
        """When it was last read, or made: what eviction compares."""
        return self.last_used_at or self.created_at


@dataclass(frozen=True)
class Maintenance:
    """Progress of the hourly job: the last reflected message id and recent failures."""

    watermark: int = 0
    failures: int = 0


@dataclass(frozen=True)
class MemoryDocument:
    """The whole memory of one owner."""

    entries: tuple[Entry, ...] = ()
    archive: tuple[ArchivedRecord, ...] = ()
    skills: tuple[Skill, ...] = ()
    maintenance: Maintenance = field(default_factory=Maintenance)

    def get(self, path: str) -> Entry | None:
        return next((e for e in self.entries if e.path == path), None)

    def in_area(self, area: str) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.area == area)
