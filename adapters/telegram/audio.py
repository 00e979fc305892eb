"""Fetching a Telegram voice note's audio, photo or document into memory: ``getFile``, then the download.

The reference stored with the note is its ``file_id``, which stays valid, so a turn a
restart recovers can fetch the audio again. ``getFile`` declares the size (and refuses
files over 20 MB: "file is too big"), checked before the download; the bytes are checked
again after it. python-telegram-bot's ``download_as_bytearray`` keeps them in memory —
nothing is written to disk. ``getFile`` and the download are retried by the sender's
rules (flood control, 5xx, timeouts); both only read.
"""

from __future__ import annotations

import logging

from telegram import Bot
from telegram.error import BadRequest, TelegramError

from adapters.telegram.sink import TelegramSender
from core.attachments.media import MediaRef
from core.errors import AttachmentTooLarge, AttachmentUnavailable, AudioTooLarge, AudioUnavailable, DeliveryFailed, NodError
from core.message import VoiceNote

log = logging.getLogger("nod.telegram")


class TelegramAudio:
    def __init__(self, bot: Bot, sender: TelegramSender) -> None:
        self._bot = bot
        self._sender = sender

    async def fetch(self, note: VoiceNote, max_bytes: int) -> bytes:
        return await self._fetch(note.source, max_bytes, AudioTooLarge, AudioUnavailable)

    async def fetch_media(self, media: MediaRef, max_bytes: int) -> bytes:
        """A photo's or document's bytes (the ``MediaSource`` port)."""
        return await self._fetch(media.source, max_bytes, AttachmentTooLarge, AttachmentUnavailable)

    async def _fetch(self, file_id: str, max_bytes: int, too_large: type[NodError], unavailable: type[NodError]) -> bytes:
        try:
            file = await self._sender.retrying("getFile", lambda: self._bot.get_file(file_id))
            if file.file_size is not None and file.file_size > max_bytes:
                raise too_large("The file is larger than Nod reads.")
            data = await self._sender.retrying("download", lambda: file.download_as_bytearray())
        except BadRequest as exc:
            if "too big" in exc.message.lower():
                raise too_large("Telegram says the file is too big to download.") from exc
            log.warning("telegram_file_unavailable error=%s", type(exc).__name__)
            raise unavailable("Telegram would not hand over the file.") from exc
        except (DeliveryFailed, TelegramError, RuntimeError, OSError) as exc:  # RuntimeError: a file without a path
            log.warning("telegram_file_unavailable error=%s", type(exc).__name__)
            raise unavailable("Telegram would not hand over the file.") from exc
        if len(data) > max_bytes:
            raise too_large("The file is larger than Nod reads.")
        return bytes(data)
