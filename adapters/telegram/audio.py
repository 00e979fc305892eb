"""Fetching a Telegram voice note's audio into memory: ``getFile``, then the download.

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
from core.errors import AudioTooLarge, AudioUnavailable, DeliveryFailed
from core.message import VoiceNote

log = logging.getLogger("nod.telegram")


class TelegramAudio:
    def __init__(self, bot: Bot, sender: TelegramSender) -> None:
        self._bot = bot
        self._sender = sender

    async def fetch(self, note: VoiceNote, max_bytes: int) -> bytes:
        try:
            file = await self._sender.retrying("getFile", lambda: self._bot.get_file(note.source))
            if file.file_size is not None and file.file_size > max_bytes:
                raise AudioTooLarge("The voice note is larger than Nod listens to.")
            data = await self._sender.retrying("download", lambda: file.download_as_bytearray())
        except BadRequest as exc:
            if "too big" in exc.message.lower():
                raise AudioTooLarge("Telegram says the voice note is too big to download.") from exc
            log.warning("telegram_audio_unavailable error=%s", type(exc).__name__)
            raise AudioUnavailable("Telegram would not hand over the voice note.") from exc
        except (DeliveryFailed, TelegramError, RuntimeError, OSError) as exc:  # RuntimeError: a file without a path
            log.warning("telegram_audio_unavailable error=%s", type(exc).__name__)
            raise AudioUnavailable("Telegram would not hand over the voice note.") from exc
        if len(data) > max_bytes:
            raise AudioTooLarge("The voice note is larger than Nod listens to.")
        return bytes(data)
