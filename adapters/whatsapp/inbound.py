"""What a Twilio WhatsApp webhook means to Nod: an ``Inbound`` message, or nothing.

MessageSid is the external id, so Twilio's retries store one message; the flags set here decide
what counts as the owner's own words. Details: docs/channels.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.attachments.documents import readable
from core.attachments.media import MediaKind, MediaRef
from core.message import Aside, Inbound, VoiceNote
from core.owner import Identity
from core.voice import PLACEHOLDER, upload_name

CHANNEL = "whatsapp"
PREFIX = "whatsapp:"
MAX_MEDIA = 10


def _count(params: Mapping[str, str]) -> int:
    try:
        return max(min(int(params.get("NumMedia", "0") or 0), MAX_MEDIA), 0)
    except ValueError:
        return 0


def _voice(params: Mapping[str, str]) -> tuple[int, VoiceNote] | None:
    """The first audio medium with a URL, and its place among the media."""
    for i in range(_count(params)):
        kind, url = params.get(f"MediaContentType{i}", ""), params.get(f"MediaUrl{i}", "")
        if kind.lower().startswith("audio/") and url:
            return i, VoiceNote(url, upload_name(kind), kind)
    return None


def _file(params: Mapping[str, str]) -> tuple[int, MediaRef] | None:
    """The first image or readable document with a URL, and its place among the media."""
    for i in range(_count(params)):
        kind, url = params.get(f"MediaContentType{i}", ""), params.get(f"MediaUrl{i}", "")
        if not url:
            continue
        if kind.lower().startswith("image/"):
            return i, MediaRef(MediaKind.IMAGE, url, kind)
        if readable(kind, None) or kind.lower() in ("text/vcard", "text/x-vcard"):
            return i, MediaRef(MediaKind.DOCUMENT, url, kind)
    return None


def _location(params: Mapping[str, str]) -> str | None:
    latitude, longitude = params.get("Latitude", ""), params.get("Longitude", "")
    if not latitude or not longitude:
        return None
    place = ", ".join(p for p in (params.get("Label", ""), params.get("Address", "")) if p)
    where = f"{latitude}, {longitude}"
    return f"[shared a place: {place} ({where})]" if place else f"[shared a location: {where}]"


def _media(params: Mapping[str, str], skip: int | None = None) -> list[Aside]:
    return [Aside(f"[sent a file: {params.get(f'MediaContentType{i}', 'unknown type')}]", attachment=True)
            for i in range(_count(params)) if i != skip]


def incoming_message(params: Mapping[str, str]) -> Inbound | None:
    """None when the form is not an inbound WhatsApp message (no sid, not a WhatsApp sender)."""
    sid, sender = params.get("MessageSid", ""), params.get("From", "")
    if not sid or not sender.startswith(PREFIX) or len(sender) <= len(PREFIX):
        return None
    identity = Identity(CHANNEL, sender.removeprefix(PREFIX))
    body = params.get("Body", "").strip()
    forwarded = params.get("Forwarded", "").lower() == "true" or params.get("FrequentlyForwarded", "").lower() == "true"
    common = {"sender": identity, "external_id": sid, "display_name": params.get("ProfileName") or None}
    voice = _voice(params)
    if voice is not None:  # the body first, as the owner's words; the note is the message
        place, note = voice
        asides = ([Aside(body, forwarded=forwarded)] if body else []) + _media(params, skip=place)
        return Inbound(text=PLACEHOLDER, attachment=True, forwarded=forwarded, asides=tuple(asides), voice=note,
                       **common)
    found = _file(params)
    if found is not None:  # one message: the body is its caption, the owner's words; else the label, flagged
        place, ref = found
        return Inbound(text=body or ref.label, attachment=not body, forwarded=forwarded,
                       asides=tuple(_media(params, skip=place)), media=ref, **common)
    location = _location(params)
    if location is not None and not _count(params):
        return Inbound(text=location, attachment=True, forwarded=forwarded, **common)
    media = _media(params)
    if not body:
        if not media:
            return None
        return Inbound(text=media[0].text, attachment=True, forwarded=forwarded, asides=tuple(media[1:]), **common)
    return Inbound(text=body, forwarded=forwarded, asides=tuple(media), **common)
