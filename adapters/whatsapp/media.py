"""Fetching a WhatsApp voice note's audio, photo or document from Twilio into memory.

The account's credentials go to Twilio's API host only, never to an address a form names, and
the size is bounded while reading because Twilio declares none. Details: docs/channels.md.
"""

from __future__ import annotations

import base64
import logging

import aiohttp

from core.attachments.media import MediaRef
from core.errors import AttachmentTooLarge, AttachmentUnavailable, AudioTooLarge, AudioUnavailable, NodError
from core.message import VoiceNote

log = logging.getLogger("nod.whatsapp")
TWILIO_API = "https://api.twilio.com"
FETCH_TIMEOUT_S = 60.0
CHUNK = 64 * 1024


class TwilioMedia:
    def __init__(self, account_sid: str, auth_token: str, api_base_url: str | None = None,
                 timeout_s: float = FETCH_TIMEOUT_S) -> None:
        token = base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode("ascii")
        self._authorization = f"Basic {token}"
        self._base = (api_base_url or TWILIO_API).rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def url_for(self, media_url: str) -> str | None:
        """Where to fetch ``media_url`` with the credentials, or None when it is not Twilio's."""
        if media_url.startswith(TWILIO_API + "/"):
            media_url = self._base + media_url[len(TWILIO_API):]
        return media_url if media_url.startswith(self._base + "/") else None

    async def fetch(self, note: VoiceNote, max_bytes: int) -> bytes:
        return await self._fetch(note.source, max_bytes, AudioTooLarge, AudioUnavailable)

    async def fetch_media(self, media: MediaRef, max_bytes: int) -> bytes:
        """A photo's or document's bytes (the ``MediaSource`` port), from Twilio's host only."""
        return await self._fetch(media.source, max_bytes, AttachmentTooLarge, AttachmentUnavailable)

    async def _fetch(self, source: str, max_bytes: int, too_large: type[NodError], unavailable: type[NodError]) -> bytes:
        url = self.url_for(source)
        if url is None:
            log.warning("twilio_media_refused reason=not_twilio")
            raise unavailable("The file's address is not Twilio's.")
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.get(url, headers={"Authorization": self._authorization}) as response:
                if response.status != 200:
                    log.warning("twilio_media_unavailable status=%s", response.status)
                    raise unavailable(f"Twilio did not hand over the file (HTTP {response.status}).")
                if response.content_length is not None and response.content_length > max_bytes:
                    raise too_large("The file is larger than Nod reads.")
                return await _bounded(response, max_bytes, too_large)
        except (TimeoutError, aiohttp.ClientError) as exc:
            log.warning("twilio_media_unavailable error=%s", type(exc).__name__)
            raise unavailable("Twilio could not be reached for the file.") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


async def _bounded(response: aiohttp.ClientResponse, max_bytes: int, too_large: type[NodError]) -> bytes:
    data = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        data.extend(chunk)
        if len(data) > max_bytes:
            raise too_large("The file is larger than Nod reads.")
    return bytes(data)
