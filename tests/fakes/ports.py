"""In-memory fakes of the storage ports (``core.ports``) and of the chat-model port (the message
ports and the unit of work: ``tests/fakes/messages.py``).

They let unit tests run the turn and the saving rules with no database and no server.
They keep the ports' promises that the rules rely on (a compare-and-swap memory, requests
awaiting until answered, a redelivered message stored once, what is refused), and
``tests/contract`` proves it: the same tests pass on them, on SQLite and on PostgreSQL.
They also count what was asked of them, so a test can say "the memory document was read once".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import TypeVar

from core.agent.chat import ChatReply, ChatRequest
from core.agent.usage import PurposeTotal, UsageRecord
from core.errors import AlreadyExists, InvalidInput, ModelError, NotFound, StorageError
from core.history.scope import Hit, Scope
from core.memory.codec import decode
from core.memory.document import fit_and_encode
from core.memory.values import MemoryDocument
from core.message import StoredMessage
from core.owner import Identity, Owner, OwnerSettings, check_time_zone
from core.ports import Changed, Saved, VersionedDocument
from core.text import stem

T = TypeVar("T")
UNSCRIPTED = "(no scripted reply)"  # what QueueModel answers when nothing is scripted


@dataclass
class MemoryDocuments:
    """A compare-and-swap memory in a dict; ``loads`` counts reads, the snapshot test reads it.

    Kept as the store keeps it, encoded and trimmed to fit (or refused: MemoryFull), and
    decoded on every load, so what a test reads back is what the database would give.
    """

    stored: dict[int, tuple[str, int]] = field(default_factory=dict)  # owner → (body, version)
    loads: int = 0

    async def load(self, owner_id: int) -> VersionedDocument:
        self.loads += 1
        return self._current(owner_id)

    def _current(self, owner_id: int) -> VersionedDocument:
        if owner_id not in self.stored:
            return VersionedDocument(MemoryDocument(), 0)
        body, version = self.stored[owner_id]
        return VersionedDocument(decode(body), version)

    async def update(self, owner_id: int, operation: Callable[[MemoryDocument], MemoryDocument]) -> VersionedDocument:
        saved = await self.apply(owner_id, lambda doc: Changed(operation(doc), None))
        return VersionedDocument(saved.document, saved.version)

    async def apply(self, owner_id: int, operation: Callable[[MemoryDocument], Changed[T]]) -> Saved[T]:
        current = self._current(owner_id)
        outcome = operation(current.document)
        if outcome.document is current.document:
            return Saved(current.document, current.version, outcome.result)
        fitted, body = fit_and_encode(outcome.document)
        self.stored[owner_id] = (body, current.version + 1)
        return Saved(fitted, current.version + 1, outcome.result)


@dataclass
class MemoryOwners:
    """Owners in dicts, refusing what the store refuses (a taken name or identity, a blank name, an unknown zone)."""

    owners: dict[int, Owner] = field(default_factory=dict)
    links: dict[Identity, int] = field(default_factory=dict)

    async def add(self, name: str, time_zone: str, links: tuple[Identity, ...], now: datetime) -> Owner:
        name = name.strip()
        if not name:
            raise InvalidInput("An owner needs a name.")
        check_time_zone(time_zone)
        if any(o.name == name for o in self.owners.values()) or any(link in self.links for link in links):
            raise AlreadyExists(f"The owner {name!r} or one of those identities is already registered.")
        owner = Owner(len(self.owners) + 1, name, time_zone, OwnerSettings(), now)
        self.owners[owner.id] = owner
        self.links.update({link: owner.id for link in links})
        return owner

    async def by_id(self, owner_id: int) -> Owner:
        if owner_id not in self.owners:
            raise NotFound(f"No owner with id {owner_id}.")
        return self.owners[owner_id]

    async def by_name(self, name: str) -> Owner:
        found = next((o for o in self.owners.values() if o.name == name), None)
        if found is None:
            raise NotFound(f"No owner named {name!r}; add one with `nod owners add`.")
        return found

    async def by_identity(self, link: Identity) -> Owner | None:
        found = self.links.get(link)
        return self.owners[found] if found is not None else None

    async def identities(self, owner_id: int) -> tuple[Identity, ...]:
        return tuple(link for link, owner in self.links.items() if owner == owner_id)

    async def all(self) -> list[tuple[Owner, tuple[Identity, ...]]]:
        return [(o, await self.identities(o.id)) for o in self.owners.values()]

    async def update_settings(self, owner_id: int, change: Callable[[OwnerSettings], OwnerSettings]) -> Owner:
        owner = await self.by_id(owner_id)
        self.owners[owner_id] = replace(owner, settings=change(owner.settings))
        return self.owners[owner_id]


@dataclass
class MemoryUsage:
    rows: list[UsageRecord] = field(default_factory=list)
    sums: int = 0  # how often the month's cost was summed

    async def record(self, row: UsageRecord) -> None:
        self.rows.append(row)

    async def spent_since(self, owner_id: int, start: datetime) -> float:
        self.sums += 1
        return sum(r.cost_usd for r in self.rows if r.owner_id == owner_id and r.created_at >= start)

    async def by_purpose(self, owner_id: int, start: datetime) -> list[PurposeTotal]:
        totals: dict[str, PurposeTotal] = {}
        for r in self.rows:
            if r.owner_id == owner_id and r.created_at >= start:
                t = totals.get(r.purpose, PurposeTotal(r.purpose, 0, 0, 0, 0.0))
                totals[r.purpose] = PurposeTotal(r.purpose, t.calls + 1, t.tokens_in + r.tokens_in, t.tokens_out + r.tokens_out,
                                                 t.cost_usd + r.cost_usd, t.cached_tokens + r.cached_tokens,
                                                 t.estimated_calls + r.estimated)
        return [totals[purpose] for purpose in sorted(totals)]


@dataclass
class MemoryLocks:
    """Per-owner try-locks for maintenance (core.maintenance.tick.OwnerLocks) in one process."""

    held: set[int] = field(default_factory=set)

    def hold(self, owner_id: int) -> _Held:
        return _Held(self, owner_id)


@dataclass
class _Held:
    locks: MemoryLocks
    owner_id: int
    got: bool = False

    async def __aenter__(self) -> bool:
        self.got = self.owner_id not in self.locks.held
        self.locks.held.add(self.owner_id)
        return self.got

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self.got:
            self.locks.held.discard(self.owner_id)


class NoConversation:
    """The database's reads (the Conversation port and its Matcher) with no message stored: no older
    related messages and nothing to search (unit tests of turns)."""

    async def current(self, owner_id: int) -> tuple[int, int] | None:
        return None

    async def count_matches(self, terms: Sequence[str], scope: Scope, own_words: bool = False) -> int:
        return 0

    async def ranked(self, terms: Sequence[str], scope: Scope, limit: int, offset: int = 0) -> list[Hit]:
        return []

    async def ranked_and_counted(self, terms: Sequence[str], scope: Scope, limit: int) -> tuple[list[Hit], int]:
        return [], 0

    async def which_match(self, terms: Sequence[str], scope: Scope, ids: Sequence[int]) -> set[int]:
        return set()

    async def newest(self, terms: Sequence[str], scope: Scope, limit: int, offset: int) -> list[int]:
        return []

    async def frequencies(self, terms: Sequence[str], thread_id: int) -> tuple[int, dict[str, int]]:
        return 1, {stem(term): 0 for term in terms}

    async def count_period(self, scope: Scope) -> int:
        return 0

    async def period(self, scope: Scope, newest_first: bool, limit: int, offset: int) -> list[int]:
        return []

    async def neighbours(self, thread_id: int, ids: Sequence[int], reach: int) -> dict[int, tuple[int | None, ...]]:
        return {}

    async def shown(
        self, thread_id: int, ids: Sequence[int]
    ) -> tuple[dict[int, StoredMessage], dict[int, tuple[int | None, int | None]]]:
        return {}, {i: (None, None) for i in ids}

    async def window(self, thread_id: int, message_id: int, each_side: int) -> list[int]:
        return []

    async def related(self, thread_id: int, request: str, older_than: int, count: int) -> list[StoredMessage]:
        return []


class FixedKeys:
    """The keys a migrated database holds (only the cursor signing key), each fixed."""

    async def key(self, name: str) -> bytes:
        if name != "signing_key":
            raise StorageError(f"The database has no {name}; start Nod once so it can migrate the database.")
        return b"k" * 32


@dataclass
class QueueModel:
    """The chat-model port as queues of replies (simonw/llm's MockModel.enqueue); keeps every request.

    A reply scripted for a purpose (a structured call's schema name, DESIGN.md) answers only
    calls of that purpose, as the scripted server's do; a ``ModelError`` in a queue is raised,
    as an adapter raises it (``ModelUnavailable`` for a server that is down).
    """

    replies: deque[ChatReply | ModelError] = field(default_factory=deque)
    requests: list[ChatRequest] = field(default_factory=list)
    by_purpose: dict[str, deque[ChatReply | ModelError]] = field(default_factory=dict)

    def enqueue(self, *replies: ChatReply | ModelError, purpose: str | None = None) -> QueueModel:
        (self.replies if purpose is None else self.by_purpose.setdefault(purpose, deque())).extend(replies)
        return self

    def calls(self, purpose: str | None = None) -> list[ChatRequest]:
        """The requests of ``purpose`` (None: the agent's, which ask for no schema), in order."""
        return [r for r in self.requests if (r.schema.name if r.schema else None) == purpose]

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        purpose = request.schema.name if request.schema else None
        queue = self.by_purpose.get(purpose, self.replies) if purpose is not None else self.replies
        reply = queue.popleft() if queue else ChatReply(UNSCRIPTED)
        if isinstance(reply, ModelError):
            raise reply
        return reply

    async def close(self) -> None:
        pass

