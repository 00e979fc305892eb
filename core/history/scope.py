"""What a search may see and what a matcher returns: values shared by every backend."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

CONTEXT_WEIGHT = 0.4  # the previous message's words count this much of the message's own


@dataclass(frozen=True)
class Scope:
    """Which messages a search may see: one thread, up to a snapshot id, within dates."""

    thread_id: int
    snapshot: int
    start: datetime | None = None
    end: datetime | None = None
    before: datetime | None = None


# A text as re-ranking reads it: each sentence's stems, and whether it is a question.
Shape = tuple[tuple[tuple[str, ...], bool], ...]


@dataclass(frozen=True)
class Hit:
    """A match. The SQL backends give its text; the derived index gives its ``shape`` and
    its ``seq`` (its place among the thread's messages) from its own fields instead, so
    re-ranking needs no round trip to the database."""

    id: int
    role: str
    text: str
    score: float
    sent_at: datetime
    shape: Shape | None = None
    seq: int | None = None


