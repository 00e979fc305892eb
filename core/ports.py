"""The ports: every Protocol the core needs from outside it — storage, search, the models, a channel.

The use cases are written against these and never import an I/O library; ``adapters`` implement
them, ``bot.wiring`` plugs them in, and the rules' tests run on in-memory fakes
(``tests/fakes/ports.py``) that ``tests/contract`` proves behave as the real stores do. The
values they carry live beside their rules (``core.message``, ``core.owner``, ``core.memory.model``…).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Generic, Protocol, TypeVar, runtime_checkable

from core.agent.model import ChatReply, ChatRequest
from core.agent.usage import PurposeTotal, UsageRecord
from core.attachments.model import MediaRef
from core.gmail.model import Connection, Consent, Grant, MailMessage, PendingConsent, RunReport
from core.history.scope import Hit, Scope
from core.memory.model import MemoryDocument
from core.message import Appended, Edited, NewMessage, Owed, Role, StoredMessage, VoiceNote
from core.owner import Identity, Owner, OwnerSettings
from core.replies import Reply
from core.schedules.model import DueRun, Kind, Schedule
from core.voice import Audio, Transcript

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


class MessageLog(Protocol):
    """The conversation as stored: the owner's words and Nod's, in threads."""

    async def append(self, message: NewMessage) -> Appended: ...

    async def edit(self, owner_id: int, channel: str, platform_id: str, text_: str, edited_at: datetime) -> Edited | None: ...

    async def get(self, message_id: int) -> StoredMessage | None: ...

    async def get_many(self, ids: Iterable[int]) -> Mapping[int, StoredMessage]: ...

    async def recent(self, owner_id: int, limit: int, role: Role | None = None) -> list[StoredMessage]: ...

    async def thread_tail(self, thread_id: int, limit: int) -> list[StoredMessage]: ...

    async def owner_messages_after(
        self, owner_id: int, after_id: int, limit: int, sent_before: datetime) -> list[StoredMessage]: ...

    async def active_thread(self, owner_id: int) -> int: ...

    async def reset_thread(self, owner_id: int) -> int: ...


class Requests(Protocol):
    """Owner messages awaiting their answer: claimed, answered (reply and settlement together) or settled."""

    async def answer(self, request_id: int, owner_id: int, reply: NewMessage) -> StoredMessage | None: ...

    async def claim(self, request_id: int, owner_id: int) -> bool: ...

    async def settle(self, owner_id: int, up_to: int | None = None) -> None: ...

    async def is_awaiting(self, message_id: int) -> bool: ...

    async def newest_awaiting(self, owner_id: int) -> StoredMessage | None: ...

    async def awaiting_requests(self) -> list[StoredMessage]: ...


class Outbox(Protocol):
    """Replies stored but not yet handed to their channel."""

    async def delivered(self, reply_id: int) -> bool: ...

    async def undelivered(self, stored_before: datetime, channels: Collection[str], limit: int = 100) -> list[Owed]: ...


class PendingFiles(Protocol):
    """Voice notes not yet transcribed, photos and documents not yet read: the channel's references."""

    async def pending_voice(self, owner_id: int, up_to: int) -> list[StoredMessage]: ...

    async def transcribed(self, note_id: int, transcript: NewMessage) -> StoredMessage: ...

    async def drop_voice(self, note_id: int) -> None: ...

    async def pending_media(self, owner_id: int, up_to: int) -> list[StoredMessage]: ...


class Messages(MessageLog, Requests, Outbox, PendingFiles, Protocol):
    """The four concerns as one message store implements them (what a use case needs all of)."""


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

    async def finish(self, run: DueRun, reply: NewMessage) -> StoredMessage | None: ...

    async def undelivered(self, run: DueRun) -> None: ...

    async def untold(self, owner_id: int) -> list[tuple[Schedule, datetime, str]]: ...

    async def last_address(self, owner_id: int) -> tuple[str, str] | None: ...


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


class GoogleAccounts(Protocol):
    """Google's OAuth 2.0 web-server flow: consent, the code exchange, refresh and revocation."""

    def consent(self, state: str) -> Consent: ...

    async def exchange(self, code: str, code_verifier: str | None) -> Grant: ...

    async def access_token(self, refresh_token: str) -> str: ...

    async def revoke(self, refresh_token: str) -> bool: ...


class MailSource(Protocol):
    """The owner's sent mail, newest first, decoded to headers and plain text."""

    async def sent(self, access_token: str, limit: int) -> list[MailMessage]: ...


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


# The outside world: models, the channels' files
class ChatModel(Protocol):
    async def complete(self, request: ChatRequest) -> ChatReply:
        """One model call; raises ModelError (or a subclass) when there is no usable reply."""
        ...

    async def close(self) -> None:
        """Release the connections (the process is shutting down)."""
        ...

class AudioSource(Protocol):
    """One channel's way to fetch a voice note's audio into memory.

    Raises AudioTooLarge past ``max_bytes`` (declared or read) and AudioUnavailable when the
    platform cannot hand it over.
    """

    async def fetch(self, note: VoiceNote, max_bytes: int) -> bytes: ...

class Transcriber(Protocol):
    """An OpenAI-compatible transcription endpoint; raises ModelError when there is no text."""

    async def transcribe(self, model: str, audio: Audio) -> Transcript: ...

    async def close(self) -> None: ...

class MediaSource(Protocol):
    """One channel's way to fetch a photo's or document's bytes into memory.

    Raises AttachmentTooLarge past ``max_bytes`` (declared or read) and AttachmentUnavailable
    when the platform cannot hand it over (or the reference is not the channel's own).
    """

    async def fetch_media(self, media: MediaRef, max_bytes: int) -> bytes: ...


# A channel's side
class ReplySink(Protocol):
    """The channel's way back to the owner at ``to``; raises DeliveryFailed when it gives up."""

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None: ...

class PageLinks(Protocol):
    """The memory page's sign-in links (core.page.access), when the page is on."""

    async def link(self, owner_id: int) -> str: ...

    async def revoke(self, owner_id: int) -> int: ...

class TaskRuns(Protocol):
    """Runs a scheduled task's instruction as an agent turn (core.agent.scheduled)."""

    async def run(self, owner: Owner, schedule: Schedule) -> str: ...


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
