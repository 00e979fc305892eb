"""What a search may see and what a matcher returns: values shared by every backend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

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


class Matcher(Protocol):
    """Finds and orders the messages matching a query's words: the database's index, or tantivy."""

    async def count_matches(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int:
        """Matches by a message's own words or its context; ``own_words``: its own words only."""
        ...

    async def ranked(self, terms: Sequence[str], scope: Scope, limit: int, offset: int = 0) -> list[Hit]: ...

    async def ranked_and_counted(self, terms: Sequence[str], scope: Scope, limit: int) -> tuple[list[Hit], int]:
        """The best ``limit`` matches and how many match in all (as ``count_matches``): one
        pass where the backend can, since a first page needs both."""
        ...

    async def newest(self, terms: Sequence[str], scope: Scope, limit: int, offset: int) -> list[int]:
        """Messages whose own words match (never only their context), newest first."""
        ...

    async def which_match(self, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]:
        """Which of ``ids`` match (own words or context) within the scope: those ``ranked`` may list."""
        ...

    async def frequencies(self, terms: Sequence[str], thread_id: int) -> tuple[int, dict[str, int]]:
        """How many messages are indexed, and how many each word's stem matches (capped counts):
        the thread's (the derived index) or the whole database's (its own full-text index)."""
        ...
