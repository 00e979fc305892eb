"""The owner's sent mail from the Gmail REST API, with aiohttp (``core.ports.MailSource``).

Two calls, as Google documents them: ``messages.list`` with ``q=in:sent`` and
``maxResults``, then ``messages.get`` with ``format=full`` for each id (a few at a time).
aiohttp directly, not google-api-python-client: the loop is already aiohttp's, two GET
routes need no discovery document, and the client library's synchronous ``httplib2``
would need a worker thread per call. A message's text is its ``text/plain`` parts,
base64url-decoded (HTML stripped to text when a mail has no plain part); a
``text/calendar`` part marks it as the calendar's. Nothing of a mail is logged: failures
name the HTTP status only.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import html
import logging
import re
from typing import Any

import aiohttp

from core.errors import MailAccessLost, MailError
from core.gmail.values import MailMessage

log = logging.getLogger("nod.gmail.mail")
GMAIL_API = "https://gmail.googleapis.com"
AT_ONCE = 5
TIMEOUT_S = 30.0
_TAG = re.compile(r"<[^>]+>")
_BLOCK = re.compile(r"(?i)<\s*(br|/p|/div|/li|/tr|/h\d)\b[^>]*>")
_DROPPED = re.compile(r"(?is)<\s*(style|script|head)\b.*?<\s*/\s*\1\s*>")
_QUOTED_HTML = re.compile(r"(?is)<blockquote\b.*?</blockquote>|<div class=\"gmail_quote.*$")


def _decode(data: str | None) -> str:
    if not data:
        return ""
    try:
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


def _html_text(markup: str) -> str:
    markup = _QUOTED_HTML.sub("", _DROPPED.sub("", markup))
    return html.unescape(_TAG.sub("", _BLOCK.sub("\n", markup))).strip()


def _parts(part: dict[str, Any]) -> list[dict[str, Any]]:
    found = [part]
    for child in part.get("parts") or []:
        if isinstance(child, dict):
            found += _parts(child)
    return found


def parse_message(raw: dict[str, Any]) -> MailMessage:
    """A ``messages.get`` (format=full) answer as a ``MailMessage``."""
    payload = raw.get("payload") or {}
    headers = tuple((str(h.get("name", "")), str(h.get("value", ""))) for h in payload.get("headers") or []
                    if isinstance(h, dict))
    parts = _parts(payload)
    kinds = [str(p.get("mimeType", "")).lower() for p in parts]
    calendar = "text/calendar" in kinds or any(str(p.get("filename", "")).lower().endswith(".ics") for p in parts)
    plain = [_decode((p.get("body") or {}).get("data")) for p, k in zip(parts, kinds, strict=True)
             if k == "text/plain" and not p.get("filename")]
    if not plain:
        plain = [_html_text(_decode((p.get("body") or {}).get("data"))) for p, k in zip(parts, kinds, strict=True)
                 if k == "text/html" and not p.get("filename")]
    return MailMessage(headers, "\n".join(t for t in plain if t), calendar)


class GmailMail:
    def __init__(self, base_url: str | None = None) -> None:
        self._base = (base_url or GMAIL_API).rstrip("/") + "/gmail/v1/users/me"

    async def sent(self, access_token: str, limit: int) -> list[MailMessage]:
        headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/json"}
        async with aiohttp.ClientSession(headers=headers, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as http:
            listed = await self._get(http, "/messages", {"q": "in:sent", "maxResults": str(limit)})
            ids = [str(m["id"]) for m in listed.get("messages") or [] if isinstance(m, dict) and "id" in m][:limit]
            gate = asyncio.Semaphore(AT_ONCE)

            async def one(message_id: str) -> MailMessage:
                async with gate:
                    return parse_message(await self._get(http, f"/messages/{message_id}", {"format": "full"}))

            return list(await asyncio.gather(*(one(i) for i in ids)))

    async def _get(self, http: aiohttp.ClientSession, path: str, query: dict[str, str]) -> dict[str, Any]:
        try:
            async with http.get(self._base + path, params=query) as response:
                if response.status in (401, 403):
                    log.warning("gmail_api_refused status=%s", response.status)
                    if response.status == 401:
                        raise MailAccessLost("Gmail no longer accepts Nod's access.")
                    raise MailError("Gmail refused the request (is the Gmail API enabled for the OAuth client's project?)")
                if response.status != 200:
                    log.warning("gmail_api_failed status=%s", response.status)
                    raise MailError(f"Gmail answered {response.status}")
                data = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise MailError("Gmail could not be reached") from exc
        if not isinstance(data, dict):
            raise MailError("Gmail's answer was not what its API documents")
        return data
