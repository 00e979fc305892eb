"""The ports: every Protocol the core needs from outside it — storage, search, the models, a channel.

The use cases are written against these and never import an I/O library; ``adapters`` implement
them, ``bot.wiring`` plugs them in, and the rules' tests run on in-memory fakes
(``tests/fakes/ports.py``) that ``tests/contract`` proves behave as the real stores do. The
values they carry live beside their rules (``core.message``, ``core.owner``, ``core.memory.values``…).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Generic, Protocol, TypeVar

from core.agent.usage import PurposeTotal, UsageRecord
from core.gmail.values import Connection, PendingConsent, RunReport
from core.memory.values import MemoryDocument
from core.message import Appended, Edited, Message, Owed, Role, StoredMessage
from core.owner import Identity, Owner, OwnerSettings

# every port is reachable as core.ports.NAME, wherever it is written
from core.ports.outside import (
    AudioSource as AudioSource,
)
from core.ports.outside import (
    ChatModel as ChatModel,
)
from core.ports.outside import (
    GoogleAccounts as GoogleAccounts,
)
from core.ports.outside import (
    MailSource as MailSource,
)
from core.ports.outside import (
    MediaSource as MediaSource,
)
from core.ports.outside import (
    PageLinks as PageLinks,
)
from core.ports.outside import (
    ReplySink as ReplySink,
)
from core.ports.outside import (
    TaskRuns as TaskRuns,
)
from core.ports.outside import (
    Transcriber as Transcriber,
)
from core.ports.search import (
    Conversation as Conversation,
)
from core.ports.search import (
    Matcher as Matcher,
)
from core.ports.search import (
    MessageLookup as MessageLookup,
)
from core.ports.search import (
    Neighbours as Neighbours,
)
from core.ports.search import (
    Placed as Placed,
)
from core.ports.search import (
    SearchIndex as SearchIndex,
)
from core.schedules.model import DueRun, Kind, Schedule

T = TypeVar("T")


@dataclass(frozen=True)
class VersionedDocument:
    """A memory document as stored, with the version a compare-and-swap names."""

    document: MemoryDocument
    version: int


@dataclass(frozen=True)
class Changed(Generic[T]):
    """What a memory operation made: the new document, and what it reports (saved paths, counts…)."""

    document: MemoryDocument
    result: T


@dataclass(frozen=True)
class Saved(Generic[T]):
    """The document as saved (or found unchanged) and what the operation reported on that try."""

    document: MemoryDocument
    version: int
    result: T


class MessageWrites(Protocol):
    """What a unit of work stores of the conversation."""

    async def append(self, message: Message) -> Appended: ...


class MessageLog(MessageWrites, Protocol):
    """The conversation as stored: the owner's words and Nod's, in threads."""

    async def edit(self, owner_id: int, channel: str, platform_id: str, text_: str, edited_at: datetime) -> Edited | None: ...

    async def get(self, message_id: int) -> StoredMessage | None: ...

    async def get_many(self, ids: Iterable[int]) -> Mapping[int, StoredMessage]: ...

    async def recent(self, owner_id: int, limit: int, role: Role | None = None) -> list[StoredMessage]: ...

    async def thread_tail(self, thread_id: int, limit: int) -> list[StoredMessage]: ...

    async def owner_messages_after(
        self, owner_id: int, after_id: int, limit: int, sent_before: datetime) -> list[StoredMessage]: ...

    async def active_thread(self, owner_id: int) -> int: ...

    async def reset_thread(self, owner_id: int) -> int: ...


class RequestWrites(Protocol):
    """Owner messages awaiting their answer, settled in a unit of work with what answers them."""

    async def claim(self, request_id: int, owner_id: int) -> bool:
        """Settle the owner's requests up to ``request_id``; False (nothing settled) when it no
        longer awaited: answered elsewhere, or stopped."""
        ...

    async def retire(self, message_id: int) -> None:
        """The message awaits no answer of its own any more (its transcript does), its voice note's reference dropped."""
        ...


class Requests(Protocol):
    """Owner messages awaiting their answer: found after a crash, settled by /stop."""

    async def settle(self, owner_id: int, up_to: int | None = None) -> None: ...

    async def is_awaiting(self, message_id: int) -> bool: ...

    async def newest_awaiting(self, owner_id: int) -> StoredMessage | None: ...

    async def awaiting_requests(self) -> list[StoredMessage]: ...


class OutboxWrites(Protocol):
    """A stored reply owed to its channel, recorded in the unit of work that stores it."""

    async def owe(self, reply: StoredMessage, unprompted: bool = False) -> None: ...


class Outbox(Protocol):
    """Replies stored but not yet handed to their channel."""

    async def delivered(self, reply_id: int) -> bool: ...

    async def undelivered(self, stored_before: datetime, channels: Collection[str], limit: int = 100) -> list[Owed]: ...


class PendingFiles(Protocol):
    """Voice notes not yet transcribed, photos and documents not yet read: the channel's references."""

    async def pending_voice(self, owner_id: int, up_to: int) -> list[StoredMessage]: ...

    async def drop_voice(self, note_id: int) -> None: ...

    async def pending_media(self, owner_id: int, up_to: int) -> list[StoredMessage]: ...


class Messages(MessageLog, Requests, Outbox, PendingFiles, Protocol):
    """The four concerns as one message store implements them (what a use case needs all of)."""


class RunWrites(Protocol):
    """A schedule's claimed run, finished in the unit of work that stores what it sends."""

    async def mark_sent(self, run: DueRun) -> bool:
        """Claimed → sent; False when it was finished already (another worker, or before a restart)."""
        ...

    async def link_reply(self, run: DueRun, reply_id: int) -> None: ...


class Transaction(Protocol):
    """The stores of one unit of work, bound to its one transaction."""

    @property
    def messages(self) -> MessageWrites: ...

    @property
    def requests(self) -> RequestWrites: ...

    @property
    def outbox(self) -> OutboxWrites: ...

    @property
    def runs(self) -> RunWrites: ...


class UnitOfWork(Protocol):
    """Writes that commit together: ``async with uow() as tx:`` — all of them at the end of the
    block, none when it raises, and no reader sees some without the others.

    Only the transaction's stores are used inside it, and nothing slow (no model, no channel):
    on SQLite it holds the one write lock, so any other write in the block would wait for it.
    """

    def __call__(self) -> AbstractAsyncContextManager[Transaction]: ...


class Schedules(Protocol):
    """Reminders and scheduled tasks, and their runs (core.schedules)."""

    async def create(self, owner_id: int, kind: Kind, text: str, start_local: datetime, repeat: str | None,
                     next_run_at: datetime, now: datetime, created_from: int | None) -> Schedule: ...

    async def active(self, owner_id: int) -> list[Schedule]: ...

    async def cancel(self, owner_id: int, schedule_id: int, now: datetime) -> Schedule | None: ...

    async def rezone(self, owner_id: int, zone: str, now: datetime,
                     advance: Callable[[Schedule, str, datetime], tuple[datetime, datetime] | None]) -> int: ...

    async def next_due(self) -> datetime | None: ...

    async def claim_due(self, now: datetime, late_after: datetime, missed_before: datetime,
                        advance: Callable[[Schedule, str, datetime], tuple[datetime, datetime] | None],
                        limit: int = 100) -> list[DueRun]: ...

    async def retake_stale(self, now: datetime, claimed_before: datetime, missed_before: datetime,
                           limit: int = 100) -> list[DueRun]: ...

    async def undelivered(self, run: DueRun) -> None: ...

    async def untold(self, owner_id: int) -> list[tuple[Schedule, datetime, str]]: ...

    async def last_address(self, owner_id: int) -> tuple[str, str] | None: ...


class Keys(Protocol):
    """Secrets Nod keeps in its database (the cursor signing key), made with the database."""

    async def key(self, name: str) -> bytes: ...


class MemoryRepository(Protocol):
    """One memory document per owner, written only by compare-and-swap."""

    async def load(self, owner_id: int) -> VersionedDocument: ...

    async def update(self, owner_id: int, operation: Callable[[MemoryDocument], MemoryDocument]) -> VersionedDocument: ...

    async def apply(self, owner_id: int, operation: Callable[[MemoryDocument], Changed[T]]) -> Saved[T]: ...


class MemoryStore(MemoryRepository, Protocol):
    """The repository with its single compare-and-swap attempt: what a whole-document import writes with."""

    async def save(self, owner_id: int, document: MemoryDocument, expected_version: int) -> int: ...


class Owners(Protocol):
    async def add(self, name: str, time_zone: str, links: tuple[Identity, ...], now: datetime) -> Owner: ...

    async def by_id(self, owner_id: int) -> Owner: ...

    async def by_name(self, name: str) -> Owner: ...

    async def by_identity(self, link: Identity) -> Owner | None: ...

    async def identities(self, owner_id: int) -> tuple[Identity, ...]: ...

    async def all(self) -> list[tuple[Owner, tuple[Identity, ...]]]: ...

    async def update_settings(self, owner_id: int, change: Callable[[OwnerSettings], OwnerSettings]) -> Owner: ...


class OwnerZones(Owners, Protocol):
    """Owners whose time zone can be set outright (an import brings the exported one)."""

    async def set_time_zone(self, owner_id: int, time_zone: str) -> None: ...


class Receipts(Protocol):
    async def first(self, owner_id: int, channel: str, external_id: str, kind: str, now: datetime) -> bool: ...

    async def first_mark(self, key: str, now: datetime) -> bool: ...


class GmailConnections(Protocol):
    """Gmail connections (sealed refresh token, last run's counts) and the consents in progress."""

    async def add_consent(self, state_hash: str, pending: PendingConsent, now: datetime, expires_at: datetime) -> None: ...

    async def take_consent(self, state_hash: str, now: datetime, session_hash: str | None) -> PendingConsent | None: ...

    async def connect(self, owner_id: int, sealed_token: str, now: datetime) -> None: ...

    async def get(self, owner_id: int) -> Connection | None: ...

    async def record_run(self, owner_id: int, now: datetime, report: RunReport) -> None: ...

    async def delete(self, owner_id: int) -> bool: ...

    async def connected_owners(self) -> list[int]: ...


# More storage: locks, usage, page sessions
class TurnLocks(Protocol):
    """One turn per owner across worker processes (a PostgreSQL advisory lock)."""

    def turn(self, owner_id: int) -> AbstractAsyncContextManager[None]: ...

class OwnerLocks(Protocol):
    def hold(self, owner_id: int) -> LockContext: ...

class LockContext(Protocol):
    async def __aenter__(self) -> bool: ...

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        tb: TracebackType | None) -> None: ...

class UsageLedger(Protocol):
    """Where usage rows go and what the spending limit reads back."""

    async def record(self, row: UsageRecord) -> None: ...

    async def spent_since(self, owner_id: int, start: datetime) -> float: ...

    async def by_purpose(self, owner_id: int, start: datetime) -> list[PurposeTotal]: ...

class PageSessions(Protocol):
    async def add_link(self, token_hash: str, owner_id: int, now: datetime, expires_at: datetime) -> None: ...

    async def take_link(self, token_hash: str, now: datetime) -> int | None: ...

    async def add_session(self, session_hash: str, owner_id: int, now: datetime, expires_at: datetime) -> None: ...

    async def session_owner(self, session_hash: str, now: datetime) -> int | None: ...

    async def revoke_sessions(self, owner_id: int, now: datetime) -> int: ...
