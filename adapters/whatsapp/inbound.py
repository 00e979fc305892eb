"""What a Twilio WhatsApp webhook means to Nod: an ``Inbound`` message, or nothing.

The sender is the WhatsApp number (``whatsapp:+351…`` → ``+351…``); MessageSid is the
external id, so Twilio's retries store one message. Media are noted and flagged as
attachments while the body (the caption) is the owner's words; a message WhatsApp marks
as forwarded is flagged as not the owner's words.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.message import Aside, Inbound
from core.owner import Identity

CHANNEL = "whatsapp"
PREFIX = "whatsapp:"
MAX_MEDIA = 10


def _media(params: Mapping[str, str]) -> list[Aside]:
    try:
        count = min(int(params.get("NumMedia", "0") or 0), MAX_MEDIA)
    except ValueError:
        count = 0
    return [Aside(f"[sent a file: {params.get(f'MediaContentType{i}', 'unknown type')}]", attachment=True)
            for i in range(count)]


def incoming_message(params: Mapping[str, str]) -> Inbound | None:
    """None when the form is not an inbound WhatsApp message (no sid, not a WhatsApp sender)."""
    sid, sender = params.get("MessageSid", ""), params.get("From", "")
    if not sid or not sender.startswith(PREFIX) or len(sender) <= len(PREFIX):
        return None
    identity = Identity(CHANNEL, sender.removeprefix(PREFIX))
    body = params.get("Body", "").strip()
    media = _media(params)
    forwarded = params.get("Forwarded", "").lower() == "true" or params.get("FrequentlyForwarded", "").lower() == "true"
    common = {"sender": identity, "external_id": sid, "display_name": params.get("ProfileName") or None}
    if not body:
        if not media:
            return None
        return Inbound(text=media[0].text, attachment=True, forwarded=forwarded, asides=tuple(media[1:]), **common)
    return Inbound(text=body, forwarded=forwarded, asides=tuple(media), **common)
