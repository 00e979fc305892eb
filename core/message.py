"""Messages as values: what the conversation is made of, apart from where it is kept.

These are pure values — the storage ports (``core.ports``) take and return them, and
nothing here knows a database. A message's id is the stored row's, shown to models as
the message id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum


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
