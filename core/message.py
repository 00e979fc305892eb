"""Messages as values: what the conversation is made of, apart from where it is kept.

These are pure values — the storage ports (``core.ports``) take and return them, and
nothing here knows a database. A message's id is the stored row's, shown to models as
the message id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from core.attachments.media import MediaRef
from core.errors import InvalidInput
from core.owner import Identity
from core.secrets import contains_secret
from core.text import storable

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)  # the sent times both backends hold
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class VoiceNote:
    """Where a channel can fetch a voice note's audio again — never the audio itself.

    The audio is kept in memory only while it is transcribed; what is stored is this
    reference, so a turn a crash interrupted can fetch it once more. ``source`` is the
    channel's own handle (a Telegram file_id, a Twilio media URL); the sizes are what the
    platform declared, checked before anything is downloaded.
    """

    source: str
    filename: str  # the upload's name: its ending tells the transcription server the format
    content_type: str | None = None
    size_bytes: int | None = None
    duration_s: int | None = None

    def to_json(self) -> str:
        return json.dumps({"source": self.source, "filename": self.filename, "content_type": self.content_type,
                           "size_bytes": self.size_bytes, "duration_s": self.duration_s})

    @classmethod
    def from_json(cls, raw: str | None) -> VoiceNote | None:
        """The stored reference, or None when there is none (or it cannot be read: then it is not retried)."""
        if not raw:
            return None
        try:
            data: Any = json.loads(raw)
            return cls(str(data["source"]), str(data["filename"]), _optional_str(data.get("content_type")),
                       _optional_int(data.get("size_bytes")), _optional_int(data.get("duration_s")))
        except (ValueError, TypeError, KeyError):
            return None


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _optional_int(value: object) -> int | None:
    return value if type(value) is int else None


class Role(str, Enum):
    OWNER = "owner"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True)
class Message:
    """A message as said: made once, when Nod receives or writes it, with the rules of a stored message applied.

    Making one applies what every store would otherwise apply on its own: the sent time has a
    zone and lies within what both backends hold (1900-2199), the text is storable
    (``core.text.storable``) and ``secret`` is detected (``core.secrets``) — once, here, so
    every later reader (memory, reflection) can skip a secret without looking again.
    """

    owner_id: int
    role: Role
    text: str
    channel: str
    sent_at: datetime
    external_id: str | None = None
    card_title: bool = False
    attachment: bool = False
    forwarded: bool = False
    origin: str | None = None
    address: str | None = None  # who on the channel sent it: the reply goes there
    awaiting: bool = False  # an owner request whose turn has not answered yet
    voice: bool = False  # the text was transcribed from the owner's voice note
    voice_note: VoiceNote | None = None  # a voice note waiting to be transcribed (the placeholder row)
    media: MediaRef | None = None  # a photo or document, by the channel's reference (read in the turn)
    platform_id: str | None = None  # the platform's own id of the message: an edit finds it by this
    secret: bool = field(init=False, default=False)  # detected as it is made

    def __post_init__(self) -> None:
        if self.sent_at.tzinfo is None:
            raise InvalidInput("A message's sent time needs a time zone.")
        if not EARLIEST <= self.sent_at < LATEST:
            raise InvalidInput("A message's sent time must be between the years 1900 and 2199.")
        text, secret = _as_written(self.text)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "secret", secret)


@dataclass(frozen=True, kw_only=True)
class StoredMessage(Message):
    """A message as stored: its id (shown to models as the message id), its thread, and the secret
    flag it was given when it was written — read back as it is, never worked out again."""

    id: int
    thread_id: int
    secret: bool

    def __post_init__(self) -> None:
        """Read back as stored: its rules were applied when it was made."""

    def edited(self, text: str) -> StoredMessage:
        """The message with new words, made as a message is (storable, the secret flag detected
        anew); a photo's placeholder that gets a caption becomes the owner's words."""
        words, secret = _as_written(text)
        return replace(self, text=words, secret=secret, attachment=self.attachment and self.media is None)


def _as_written(text: str) -> tuple[str, bool]:
    """The text as both backends store it, and whether it holds a secret."""
    words = storable(text)
    return words, contains_secret(words)


@dataclass(frozen=True)
class Owed:
    """A stored reply no channel has taken yet (the outbox); ``unprompted``: Nod spoke first."""

    message: StoredMessage
    unprompted: bool = False


@dataclass(frozen=True)
class Edited:
    """A message as an edit left it, and whether its words changed (a redelivered edit changes nothing)."""

    message: StoredMessage
    changed: bool


@dataclass(frozen=True)
class Appended:
    message: StoredMessage
    created: bool


@dataclass(frozen=True)
class Aside:
    """Text that came with a message but is not the owner's words: a quote, a forward, a file."""

    text: str
    forwarded: bool = False
    attachment: bool = False


@dataclass(frozen=True)
class Inbound:
    """What someone wrote on a channel, as every channel hands it in: the one arriving value.

    A channel makes it from its platform's message; the front door decides who the sender
    is (an owner, or a stranger) and whether it is a command; the conductor stores it and
    answers it. ``sender`` is the channel and who on it wrote — the reply goes back there.
    """

    sender: Identity
    text: str
    external_id: str | None = None  # the platform's id: a redelivery of the same one is a no-op
    display_name: str | None = None
    card_title: bool = False  # a button the owner tapped: Nod's wording
    attachment: bool = False
    forwarded: bool = False  # not the owner's words
    asides: tuple[Aside, ...] = ()
    sent_at: datetime | None = None  # the platform's time, when it gives one
    voice: VoiceNote | None = None  # a voice note to transcribe; ``text`` is then its placeholder
    media: MediaRef | None = None  # a photo or document to read in the turn; ``text`` is its caption or label
    platform_id: str | None = None  # the platform's id of the message (an edit names it)
    edited: bool = False  # a new text for the message stored under ``platform_id``, not a new message

    @property
    def channel(self) -> str:
        return self.sender.channel
