"""The outside world's ports: the models, the channels' files and replies, Google's accounts and mail.
"""

from __future__ import annotations

from typing import Protocol

from core.agent.chat import ChatReply, ChatRequest
from core.attachments.media import MediaRef
from core.gmail.values import Consent, Grant, MailMessage
from core.message import VoiceNote
from core.owner import Identity, Owner
from core.replies import Reply
from core.schedules.model import Schedule
from core.voice import Audio, Transcript


class GoogleAccounts(Protocol):
    """Google's OAuth 2.0 web-server flow: consent, the code exchange, refresh and revocation."""

    def consent(self, state: str) -> Consent: ...

    async def exchange(self, code: str, code_verifier: str | None) -> Grant: ...

    async def access_token(self, refresh_token: str) -> str: ...

    async def revoke(self, refresh_token: str) -> bool: ...


class MailSource(Protocol):
    """The owner's sent mail, newest first, decoded to headers and plain text."""

    async def sent(self, access_token: str, limit: int) -> list[MailMessage]: ...


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
