"""An image's bytes made into what a vision model reads: a bounded ``data:`` URL, in memory only.

Pillow reads the header first (format and size, nothing decoded), so an image past
``MAX_IMAGE_PIXELS`` is refused before any pixel is decoded — a decompression bomb costs a
header read. An image the model takes as it is (JPEG, PNG, WebP or a still GIF, at most
``MAX_IMAGE_SIDE`` a side and ``PASS_BYTES``) is sent unchanged; any other is decoded
(JPEG in draft mode, scaled while decoding) and re-encoded as a JPEG at most
``MAX_IMAGE_SIDE`` a side, in a ``BytesIO``. Nothing touches the disk.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from core.attachments.media import MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE
from core.errors import AttachmentError, AttachmentTooLarge

PASS_BYTES = 4 * 1024 * 1024  # sent unchanged up to this; a larger file is re-encoded smaller
_TAKEN = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}
JPEG_QUALITY = 85


@dataclass(frozen=True)
class SeenImage:
    """What the vision model receives: the image as a data URL, and its size as sent."""

    data_url: str
    width: int
    height: int


def prepared(data: bytes) -> SeenImage:
    """The image ready for the model; AttachmentTooLarge past the pixel bound, AttachmentError when it is no image."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                raise AttachmentTooLarge("The image has more pixels than Nod looks at.")
            kind = _TAKEN.get(image.format or "")
            animated = bool(getattr(image, "is_animated", False))
            if kind and not animated and max(width, height) <= MAX_IMAGE_SIDE and len(data) <= PASS_BYTES:
                return SeenImage(_data_url(kind, data), width, height)
            return _reencoded(image)
    except Image.DecompressionBombError as exc:  # Pillow's own bound (past 179 megapixels), met opening the header
        raise AttachmentTooLarge("The image has more pixels than Nod looks at.") from exc
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise AttachmentError("The file is not an image Nod can read.") from exc


def _reencoded(image: Image.Image) -> SeenImage:
    image.draft("RGB", (MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))  # JPEG: decoded at a fraction of its size
    image.seek(0)
    still = image.convert("RGB")
    still.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
    out = io.BytesIO()
    still.save(out, format="JPEG", quality=JPEG_QUALITY)
    return SeenImage(_data_url("image/jpeg", out.getvalue()), still.width, still.height)


def _data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"
