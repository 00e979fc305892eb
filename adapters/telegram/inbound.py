"""What a Telegram update means to Nod: an ``Inbound`` message, or nothing.

Only private chats count: an update from a group, supergroup or channel is ignored
before anything is read or stored, so memory never shows where others can read it.
Forwarded text is not the owner's words; the text of a quoted reply is stored beside the
owner's reply, flagged the same way; an attachment is noted and flagged while its
caption is the owner's words. Edited messages and other update kinds are ignored.
"""

from __future__ import annotations

from datetime import datetime

from telegram import Message, Update

from core.message import Aside, Inbound
from core.owner import Identity

CHANNEL = "telegram"
_KINDS = {
    "photo": "a photo", "document": "a file", "voice": "a voice message", "audio": "an audio file",
    "video": "a video", "video_note": "a video message", "sticker": "a sticker", "animation": "a GIF",
    "location": "a location", "contact": "a contact", "poll": "a poll", "venue": "a place",
}


def is_private(update: Update) -> bool:
    chat = update.effective_chat
    return chat is not None and chat.type == "private"


def sender_of(update: Update) -> Identity | None:
    user = update.effective_user
    return Identity(CHANNEL, str(user.id)) if user is not None and not user.is_bot else None


def _attachment(message: Message) -> str | None:
    for attribute, kind in _KINDS.items():
        value = getattr(message, attribute, None)
        if value:
            name = getattr(value, "file_name", None)
            return f"[sent {kind}{': ' + name if name else ''}]"
    return None


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


def incoming_message(update: Update, sender: Identity) -> Inbound | None:
    message = update.message
    if message is None:
        return None
    words = _text(message.text) or _text(message.caption)
    asides: list[Aside] = []
    quoted = _quoted(message)
    if quoted is not None:
        asides.append(quoted)
    attachment = _attachment(message)
    name = update.effective_user.first_name if update.effective_user else None
    # Telegram's own date: an update delivered late after an outage keeps the time it was sent
    common = {"sender": sender, "external_id": str(update.update_id), "display_name": name, "sent_at": _date(message)}
    if message.forward_origin is not None:
        return Inbound(text=words or attachment or "[forwarded message]", forwarded=True,
                        attachment=attachment is not None and not words, asides=tuple(asides), **common)
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
