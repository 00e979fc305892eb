"""The search ports: what finds and places matching messages, and what a search reads besides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from core.history.scope import Hit, Scope
from core.message import StoredMessage


class Conversation(Protocol):
    """What a search reads besides its matches: the current thread, periods, neighbours, related messages."""

    async def current(self, owner_id: int) -> tuple[int, int] | None:
        """The owner's active thread and its last message id, in one read; None before the first."""
        ...

    async def count_period(self, scope: Scope) -> int: ...

    async def period(self, scope: Scope, newest_first: bool, limit: int, offset: int) -> list[int]: ...

    async def neighbours(self, thread_id: int, ids: Sequence[int], reach: int) -> dict[int, tuple[int | None, ...]]: ...

    async def shown(
        self, thread_id: int, ids: Sequence[int]
    ) -> tuple[dict[int, StoredMessage], dict[int, tuple[int | None, int | None]]]:
        """The messages ``ids`` (any owner's: the caller checks) and each one's neighbours
        (before, after) in the thread, in one read: what a page of results shows."""
        ...

    async def window(self, thread_id: int, message_id: int, each_side: int) -> list[int]: ...

    async def related(self, thread_id: int, request: str, older_than: int, count: int) -> list[StoredMessage]: ...


class SearchIndex(Protocol):
    """A faster index kept beside the database; it says per search what may answer."""

    async def usable_and_current(self, owner_id: int) -> tuple[bool, tuple[int, int] | None]:
        """Whether the index may answer now (built from this database as it is; rebuilt when
        not), and the owner's active thread and last message id as ``Conversation.current``
        reads them: a search needs both first, and the index reads them in one statement."""
        ...

    async def view(
        self, thread_id: int, snapshot: int, split: int | None = None, checked: bool = False
    ) -> tuple[Matcher, int] | None:
        """A Matcher for the thread up to ``snapshot`` and the split its cursors keep; None
        when the database's own index must answer. ``checked``: ``usable_and_current`` just said so."""
        ...




# Search: what finds and places matches, and a narrow look-up of stored messages
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

@runtime_checkable
class Placed(Protocol):
    """A matcher that finds a thread's messages by their places (the derived index)."""

    async def at_places(self, terms: Sequence[str], scope: Scope, places: Sequence[int]) -> list[tuple[Hit, bool]]:
        """The scope's messages at ``places``, each with whether it matches the words."""
        ...

class Neighbours(Protocol):
    async def neighbours(self, thread_id: int, ids: Sequence[int], reach: int) -> dict[int, tuple[int | None, ...]]:
        ...

class MessageLookup(Protocol):
    async def get_many(self, ids: Iterable[int]) -> Mapping[int, StoredMessage]: ...
