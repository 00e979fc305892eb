"""What a Telegram update means to Nod: an ``Inbound`` message, or nothing.

Only private chats count, and every flag (forwarded, quoted, attachment, voice) is set here,
because what is the owner's own words decides what may be saved. Details: docs/channels.md.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta

from telegram import Message, Update
from telegram.warnings import PTBDeprecationWarning

from core.attachments.documents import readable
from core.attachments.media import MediaKind, MediaRef, described_file
from core.message import Aside, Inbound, VoiceNote
from core.owner import Identity
from core.voice import upload_name

CHANNEL = "telegram"
_KINDS = {
    "photo": "a photo", "document": "a file", "voice": "a voice message", "audio": "an audio file",
    "video": "a video", "video_note": "a video message", "sticker": "a sticker", "animation": "a GIF",
    "location": "a location", "contact": "a contact", "poll": "a poll", "venue": "a place",
}


def is_private(update: Update) -> bool:
    chat = update.effective_chat
    return chat is not None and chat.type == "private"


def addressed_in_group(update: Update, bot_id: int, username: str | None) -> bool:
    """A group message meant for Nod: a command, a mention, a reply to Nod, or Nod added to the group."""
    message = update.message
    if message is None or message.chat.type not in ("group", "supergroup"):
        return False
    if any(member.id == bot_id for member in message.new_chat_members or ()):
        return True
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and replied.from_user.id == bot_id:
        return True
    words = _text(message.text) or _text(message.caption)
    return words.startswith("/") or bool(username and f"@{username}".lower() in words.lower())


def sender_of(update: Update) -> Identity | None:
    user = update.effective_user
    return Identity(CHANNEL, str(user.id)) if user is not None and not user.is_bot else None


def _attachment(message: Message) -> str | None:
    """The label of what the message carries besides words: a file named with its type and size, a
    location, place or contact as a short text the turn can read."""
    if message.venue is not None:
        venue = message.venue
        return f"[shared a place: {venue.title}, {venue.address} ({venue.location.latitude:.5f}, {venue.location.longitude:.5f})]"
    if message.location is not None:
        return f"[shared a location: {message.location.latitude:.5f}, {message.location.longitude:.5f}]"
    if message.contact is not None:
        contact = message.contact
        name = " ".join(n for n in (contact.first_name, contact.last_name) if n)
        return f"[shared a contact: {name}, {contact.phone_number}]"
    for attribute, kind in _KINDS.items():
        value = getattr(message, attribute, None)
        if value:
            if attribute == "document":
                return f"[sent a file: {described_file(value.file_name, value.mime_type, value.file_size)}]"
            name = getattr(value, "file_name", None)
            return f"[sent {kind}{': ' + name if name else ''}]"
    return None


def _media(message: Message) -> MediaRef | None:
    """The photo, image file or readable document to show the turn, by its file_id, if the message is one."""
    if message.photo:
        largest = max(message.photo, key=lambda size: size.width * size.height)
        return MediaRef(MediaKind.IMAGE, largest.file_id, "image/jpeg", None, largest.file_size, largest.width,
                        largest.height)
    document = message.document
    if document is None:
        return None
    mime = document.mime_type or ""
    if mime.lower().startswith("image/"):
        return MediaRef(MediaKind.IMAGE, document.file_id, mime, document.file_name, document.file_size)
    if readable(mime, document.file_name):
        return MediaRef(MediaKind.DOCUMENT, document.file_id, mime or None, document.file_name, document.file_size)
    return None


def platform_id(message: Message) -> str:
    """The chat and message id: what an edit of the message names."""
    return f"{message.chat.id}:{message.message_id}"


def _voice(message: Message) -> VoiceNote | None:
    """The voice message or audio file to transcribe, if the message is one."""
    value = message.voice or message.audio
    file_id = getattr(value, "file_id", None)
    if value is None or not isinstance(file_id, str) or not file_id:
        return None
    with warnings.catch_warnings():  # python-telegram-bot 22 warns that the int form is going away
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        size, duration = getattr(value, "file_size", None), getattr(value, "duration", None)
    seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
    mime = getattr(value, "mime_type", None)
    return VoiceNote(file_id, upload_name(mime if isinstance(mime, str) else "audio/ogg", getattr(value, "file_name", None)),
                     mime if isinstance(mime, str) else None, size if type(size) is int else None,
                     int(seconds) if isinstance(seconds, int | float) else None)


def _quoted(message: Message) -> Aside | None:
    if message.quote is not None and _text(message.quote.text):
        return Aside(f"[quoted] {message.quote.text}", forwarded=True)
    replied = message.reply_to_message
    text = (_text(replied.text) or _text(replied.caption)) if replied is not None else None
    return Aside(f"[replying to] {text}", forwarded=True) if text else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""  # the library does not check a field's type


def _date(message: Message) -> datetime | None:
    """Telegram's date, when it is one a database can hold; otherwise the arrival time is used."""
    sent = message.date
    if not isinstance(sent, datetime) or not 1900 <= sent.year < 2200:
        return None
    return sent


def edited_message(update: Update, sender: Identity) -> Inbound | None:
    """New words for a message already sent (``edited_message``), or None when it has none."""
    message = update.edited_message
    if message is None:
        return None
    words = _text(message.text) or _text(message.caption)
    if not words.strip():
        return None
    return Inbound(sender, words, str(update.update_id), platform_id=platform_id(message), edited=True)


def incoming_message(update: Update, sender: Identity) -> Inbound | None:
    message = update.message
    if message is None:
        return None
    words = _text(message.text) or _text(message.caption)
    asides: list[Aside] = []
    quoted = _quoted(message)
    if quoted is not None:
        asides.append(quoted)
    media = _media(message)
    attachment = media.label if media is not None else _attachment(message)
    name = update.effective_user.first_name if update.effective_user else None
    # Telegram's own date: an update delivered late after an outage keeps the time it was sent
    common = {"sender": sender, "external_id": str(update.update_id), "display_name": name, "sent_at": _date(message),
              "platform_id": platform_id(message)}
    voice = _voice(message) if attachment is not None else None
    if message.forward_origin is not None:
        return Inbound(text=words or attachment or "[forwarded message]", forwarded=True,
                        attachment=attachment is not None and not words, asides=tuple(asides),
                        voice=None if words else voice, media=media, **common)
    if media is not None:  # one message: the caption is its text, the owner's words; else the label, flagged
        return Inbound(text=words or media.label, attachment=not words, asides=tuple(asides), media=media, **common)
    if voice is not None and attachment is not None:  # the caption first, then the note to transcribe
        if words:
            asides.append(Aside(words))
        return Inbound(text=attachment, attachment=True, asides=tuple(asides), voice=voice, **common)
    if attachment is not None and words:
        asides.append(Aside(attachment, attachment=True))
    if not words:
        if attachment is None:
            return None
        return Inbound(text=attachment, attachment=True, asides=tuple(asides), **common)
    return Inbound(text=words, asides=tuple(asides), **common)


def tapped_choice(update: Update) -> str | None:
    """The label of the inline button the owner tapped (Nod's own wording), if readable."""
    query = update.callback_query
    if query is None or not isinstance(query.message, Message) or query.message.reply_markup is None:
        return None
    for row in query.message.reply_markup.inline_keyboard:
        for button in row:
            if button.callback_data == query.data:
                return button.text
    return None
