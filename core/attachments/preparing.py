"""Reading a turn's photos and documents before it answers: fetch, bound, prepare, in memory only.

Nothing of a file is stored, so a turn a crash cut short fetches it again from the channel's
reference. Details: docs/turn.md, "Photos and documents in a turn".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.agent.slots import waiting_elsewhere
from core.attachments.documents import attachment_block, extracted
from core.attachments.images import SeenImage, prepared
from core.attachments.media import (
    DOCUMENT_TOO_BIG,
    IMAGE_TOO_BIG,
    MAX_IMAGES_PER_TURN,
    NO_VISION,
    NO_VISION_ALONE,
    UNREAD,
    UNSEEN,
    MediaKind,
    MediaRef,
    max_bytes,
    refusal,
)
from core.errors import AttachmentError, AttachmentTooLarge
from core.message import StoredMessage
from core.ports import MediaSource, Messages

log = logging.getLogger("nod.attachments")
READ_DEADLINE_S = 30.0  # a PDF that takes longer to read is given up on (the thread finishes on its own)


@dataclass(frozen=True)
class Attachments:
    """What the turn's model is shown besides the words: images and untrusted document blocks;
    and the sentences the owner is told about the files that could not be read."""

    images: tuple[SeenImage, ...] = ()
    blocks: tuple[str, ...] = ()
    sentences: tuple[str, ...] = ()
    silent_request: bool = False  # the request has no words of its own (a file without a caption)

    @property
    def shown(self) -> bool:
        return bool(self.images or self.blocks)

    @property
    def nothing_to_answer(self) -> bool:
        """No words and nothing read: the sentences answer instead of a turn."""
        return self.silent_request and not self.shown and bool(self.sentences)

    def preface(self, blind_now: bool) -> str:
        """The sentences to put before the answer; ``blind_now``: the model refused the images this turn."""
        said = list(self.sentences)
        if blind_now and self.images and NO_VISION not in said:
            said.append(NO_VISION)
        return " ".join(said)


NONE = Attachments()


class AttachmentReader:
    def __init__(self, messages: Messages, sources: Mapping[str, MediaSource], sees_images: Callable[[], bool]) -> None:
        self._messages = messages
        self._sources = dict(sources)
        self._sees_images = sees_images

    async def read(self, request: StoredMessage) -> Attachments:
        """Every awaiting attachment of the owner's up to ``request``, read (usually none: one query)."""
        pending = await self._messages.pending_media(request.owner_id, request.id)
        if not pending:
            return NONE
        images: list[SeenImage] = []
        blocks: list[str] = []
        sentences: list[str] = []
        for message in pending[-MAX_IMAGES_PER_TURN * 2:]:
            assert message.media is not None
            try:
                shown = await self._read_one(message, message.media)
            except AttachmentError as exc:
                log.info("attachment_not_read owner=%s message=%s error=%s", message.owner_id, message.id, type(exc).__name__)
                sentence = _sentence(message.media, exc)
                if sentence not in sentences:
                    sentences.append(sentence)
                continue
            if isinstance(shown, SeenImage):
                images.append(shown)
            else:
                blocks.append(shown)
        silent = request.attachment and request.media is not None
        return Attachments(tuple(images[-MAX_IMAGES_PER_TURN:]), tuple(blocks), tuple(sentences), silent)

    async def _read_one(self, message: StoredMessage, media: MediaRef) -> SeenImage | str:
        refused = refusal(media, self._sees_images(), with_words=not message.attachment)
        if refused is not None:
            raise _Refused(refused)
        source = self._sources.get(message.channel)
        if source is None:
            raise AttachmentError(f"No channel {message.channel!r} is running to fetch the file.")
        async with waiting_elsewhere():  # a download is waiting, not work: another turn may use the slot
            data = await source.fetch_media(media, max_bytes(media))
        if len(data) > max_bytes(media):  # a source that did not bound its read
            raise AttachmentTooLarge("The file is larger than Nod reads.")
        if media.kind is MediaKind.IMAGE:
            image = await asyncio.to_thread(prepared, data)
            log.info("image_read owner=%s message=%s bytes=%s", message.owner_id, message.id, len(data))
            return image
        work = asyncio.to_thread(extracted, data, media.content_type, media.filename)
        try:
            document = await asyncio.wait_for(work, READ_DEADLINE_S)
        except TimeoutError as exc:
            raise AttachmentError("The document took too long to read.") from exc
        log.info("document_read owner=%s message=%s bytes=%s chars=%s", message.owner_id, message.id, len(data),
                 len(document.text))
        return attachment_block(media, document)


class _Refused(AttachmentError):
    """Known before any download (no vision, declared too large); the message is the sentence."""


def _sentence(media: MediaRef, error: AttachmentError) -> str:
    if isinstance(error, _Refused):
        return str(error)
    image = media.kind is MediaKind.IMAGE
    if isinstance(error, AttachmentTooLarge):
        return IMAGE_TOO_BIG if image else DOCUMENT_TOO_BIG
    return UNSEEN if image else UNREAD


__all__ = ["NONE", "NO_VISION_ALONE", "AttachmentReader", "Attachments"]
