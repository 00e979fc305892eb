"""Photos and documents as values: the channel's reference, the bounds, the sentences, the port.

A message carries a reference, never the file, so the file's bytes never reach the database
or the disk. The bounds and why: docs/turn.md, "Photos and documents: references and bounds".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

MAX_IMAGE_BYTES = 10 * 1024 * 1024
MAX_IMAGE_PIXELS = 50_000_000  # a 48-megapixel phone photo fits; decoding one is bounded (draft mode)
MAX_IMAGE_SIDE = 2048  # what OpenAI's vision reads at most: a larger image is scaled down first
MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
MAX_PDF_PAGES = 100
MAX_DOCUMENT_CHARS = 60_000  # about 15,000 tokens: a 30-page report, whole
MAX_IMAGES_PER_TURN = 4

NO_VISION = "I can't see images with the model I run on, so I answered your words only."
NO_VISION_ALONE = "I can't see images with the model I run on, so please tell me in words what it shows."
IMAGE_TOO_BIG = (f"That image is too large for me: I look at images of up to {MAX_IMAGE_BYTES // (1024 * 1024)} MB "
                 f"and {MAX_IMAGE_PIXELS // 1_000_000} megapixels, so please send a smaller one.")
DOCUMENT_TOO_BIG = (f"That file is too large for me: I read documents of up to {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB "
                    f"and PDFs of up to {MAX_PDF_PAGES} pages, so please send a shorter one.")
UNSEEN = "I couldn't open that image, so please send it again as a photo."
UNREAD = "I couldn't read that document, so please send it again or paste its text."

# What the agent model is told in the turn's prompt about text that came from a file.
ATTACHMENT_TAG = "untrusted_attachment"


class MediaKind(str, Enum):
    IMAGE = "image"
    DOCUMENT = "document"


@dataclass(frozen=True)
class MediaRef:
    """Where a channel can fetch a photo or document again, and what the platform declared of it."""

    kind: MediaKind
    source: str  # the channel's own handle: a Telegram file_id, a Twilio media URL
    content_type: str | None = None
    filename: str | None = None
    size_bytes: int | None = None
    width: int | None = None
    height: int | None = None

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind.value, "source": self.source, "content_type": self.content_type,
                           "filename": self.filename, "size_bytes": self.size_bytes, "width": self.width,
                           "height": self.height})

    @classmethod
    def from_json(cls, raw: str | None) -> MediaRef | None:
        """The stored reference, or None when there is none (or it cannot be read)."""
        if not raw:
            return None
        try:
            data: Any = json.loads(raw)
            return cls(MediaKind(data["kind"]), str(data["source"]), _text(data.get("content_type")),
                       _text(data.get("filename")), _number(data.get("size_bytes")), _number(data.get("width")),
                       _number(data.get("height")))
        except (ValueError, TypeError, KeyError):
            return None

    @property
    def label(self) -> str:
        """How the conversation names it: ``[sent a photo]``, ``[sent a document: report.pdf (application/pdf, 1.2 MB)]``."""
        if self.kind is MediaKind.IMAGE:
            return f"[sent an image: {self.filename}]" if self.filename else "[sent a photo]"
        return f"[sent a document: {described_file(self.filename, self.content_type, self.size_bytes)}]"



def described_file(filename: str | None, content_type: str | None, size_bytes: int | None) -> str:
    """``report.pdf (application/pdf, 1.2 MB)``: a file named with its type and size, as far as known."""
    details = [d for d in (content_type, human_size(size_bytes)) if d]
    name = filename or "a file"
    return f"{name} ({', '.join(details)})" if details else name


def human_size(size_bytes: int | None) -> str | None:
    if size_bytes is None:
        return None
    if size_bytes < 1024:
        return f"{size_bytes} bytes"
    if size_bytes < 1024 * 1024:
        return f"{size_bytes / 1024:.0f} KB"
    return f"{size_bytes / (1024 * 1024):.1f} MB"


def max_bytes(media: MediaRef) -> int:
    return MAX_IMAGE_BYTES if media.kind is MediaKind.IMAGE else MAX_DOCUMENT_BYTES


def declared_refusal(media: MediaRef) -> str | None:
    """The sentence for a file the platform already says is past the bounds, or None to fetch it."""
    if media.size_bytes is not None and media.size_bytes > max_bytes(media):
        return IMAGE_TOO_BIG if media.kind is MediaKind.IMAGE else DOCUMENT_TOO_BIG
    if media.width is not None and media.height is not None and media.width * media.height > MAX_IMAGE_PIXELS:
        return IMAGE_TOO_BIG
    return None


def refusal(media: MediaRef, sees_images: bool, with_words: bool) -> str | None:
    """The sentence known before any download (no vision, declared too large), or None."""
    if media.kind is MediaKind.IMAGE and not sees_images:
        return NO_VISION if with_words else NO_VISION_ALONE
    return declared_refusal(media)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: object) -> int | None:
    return value if type(value) is int else None
