"""Messages as values: what the conversation is made of, apart from where it is kept.

These are pure values — the storage ports (``core.ports``) take and return them, and
nothing here knows a database. A message's id is the stored row's, shown to models as
the message id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from core.owner import Identity


class Role(str, Enum):
    OWNER = "owner"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True)
class NewMessage:
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


@dataclass(frozen=True)
class StoredMessage:
    id: int
    owner_id: int
    thread_id: int
    role: Role
    text: str
    sent_at: datetime
    channel: str
    external_id: str | None
    card_title: bool
    attachment: bool
    forwarded: bool
    secret: bool
    origin: str | None
    address: str | None = None
    awaiting: bool = False


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

    @property
    def channel(self) -> str:
        return self.sender.channel
